"""The pygls server: the wire (stdio, TCP), readiness, the initial scan and settings.

The workspace state lives in an `AnalysisHost`, changed on the event loop's thread only; the initial read of a
workspace root runs in a worker thread on an `Analysis` of its own that the host installs when complete.
Requests wait (bounded) for the root they ask about (`OscovaServer.ready`). The handlers are registered in
`handlers.py`, diagnostics go out through `publisher.py`, the open documents' texts are kept by
`documents.py`; the protocol's lifecycle rules and every other override of pygls are in `protocol.py`.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import time
import uuid
from typing import Any, BinaryIO, cast

from lsprotocol import types as lsp
from oscova_runtime.framing import CHUNK as READ_CHUNK
from oscova_runtime.framing import Dropped, Framer, FramingError, Message
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..analysis.diagnostics import Diagnostic
from ..analysis.engine import Analysis
from ..analysis.host import AnalysisHost
from ..analysis.stored_results import StoredResults
from .capabilities import CODE_GLOBS, SERVER_NAME, WATCHED_GLOBS
from .convert import CONVERTER
from .documents import OpenDocuments
from .protocol import OscovaProtocol
from .publisher import DiagnosticsPublisher
from .runs import Runs
from .settings import Settings
from .transport import FdReader, pump

logger = logging.getLogger(__name__)

READY_TIMEOUT = 10.0
"""Seconds a request waits for the root it asks about to be read; past that it is refused (`ready`)."""
READY_TIMEOUT_ENV = "OSCOVA_LSP_TEST_READY_TIMEOUT"
"""Test only: replaces `READY_TIMEOUT` (tests/server/test_startup_race.py). Unset in real use."""


def ready_timeout() -> float:
    try:
        return float(os.environ.get(READY_TIMEOUT_ENV) or READY_TIMEOUT)
    except ValueError:
        return READY_TIMEOUT


class OscovaServer(LanguageServer):
    """The protocol side of the server: the wire, the lifecycle, readiness and the initial scan. The workspace
    state lives in `host` (an `AnalysisHost`); diagnostics go out through `publisher`; the handlers that
    answer requests are registered in `handlers.create_server`."""

    def __init__(self) -> None:
        # One lsprotocol converter for pygls and `convert` (building one costs tens of milliseconds at start).
        super().__init__(SERVER_NAME, __version__, protocol_cls=OscovaProtocol, converter_factory=lambda: CONVERTER,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.settings = Settings()
        self._warned: set[str] = set()
        """The problems of the settings already shown (each is shown once a session)."""
        self.client_pid: int | None = None
        self.initial_options: Any = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._root_events: dict[str, asyncio.Event] = {}
        self._collector_pauses = 0
        """Root loads running: the cyclic collector is paused while any runs (`_load_roots`)."""
        self.publisher = DiagnosticsPublisher(self, lambda: self.host, self.spawn, self.caps)
        self.host = AnalysisHost(on_change=self.publisher.invalidate)
        self.checked = asyncio.Event()
        """Set once the initial scan of every root has ended."""
        self.check_seconds: float | None = None
        self.runs = Runs(self)
        self.documents = OpenDocuments(lambda: self.workspace)
        """The open documents' texts (`didOpen`, `didChange`, `didClose` applied)."""
        self._first: dict[str, Analysis] = {}
        """By root being read: what was read for its open documents first (`look_first`), for the whole
        reading to reuse."""
        self._first_texts: dict[str, str] = {}
        """The open documents whose final diagnostics went out before their root was read, with their text."""
        self._first_locks: dict[str, asyncio.Lock] = {}

    # ------------------------------------------------------------------------------------ the wire

    def serve_stdio(self, framer: Framer, read: list[Message | Dropped], fd: int, out: BinaryIO) -> int:
        """Serves over a pipe until `exit` (its code) or the end of input (0); `read` holds the messages
        already read (in order: `early.EarlyPhaseResult`), `framer` the bytes read after them."""
        from pygls.io_ import StdoutWriter

        protocol = cast(OscovaProtocol, self.protocol)
        protocol.set_writer(StdoutWriter(out))

        async def main() -> None:
            for item in read:
                protocol.receive(item)
            await pump(framer, FdReader(fd, asyncio.get_running_loop()).read, protocol.receive)

        return self._run(main())

    def serve_tcp(self, host: str, port: int) -> int:
        """Serves one client over TCP: a second connection is closed at once (it would take over the writer),
        and so is a connection whose bytes are not LSP framing (a web page's `fetch` to localhost)."""
        protocol = cast(OscovaProtocol, self.protocol)

        async def main() -> None:
            finished = asyncio.Event()
            owner: object | None = None  # the connection that spoke LSP first: the client, for good

            async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                nonlocal owner
                peer = writer.get_extra_info("peername")
                if owner is not None:
                    logger.warning("refused a connection from %s: the server already has a client", peer)
                    writer.close()
                    return
                me = object()

                def receive(item: Message | Dropped) -> None:
                    nonlocal owner
                    if owner is None:
                        owner = me
                        protocol.set_writer(writer)  # type: ignore[arg-type]
                    elif owner is not me:
                        raise FramingError("the server already has a client")
                    protocol.receive(item)

                try:
                    await pump(Framer(strict=True), lambda: reader.read(READ_CHUNK), receive)
                except FramingError as error:
                    logger.warning("closed the connection from %s: %s", peer, error)
                finally:
                    writer.close()
                    if owner is me:  # the client is gone: so is the server
                        finished.set()

            listener = await asyncio.start_server(connection, host, port)
            logger.info("listening on %s:%s", host, port)
            async with listener:
                await finished.wait()

        return self._run(main())

    def _run(self, main: Any) -> int:
        code: Any = 0
        try:
            asyncio.run(main)
        except SystemExit as exit_:  # `exit`: 0 after `shutdown`, 1 otherwise
            code = exit_.code
        except BrokenPipeError:
            logger.error("the client closed the connection; exiting")
        except KeyboardInterrupt:
            code = 130
        finally:
            self.shutdown()
        return code if isinstance(code, int) else 1

    # ------------------------------------------------------------------------------------ utilities

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("background task failed", exc_info=task.exception())

    def cancel_tasks(self) -> None:
        for task in list(self._tasks):
            task.cancel()

    def send_json(self, message: dict[str, Any]) -> None:
        """A message that is JSON already (a publication): written as it is."""
        cast(OscovaProtocol, self.protocol).send_json(message)

    def caps(self, *path: str) -> Any:
        current: Any = self.client_capabilities
        for part in path:
            current = getattr(current, part, None)
            if current is None:
                return None
        return current

    def reset_host(self, folders: list[str], lint: Any) -> None:
        """A host over the editor's folders (at `initialize`, before any document or root)."""
        self.host = AnalysisHost(folders, lint, on_change=self.publisher.invalidate)
        self._root_events.clear()

    # ------------------------------------------------------------------------------------- readiness

    def root_ready(self, root: str) -> asyncio.Event:
        """Set once the workspace root `root` is read; reading it starts here when nothing started it yet."""
        event = self._root_events.get(root)
        if event is None:
            event = self._root_events[root] = asyncio.Event()
            if self.host.is_loaded(root):
                event.set()
            else:
                self.host.ensure_root(root)
                self.spawn(self._load_roots([root]))
        return event

    def is_ready(self, root: str) -> bool:
        return self.root_ready(root).is_set()

    async def ready(self, root: str) -> bool:
        """Waits until the workspace root `root` is read, at most `READY_TIMEOUT` seconds. False past the
        bound: the caller refuses the request (`not_ready`) rather than answer from a partial index."""
        event = self.root_ready(root)
        if event.is_set():
            return True
        try:
            async with asyncio.timeout(ready_timeout()):
                await event.wait()
        except TimeoutError:
            return False
        return True

    def not_ready(self, root: str) -> str:
        """Why a request about a file of `root` is refused while the root is read."""
        logger.info("a request came while %s was still being read; refused", root)
        return (f"The workspace {root} is still being read ({ready_timeout():.0f} s so far), so this answer would "
                "be incomplete; ask again in a moment.")

    # ------------------------------------------------------------------------------ workspace check

    async def check_workspace(self) -> None:
        """The initial scan: every root under the editor's folders, the roots of open documents first (a root
        an open document asked for may be loading already: the scan's progress waits for it too)."""
        started = time.perf_counter()
        token = await self._begin_progress("Checking agents and templates")
        files = 0
        try:
            roots = await asyncio.get_running_loop().run_in_executor(None, self.host.discover_roots)
            opened = {self.host.root_of(path) for path in self.host.snapshot().documents}
            fresh = sorted((root for root in roots if root not in self._root_events), key=lambda r: r not in opened)
            for root in fresh:
                self.host.ensure_root(root)
                self._root_events[root] = asyncio.Event()
            await self._load_roots(fresh, token)
            for root in roots:
                await self._root_events[root].wait()
            snapshot = self.host.snapshot()
            files = sum(len(snapshot.analyses[root].workspace.files) for root in roots if root in snapshot.analyses)
            del snapshot
        finally:
            if token:
                self._progress(token, lsp.WorkDoneProgressEnd(message=f"{files} files checked"))
                self.work_done_progress.tokens.pop(token, None)
        self.check_seconds = time.perf_counter() - started
        self.checked.set()

    def adopt_first(self, first: dict[str, Analysis], texts: dict[str, str]) -> None:
        """What the phase before pygls read and published for open documents (`early.EarlyPhaseResult`)."""
        self._first.update(first)
        self._first_texts.update(texts)

    def loading(self, root: str) -> bool:
        """Whether `root` is being read (asked for, not installed yet)."""
        return root in self._root_events and not self.host.is_loaded(root)

    async def look_first(self, root: str) -> None:
        """While `root` is read: the diagnostics of its open documents from what they depend on
        (`AnalysisHost.load_first`, in a worker thread), published at once. They are final: the publication of
        the whole root sends the same. A document edited meanwhile waits for the root (its edit is newer)."""
        if self.publisher.pull:
            return
        async with self._first_locks.setdefault(root, asyncio.Lock()):
            snapshot = self.host.snapshot()
            documents = {path: document.text for path, document in snapshot.documents.items()
                         if snapshot.root_of(path) == root and self.host.is_tracked(path)}
            del snapshot
            wanted = [path for path, text in documents.items() if self._first_texts.get(path) != text]
            if not wanted or self.host.is_loaded(root):
                return
            try:
                analysis, found = await asyncio.get_running_loop().run_in_executor(
                    None, self.host.load_first, root, wanted, documents, self._first.get(root))
            except Exception:  # only a head start: the whole root is read anyway
                logger.exception("reading what the open documents of %s need failed", root)
                return
            if self.host.is_loaded(root):  # its own publication is out (or on its way)
                return
            self._first[root] = analysis
            snapshot = self.host.snapshot()
            for path, diagnostics in found.items():
                document = snapshot.documents.get(path)
                if document is not None and document.text == documents[path]:
                    self._first_texts[path] = document.text
                    self.publisher.publish_first(path, diagnostics, document.version)

    async def _load_roots(self, roots: list[str], token: str | None = None) -> None:
        """Reads each root in a worker thread, installs it (requests waiting for it go on at once), then
        publishes its diagnostics. The cyclic collector is paused meanwhile: reading and checking build a
        large graph of objects with few cycles, which it would walk again and again (about half the time
        of a start on a warm cache); it collects once at the end and then leaves the workspace alone."""
        self._collector_pauses += 1
        gc.disable()
        try:
            await self._load_and_publish(roots, token)
        finally:
            self._collector_pauses -= 1
            if not self._collector_pauses:
                # The parsed workspace lives as long as the server: keep the collector from walking it again
                # and again (full collections of a 2,000-file workspace cost 100 ms and more).
                gc.collect()
                gc.freeze()
                gc.enable()

    async def _load_and_publish(self, roots: list[str], token: str | None) -> None:
        """For each root: the stored results of its last check published at once when they hold for its files
        on disk (`_publish_stored`), then the root read and installed; then every file's diagnostics published
        (those the stored results or a check of the freshly read files already hold are not computed again).
        A root read without stored results records the disk questions its checks ask while they are
        published, and its results are stored for the next start (`_store_results`)."""
        loop = asyncio.get_running_loop()
        installed: set[str] = set()
        primed: dict[str, list[Diagnostic]] = {}
        recording: list[tuple[Analysis, int]] = []
        stored_of = {root: await self._publish_stored(root) for root in roots}  # every root's, before any is read
        for root in roots:
            if token:
                self._progress(token, lsp.WorkDoneProgressReport(message=f"reading {os.path.basename(root)}"))
            stored = stored_of[root]
            if stored is None:
                await self.look_first(root)
            try:
                analysis = await loop.run_in_executor(None, self.host.load, root, self._first.pop(root, None))
            except Exception:  # keep serving what the editor opened rather than waiting forever
                logger.exception("loading %s failed", root)
                self.window_log_message(lsp.LogMessageParams(
                    type=lsp.MessageType.Error, message=f"oscova: could not read the workspace {root}"))
                files = self.host.mark_loaded(root)
                notices: list[str] = []
            else:
                as_read = not self.host.overlays(root, analysis)
                record = as_read and stored is None and not self.publisher.pull
                if as_read and stored is not None:
                    primed.update(stored.diagnostics)
                if record:
                    analysis.workspace.probes = {}
                files = self.host.install(root, analysis)
                if record:
                    recording.append((analysis, analysis.workspace.generation))
                notices = analysis.workspace.notices
            self.publisher.forget(files)
            self._root_events.setdefault(root, asyncio.Event()).set()
            installed |= files
            for notice in notices:
                self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Info, message=notice))

        def report(done: int, total: int) -> None:
            if token is not None:
                self._progress(token, lsp.WorkDoneProgressReport(
                    message=f"{done}/{total} files", percentage=min(100, int(100 * done / max(total, 1)))))

        for root in roots:
            self._first.pop(root, None)  # one read while the root was (a document opened meanwhile)
        await self.publisher.installed(installed, report, primed)
        for analysis, generation in recording:
            await self._store_results(analysis, generation)

    async def _publish_stored(self, root: str) -> StoredResults | None:
        """Publishes the stored results of `root`'s last whole check (`oscova-lsp check`'s or a previous
        start's) when they hold for its files on disk and no open document differs from its file: a warm
        start shows the workspace's findings before the root is parsed. Returns them, or None."""
        if self.publisher.pull:
            return None
        try:
            found = await asyncio.get_running_loop().run_in_executor(None, self.host.stored_results, root)
        except Exception:  # only a head start: the root is read and checked anyway
            logger.exception("reading the stored results of %s failed", root)
            return None
        if found is None or self.host.overlays(root, None, found[1]):
            return None
        self.publisher.publish_stored(found[0].diagnostics)
        return found[0]

    async def _store_results(self, analysis: Analysis, generation: int) -> None:
        """Stores the diagnostics just published for a freshly read root as its results, with the disk
        questions their checks asked, unless anything changed since it was installed."""
        probes, analysis.workspace.probes = analysis.workspace.probes, None
        snapshot = self.host.snapshot()
        if probes is None or snapshot.analyses.get(analysis.root) is not analysis or \
                analysis.workspace.generation != generation:
            return
        found = {path: self.publisher.diagnostics(path, snapshot) for path in analysis.workspace.files}
        del snapshot
        try:
            await asyncio.get_running_loop().run_in_executor(None, analysis.save_results, found, probes)
        except Exception:  # only a cache
            logger.exception("storing the results of %s failed", analysis.root)

    async def _begin_progress(self, title: str) -> str | None:
        if not self.caps("window", "work_done_progress"):
            return None
        token = f"oscova-check-{uuid.uuid4().hex[:8]}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), 5)
        except Exception:
            logger.info("the client did not create a progress token")
            return None
        self.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(title=title, percentage=0, cancellable=False))
        return token

    def _progress(self, token: str, value: Any) -> None:
        try:
            if isinstance(value, lsp.WorkDoneProgressEnd):
                self.work_done_progress.end(token, value)
            else:
                self.work_done_progress.report(token, value)
        except Exception:
            logger.debug("progress %s dropped", token)

    # ------------------------------------------------------------------------------------- settings

    async def load_settings(self, pushed: Any = None) -> None:
        value = pushed
        if value is None and self.caps("workspace", "configuration"):
            try:
                result = await asyncio.wait_for(self.workspace_configuration_async(
                    lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="oscova")])), 5)
                value = result[0] if result else None
            except Exception:
                logger.info("workspace/configuration failed; keeping the current settings")
                return
        if value is None:
            value = self.initial_options
        settings = Settings.parse(value)
        self.warn_settings(settings.problems)
        if settings == self.settings:
            return
        lint_changed = settings.lint_options() != self.settings.lint_options()
        self.settings = settings
        self.publisher.debounce = settings.debounce
        self.host.set_lint(settings.lint_options())
        if lint_changed:
            await self.publisher.recheck_everything()

    def warn_settings(self, problems: tuple[str, ...]) -> None:
        """What is wrong with the client's settings, as a `window/showMessage` warning: a setting left out or
        at its default is never silent. Each problem once a session."""
        fresh = [problem for problem in dict.fromkeys(problems) if problem not in self._warned]
        if not fresh:
            return
        self._warned.update(fresh)
        self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                       message="Oscova: " + "; ".join(fresh) + "."))

    async def register_watchers(self) -> None:
        if not self.caps("workspace", "did_change_watched_files", "dynamic_registration"):
            return
        options = lsp.DidChangeWatchedFilesRegistrationOptions(
            watchers=[lsp.FileSystemWatcher(glob_pattern=g) for g in [*WATCHED_GLOBS, *CODE_GLOBS]])
        registration = lsp.Registration(id="oscova-watched-files", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                        register_options=options)
        try:
            await asyncio.wait_for(self.client_register_capability_async(
                lsp.RegistrationParams(registrations=[registration])), 10)
        except Exception:
            logger.info("the client refused the file watcher registration")

    async def watch_client(self, pid: int) -> None:
        while True:
            await asyncio.sleep(3)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                logger.info("the client process %s is gone; exiting", pid)
                os._exit(0)
            except PermissionError:
                pass
