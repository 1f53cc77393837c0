"""The pygls server: document sync, background check, debounced diagnostics (pushed or pulled), settings,
watched files, and the editing features of `oscova_lsp.ide` behind LSP handlers.

All state lives on the event loop's thread; only the initial load of a workspace root runs in a worker
thread, on an `Analysis` of its own that is swapped in when complete.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import hashlib
import inspect
import logging
import os
import time
import uuid
from collections.abc import Iterable
from typing import Any, BinaryIO, cast

from lsprotocol import types as lsp
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from .. import __version__
from ..analysis.diagnostics import Diagnostic
from ..analysis.files import MAX_FILE_BYTES, DefinitionFile, ParsedFile
from ..analysis.workspace import Workspace
from ..ide import actions, completion, hints, hover, navigation, symbols
from ..ide.model import RenameError
from . import convert
from .capabilities import COMMANDS, COMPLETION_TRIGGERS, DIAGNOSTIC_IDENTIFIER, SERVER_NAME, WATCHED_GLOBS
from .runs import Runs, code_lenses, command_handlers, workspace_trusted
from .session import LargeText, Session
from .settings import Settings
from .transport import CHUNK as READ_CHUNK
from .transport import Dropped, FdReader, Framer, FramingError, Message, pump

logger = logging.getLogger(__name__)

CHUNK = 100
"""Files checked between two yields to the event loop in a whole-workspace check."""


class _BadRequest:
    """A request whose params do not deserialize: answered with InvalidParams instead of never."""

    def __init__(self, msg_id: Any, method: str, error: Exception) -> None:
        self.id = msg_id
        self.method = method
        self.error = error


class OscovaProtocol(LanguageServerProtocol):
    suppressed_response: Any = None
    """The id of an `initialize` that `launch` already answered: pygls's own answer is dropped."""
    initialize_seen = False

    def receive(self, item: Message | Dropped) -> None:
        """One item off the wire (`transport.pump`): a dropped frame is logged (a body that is not JSON gets
        JSON-RPC's parse error), anything but a JSON-RPC 2.0 object gets InvalidRequest."""
        if isinstance(item, Dropped):
            logger.warning("bad message from the client: %s", item.reason)
            if item.not_json:
                self._send_error(None, -32700, f"Parse error: {item.reason}")
            return
        value = item.value
        if not isinstance(value, dict) or value.get("jsonrpc") != "2.0" or \
                not isinstance(value.get("method", ""), str):
            logger.warning("bad message from the client: not a JSON-RPC 2.0 message; dropped it")
            msg_id = value.get("id") if isinstance(value, dict) else None
            self._send_error(msg_id if isinstance(msg_id, (int, str)) else None, -32600,
                             "Invalid Request: not a JSON-RPC 2.0 message")
            return
        try:
            message = self.structure_message(value)
        except Exception as error:  # a notification or response whose params do not deserialize
            logger.warning("bad message from the client: %s; dropped it", error or type(error).__name__)
            return
        try:
            self.handle_message(message)
        except Exception:
            logger.exception("handling %s failed", value.get("method") or "a response")

    def _send_error(self, msg_id: int | str | None, code: int, text: str) -> None:
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": text}})

    def _execute_handler(self, msg_id: Any, handler: Any, callback: Any, args: Any = None,
                         kwargs: Any = None) -> None:
        # pygls 2.1.1 files the Future of every notification handler (and of every handler a generator
        # handler delegates to) in `_request_futures` under a fresh uuid and never removes it: about 2 KB
        # per notification. Each handler's entry goes when it is done (docs/upstream/pygls-request-futures.md).
        def done(future: Any) -> None:
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            callback(future)

        super()._execute_handler(msg_id, handler, done, args, kwargs)

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        if self.suppressed_response is not None and msg_id == self.suppressed_response:
            self.suppressed_response = None
            return
        super()._send_response(msg_id, result, error)

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                return _BadRequest(data["id"], str(data["method"]), exc)
            raise

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _BadRequest):
            error = JsonRpcInvalidParams(f"invalid params for {message.method}")
            self._send_response(message.id, error=error.to_response_error())
            return
        method = getattr(message, "method", None)
        if method is not None and hasattr(message, "id"):  # a request: the lifecycle the spec sets
            refusal: JsonRpcException | None = None
            if self._shutdown and method != lsp.EXIT:
                refusal = JsonRpcInvalidRequest(f"{method} after shutdown: the server only accepts exit now")
            elif method == lsp.INITIALIZE and self.initialize_seen:
                refusal = JsonRpcInvalidRequest("the server is already initialized (initialize is sent once)")
            elif method != lsp.INITIALIZE and not self.initialize_seen:
                refusal = JsonRpcServerNotInitialized(f"{method} before initialize")
            if refusal is not None:
                self._send_response(message.id, error=refusal.to_response_error())
                return
            self.initialize_seen = True
        super().handle_message(message)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        # pygls answers `$/cancelRequest` but leaves a command's coroutine running: a run is cancelled here,
        # and its result (status `cancelled`) answers the request.
        runs = getattr(self._server, "runs", None)
        if isinstance(runs, Runs) and runs.cancel_request(msg_id):
            return
        super()._handle_cancel_notification(msg_id)

    @lsp_method(lsp.WORKSPACE_EXECUTE_COMMAND)
    async def lsp_workspace__execute_command(self, params: lsp.ExecuteCommandParams) -> Any:  # type: ignore[override]
        """Every command gets the whole `ExecuteCommandParams` (its argument object, its `workDoneToken`), and
        runs as the request's own task, so the request's id is the task's."""
        handler = self.fm.commands.get(params.command)
        if handler is None:
            raise JsonRpcInvalidParams(f"unknown command {params.command!r}; the server offers {', '.join(COMMANDS)}")
        try:
            result = handler(params)
            if inspect.isawaitable(result):
                result = await result
        except JsonRpcException:
            raise
        except Exception as error:  # a bug: an error for this request, in a line, without pygls' traceback
            logger.exception("%s failed", params.command)
            raise JsonRpcInternalError(f"{params.command} failed: {type(error).__name__}: {error}") from None
        return result

    # Open documents too large to analyse live in `LargeText`, not in pygls's workspace, whose documents
    # re-join and re-split the whole text on every incremental edit.

    @lsp_method(lsp.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: lsp.DidOpenTextDocumentParams) -> Any:  # type: ignore[override]
        document = params.text_document
        large = cast(OscovaServer, self._server).large
        if len(document.text) > MAX_FILE_BYTES:
            large[document.uri] = LargeText(document.text, document.language_id)
            self.workspace.remove_text_document(document.uri)
        else:
            large.pop(document.uri, None)
            self.workspace.put_text_document(document)
        if (user_handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield user_handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams) -> Any:  # type: ignore[override]
        uri = params.text_document.uri
        large = cast(OscovaServer, self._server).large
        text = large.get(uri)
        if text is None:
            for change in params.content_changes:
                self.workspace.update_text_document(params.text_document, change)
            document = self.workspace.get_text_document(uri)
            if len(document.source) > MAX_FILE_BYTES:  # grew too large: its text moves (once)
                large[uri] = LargeText(document.source, document.language_id or "")
                self.workspace.remove_text_document(uri)
        else:
            for change in params.content_changes:
                if isinstance(change, lsp.TextDocumentContentChangePartial):
                    text.replace((change.range.start.line, change.range.start.character),
                                 (change.range.end.line, change.range.end.character), change.text)
                else:
                    text.replace(None, None, change.text)
            if len(text) <= MAX_FILE_BYTES:  # small enough again: back to pygls's document
                del large[uri]
                self.workspace.put_text_document(lsp.TextDocumentItem(
                    uri=uri, language_id=text.language_id, version=params.text_document.version, text=text.text()))
        if (user_handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: lsp.DidCloseTextDocumentParams) -> Any:  # type: ignore[override]
        cast(OscovaServer, self._server).large.pop(params.text_document.uri, None)
        self.workspace.remove_text_document(params.text_document.uri)
        if (user_handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield user_handler, (params,), None

    @lsp_method(lsp.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Any:  # type: ignore[override]
        # pygls's own, over a copy: cancelling a handler now removes its entry (`_execute_handler`).
        if (user_handler := self.fm.features.get(lsp.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams):  # type: ignore[override]
        # The engine counts columns in UTF-16 code units; pin the encoding whatever the client offers.
        general = params.capabilities.general
        if general is not None and general.position_encodings:
            general.position_encodings = [lsp.PositionEncodingKind.Utf16]
        return (yield from super().lsp_initialize(params))


class OscovaServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(SERVER_NAME, __version__, protocol_cls=OscovaProtocol,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.session = Session([])
        self.settings = Settings()
        self.pull = False
        self.client_pid: int | None = None
        self._initial_options: Any = None
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._pending: dict[str, tuple[str, int | None]] = {}
        self._to_publish: set[str] = set()
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._cache: dict[str, list[Diagnostic]] = {}
        self._root_events: dict[str, asyncio.Event] = {}
        self._change: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.checked = asyncio.Event()
        self.check_seconds: float | None = None
        self.runs = Runs(self)
        self.large: dict[str, LargeText] = {}
        """Open documents over the analysis limit, by URI (see `OscovaProtocol`)."""
        self._skipped_noticed: set[str] = set()

    # ------------------------------------------------------------------------------------ the wire

    def serve_stdio(self, framer: Framer, first: Message | None, fd: int, out: BinaryIO) -> int:
        """Serves over a pipe until `exit` (its code) or the end of input (0); `framer` may hold bytes
        already read, and `first` the message they began with."""
        from pygls.io_ import StdoutWriter

        protocol = cast(OscovaProtocol, self.protocol)
        protocol.set_writer(StdoutWriter(out))

        async def main() -> None:
            if first is not None:
                protocol.receive(first)
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

    def caps(self, *path: str) -> Any:
        current: Any = self.client_capabilities
        for part in path:
            current = getattr(current, part, None)
            if current is None:
                return None
        return current

    def version_of(self, path: str) -> int | None:
        return self.session.analysed_version.get(path) if path in self.session.open else None

    # ------------------------------------------------------------------------------------- analysis

    def lookup(self, document_uri: str) -> tuple[Workspace, ParsedFile, str] | None:
        """The parsed file of a document, with pending edits applied first; None for unknown documents."""
        path = convert.path_of(document_uri)
        if path is None:
            return None
        self.flush(path)
        found = self.session.parsed(path)
        if found is None:
            return None
        analysis, parsed = found
        return analysis.workspace, parsed, path

    def flush(self, path: str) -> None:
        pending = self._pending.pop(path, None)
        if pending is None:
            return
        affected = self.session.apply_open(path, pending[0], pending[1])
        self._invalidate(affected | {path})
        self.notice_skipped(path)

    def notice_skipped(self, path: str) -> None:
        """The notice SPEC §9 promises, once per open document, when the analysis skips it (too large)."""
        found = self.session.parsed(path)
        skipped = found[1].skipped if found is not None else None
        if not skipped:
            self._skipped_noticed.discard(path)
        elif path not in self._skipped_noticed:
            self._skipped_noticed.add(path)
            self.window_show_message(lsp.ShowMessageParams(
                type=lsp.MessageType.Warning,
                message=f"oscova: {os.path.basename(path)} is not checked: {skipped}. Diagnostics and editor "
                        "features for it come back once it is under the limit."))

    def _invalidate(self, paths: Iterable[str]) -> None:
        for path in paths:
            self._cache.pop(path, None)
            self._to_publish.add(path)
        if self._change is not None and not self._change.done():
            self._change.set_result(None)
        self._change = None

    def diagnostics(self, path: str) -> list[Diagnostic]:
        found = self._cache.get(path)
        if found is None:
            try:
                found = self.session.diagnostics(path)
            except Exception:  # a bug in one check must not take the file's other diagnostics down
                logger.exception("checking %s failed", path)
                found = []
            self._cache[path] = found
        return found

    def root_ready(self, path: str) -> asyncio.Event:
        root = self.session.root_of(path)
        event = self._root_events.get(root)
        if event is None:
            event = self._root_events[root] = asyncio.Event()
            if root in self.session.loaded:
                event.set()
            else:
                self.session.analysis_for(path)
                self.spawn(self._load_roots([root]))
        return event

    # ------------------------------------------------------------------------------ publish or pull

    def schedule(self, path: str, text: str, version: int | None) -> None:
        self._pending[path] = (text, version)
        timer = self._timers.pop(path, None)
        if timer is not None:
            timer.cancel()
        self._timers[path] = asyncio.get_running_loop().call_later(self.settings.debounce, self._fire, path)

    def _fire(self, path: str) -> None:
        self._timers.pop(path, None)
        try:
            self.flush(path)
            self.publish_pending(origin=path)
        except Exception:
            logger.exception("re-checking after a change to %s failed", path)
        for waiter in self._waiters.pop(path, []):
            if not waiter.done():
                waiter.set_result(None)

    async def settled(self, path: str) -> None:
        """Waits for the debounce of a document's pending edits (pull diagnostics honour it too)."""
        while path in self._timers:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(path, []).append(waiter)
            await waiter
        self.flush(path)

    def publish_pending(self, origin: str | None = None) -> None:
        """Pushes the diagnostics of every file a change affected; a pull client is asked to pull again
        when files other than the edited one changed."""
        paths, self._to_publish = self._to_publish, set()
        if self.pull:
            self._refresh_pull(paths - {origin} if origin else paths)
            return
        ready = [p for p in paths if self.session.root_of(p) in self.session.loaded]
        if len(ready) <= CHUNK:
            for path in sorted(ready):
                self.publish(path)
        else:
            self.spawn(self.publish_all(ready))

    def publish(self, path: str) -> None:
        items = [convert.diagnostic(d, self._related_support()) for d in self.diagnostics(path)]
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=convert.uri(path), diagnostics=items, version=self.version_of(path)))

    async def publish_all(self, paths: Iterable[str], token: str | None = None, start: int = 0,
                          total: int | None = None) -> None:
        paths = sorted(paths)
        total = total or len(paths)
        for index in range(0, len(paths), CHUNK):
            for path in paths[index:index + CHUNK]:
                self.publish(path)
            if token is not None:
                done = start + min(index + CHUNK, len(paths))
                self._progress(token, lsp.WorkDoneProgressReport(
                    message=f"{done}/{total} files", percentage=min(100, int(100 * done / max(total, 1)))))
            await asyncio.sleep(0)

    def _related_support(self) -> bool:
        value = self.caps("text_document", "publish_diagnostics", "related_information")
        return True if value is None else bool(value)

    def _refresh_pull(self, paths: set[str]) -> None:
        if not paths:
            return
        if self.caps("workspace", "diagnostics", "refresh_support"):
            self.workspace_diagnostic_refresh(None)

    def result_id(self, path: str, items: list[Diagnostic]) -> str:
        digest = hashlib.blake2b(digest_size=8)
        digest.update(path.encode())
        for d in items:
            digest.update(repr((d.range, d.code, d.message, int(d.severity))).encode())
        return digest.hexdigest()

    async def wait_for_change(self) -> None:
        if self._change is None:
            self._change = asyncio.get_running_loop().create_future()
        await asyncio.wait([self._change])

    # ------------------------------------------------------------------------------ workspace check

    async def check_workspace(self) -> None:
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        roots = await loop.run_in_executor(None, self.session.discover_roots)
        fresh = [root for root in roots if root not in self._root_events]
        for root in fresh:
            self.session.ensure_root(root)
            self._root_events[root] = asyncio.Event()
        await self._load_roots(fresh, progress=True)
        for root in roots:
            await self._root_events[root].wait()
        self.check_seconds = time.perf_counter() - started
        self.checked.set()

    async def _load_roots(self, roots: list[str], progress: bool = False) -> None:
        token = await self._begin_progress("Checking agents and templates") if progress else None
        loop = asyncio.get_running_loop()
        installed: list[str] = []
        try:
            for root in roots:
                if token:
                    self._progress(token, lsp.WorkDoneProgressReport(message=f"reading {os.path.basename(root)}"))
                try:
                    analysis = await loop.run_in_executor(None, self.session.load, root)
                except Exception:  # keep serving what the editor opened rather than waiting forever
                    logger.exception("loading %s failed", root)
                    self.window_log_message(lsp.LogMessageParams(
                        type=lsp.MessageType.Error, message=f"oscova: could not read the workspace {root}"))
                    analysis = self.session.ensure_root(root)
                files = self.session.install(root, analysis)
                self._cache = {p: d for p, d in self._cache.items() if p not in files}
                self._root_events.setdefault(root, asyncio.Event()).set()
                installed.extend(files)
                for notice in analysis.workspace.notices:
                    self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Info, message=notice))
            # The parsed workspace lives as long as the server: keep the cyclic collector from walking it
            # again and again (full collections of a 2,000-file workspace cost 100 ms and more).
            gc.collect()
            gc.freeze()
            if self.pull:
                self._invalidate(installed)
                self._to_publish.clear()
                self._refresh_pull(set(installed))
            else:
                await self.publish_all(installed, token)
        finally:
            if token:
                self._progress(token, lsp.WorkDoneProgressEnd(message=f"{len(installed)} files checked"))
                self.work_done_progress.tokens.pop(token, None)

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

    async def recheck_everything(self) -> None:
        paths = self.session.all_files()
        self._cache.clear()
        self._invalidate(paths)
        self._to_publish.clear()
        if self.pull:
            self._refresh_pull(set(paths))
        else:
            await self.publish_all(p for p in paths if self.session.root_of(p) in self.session.loaded)

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
            value = self._initial_options
        settings = Settings.parse(value)
        if settings == self.settings:
            return
        lint_changed = settings.lint_options() != self.settings.lint_options()
        self.settings = settings
        self.session.set_lint(settings.lint_options())
        if lint_changed:
            await self.recheck_everything()

    async def register_watchers(self) -> None:
        if not self.caps("workspace", "did_change_watched_files", "dynamic_registration"):
            return
        options = lsp.DidChangeWatchedFilesRegistrationOptions(
            watchers=[lsp.FileSystemWatcher(glob_pattern=g) for g in WATCHED_GLOBS])
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


def _document_formats(server: OscovaServer, *path: str) -> list[lsp.MarkupKind] | None:
    value = server.caps(*path)
    return list(value) if value else None


def create_server() -> OscovaServer:  # noqa: C901 - one registration point for every feature
    server = OscovaServer()

    # -------------------------------------------------------------------------------- lifecycle

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: OscovaServer, params: lsp.InitializeParams) -> None:
        folders = [convert.path_of(f.uri) for f in params.workspace_folders or []]
        if not folders and params.root_uri:
            folders = [convert.path_of(params.root_uri)]
        elif not folders and params.root_path:
            folders = [params.root_path]
        ls.session = Session([f for f in folders if f])
        ls.pull = params.capabilities.text_document is not None and \
            params.capabilities.text_document.diagnostic is not None
        ls._initial_options = params.initialization_options
        ls.settings = Settings.parse(params.initialization_options)
        ls.session.set_lint(ls.settings.lint_options())
        ls.client_pid = ls.client_pid or params.process_id
        ls.runs.trusted = workspace_trusted(params.initialization_options)

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: OscovaServer, params: lsp.InitializedParams) -> None:
        if ls.client_pid:
            ls.spawn(ls.watch_client(ls.client_pid))
        ls.spawn(ls.register_watchers())
        await ls.load_settings()
        ls.spawn(ls.check_workspace())

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: OscovaServer, params: Any) -> None:
        # Synchronous, so the answer precedes an `exit` sent right behind the request.
        for timer in ls._timers.values():
            timer.cancel()
        ls._timers.clear()
        for task in list(ls._tasks):
            task.cancel()
        ls.runs.shutdown()

    # ---------------------------------------------------------------------------- documents

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: OscovaServer, params: lsp.DidOpenTextDocumentParams) -> None:
        path = convert.path_of(params.text_document.uri)
        if path is None:
            return
        ls._pending.pop(path, None)
        ls._skipped_noticed.discard(path)
        affected = ls.session.apply_open(path, params.text_document.text, params.text_document.version)
        ls._invalidate(affected | {path})
        ls.notice_skipped(path)
        ls.root_ready(path)
        ls.publish_pending(origin=path)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: OscovaServer, params: lsp.DidChangeTextDocumentParams) -> None:
        path = convert.path_of(params.text_document.uri)
        if path is None:
            return
        large = ls.large.get(params.text_document.uri)
        if large is None:
            ls.schedule(path, ls.workspace.get_text_document(params.text_document.uri).source,
                        params.text_document.version)
        elif not ls.session.still_skipped(path, params.text_document.version):
            ls.schedule(path, large.text(), params.text_document.version)  # it just grew past the limit

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: OscovaServer, params: lsp.DidSaveTextDocumentParams) -> None:
        path = convert.path_of(params.text_document.uri)
        if path is not None:
            ls.runs.file_saved(path)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: OscovaServer, params: lsp.DidCloseTextDocumentParams) -> None:
        path = convert.path_of(params.text_document.uri)
        if path is None:
            return
        timer = ls._timers.pop(path, None)
        if timer is not None:
            timer.cancel()
        ls._pending.pop(path, None)
        ls._skipped_noticed.discard(path)
        ls._invalidate(ls.session.close(path) | {path})
        ls.publish_pending()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: OscovaServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        affected: set[str] = set()
        for change in params.changes:
            path = convert.path_of(change.uri)
            if path is None:
                continue
            affected |= ls.session.disk_changed(path, change.type == lsp.FileChangeType.Deleted)
            ls.runs.file_saved(path)
        if affected:
            ls._invalidate(affected)
            ls.publish_pending()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: OscovaServer, params: lsp.DidChangeConfigurationParams) -> None:
        settings = params.settings
        pushed = settings.get("oscova") if isinstance(settings, dict) and isinstance(settings.get("oscova"), dict) \
            else None
        await ls.load_settings(pushed)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_folders(ls: OscovaServer, params: lsp.DidChangeWorkspaceFoldersParams) -> None:
        for folder in params.event.added:
            path = convert.path_of(folder.uri)
            if path and path not in ls.session.folders:
                ls.session.folders.append(path)
                ls.session.forget_root_cache()
                ls.spawn(ls._load_roots([ls.session.root_of(os.path.join(path, "x"))]))

    # ---------------------------------------------------------------------------- diagnostics

    @server.feature(lsp.TEXT_DOCUMENT_DIAGNOSTIC, lsp.DiagnosticOptions(
        identifier=DIAGNOSTIC_IDENTIFIER, inter_file_dependencies=True, workspace_diagnostics=True))
    async def document_diagnostic(ls: OscovaServer, params: lsp.DocumentDiagnosticParams) -> Any:
        path = convert.path_of(params.text_document.uri)
        if path is None or not ls.session.is_tracked(path):
            return lsp.RelatedFullDocumentDiagnosticReport(items=[])
        await ls.root_ready(path).wait()
        await ls.settled(path)
        found = ls.diagnostics(path)
        result_id = ls.result_id(path, found)
        if params.previous_result_id == result_id:
            return lsp.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        return lsp.RelatedFullDocumentDiagnosticReport(
            items=[convert.diagnostic(d) for d in found], result_id=result_id)

    @server.feature(lsp.WORKSPACE_DIAGNOSTIC)
    async def workspace_diagnostic(ls: OscovaServer, params: lsp.WorkspaceDiagnosticParams) -> Any:
        """Every file not open in the editor; held until something changes when nothing has."""
        await ls.checked.wait()
        previous = {p.uri: p.value for p in params.previous_result_ids}
        while True:
            items: list[Any] = []
            changed = False
            for path in ls.session.all_files():
                if path in ls.session.open:
                    continue
                found = ls.diagnostics(path)
                result_id = ls.result_id(path, found)
                document = convert.uri(path)
                if previous.get(document) == result_id:
                    items.append(lsp.WorkspaceUnchangedDocumentDiagnosticReport(
                        uri=document, result_id=result_id, version=None))
                else:
                    changed = True
                    items.append(lsp.WorkspaceFullDocumentDiagnosticReport(
                        uri=document, items=[convert.diagnostic(d) for d in found], result_id=result_id,
                        version=None))
            if changed or not previous:
                return lsp.WorkspaceDiagnosticReport(items=items)
            await ls.wait_for_change()

    # ------------------------------------------------------------------------------ features

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=COMPLETION_TRIGGERS,
                                                                        resolve_provider=False))
    def on_completion(ls: OscovaServer, params: lsp.CompletionParams) -> lsp.CompletionList | None:
        found = ls.lookup(params.text_document.uri)
        if found is None:
            return None
        ws, parsed, _ = found
        result = completion.complete(ws, parsed, convert.to_position(params.position))
        formats = _document_formats(ls, "text_document", "completion", "completion_item", "documentation_format")
        return lsp.CompletionList(is_incomplete=result.incomplete,
                                  items=[convert.completion_item(i, formats) for i in result.items])

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: OscovaServer, params: lsp.HoverParams) -> lsp.Hover | None:
        found = ls.lookup(params.text_document.uri)
        if found is None:
            return None
        ws, parsed, path = found
        result = hover.hover(ws, parsed, convert.to_position(params.position), ls.diagnostics(path))
        if result is None:
            return None
        formats = _document_formats(ls, "text_document", "hover", "content_format")
        return lsp.Hover(contents=convert.markup(result.markdown, formats),
                         range=convert.range_(result.range) if result.range else None)

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def on_definition(ls: OscovaServer, params: lsp.DefinitionParams) -> list[lsp.Location] | None:
        found = ls.lookup(params.text_document.uri)
        if found is None:
            return None
        ws, parsed, _ = found
        return [convert.location(loc) for loc in navigation.definition(ws, parsed, convert.to_position(params.position))]

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def on_references(ls: OscovaServer, params: lsp.ReferenceParams) -> list[lsp.Location] | None:
        found = ls.lookup(params.text_document.uri)
        if found is None:
            return None
        ws, parsed, _ = found
        include = params.context.include_declaration if params.context else True
        return [convert.location(loc) for loc in
                navigation.references(ws, parsed, convert.to_position(params.position), include)]

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    def on_prepare_rename(ls: OscovaServer, params: lsp.PrepareRenameParams) -> Any:
        found = ls.lookup(params.text_document.uri)
        if found is None:
            return None
        ws, parsed, _ = found
        target = navigation.prepare_rename(ws, parsed, convert.to_position(params.position))
        if target is None:
            return None
        return lsp.PrepareRenamePlaceholder(range=convert.range_(target.range), placeholder=target.value)

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    def on_rename(ls: OscovaServer, params: lsp.RenameParams) -> lsp.WorkspaceEdit | None:
        found = ls.lookup(params.text_document.uri)
        if found is None:
            return None
        ws, parsed, _ = found
        try:
            edits = navigation.rename(ws, parsed, convert.to_position(params.position), params.new_name)
        except RenameError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        return _workspace_edit(ls, edits)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
    def on_code_action(ls: OscovaServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
        if params.context.only and not any(str(k).startswith("quickfix") for k in params.context.only):
            return None
        found = ls.lookup(params.text_document.uri)
        if found is None:
            return None
        _, _, path = found
        engine = ls.diagnostics(path)
        sent = [(str(d.code), convert.to_range(d.range)) for d in params.context.diagnostics
                if d.source == "oscova" and d.code is not None]
        result = actions.code_actions(engine, convert.to_range(params.range), sent or None)
        client_diags = {(str(d.code), convert.to_range(d.range)): d for d in params.context.diagnostics}
        out = []
        for action in result:
            diag = client_diags.get((action.diagnostic_code, action.diagnostic_range))
            out.append(lsp.CodeAction(title=action.title, kind=lsp.CodeActionKind.QuickFix,
                                      diagnostics=[diag] if diag else None, is_preferred=action.preferred,
                                      edit=_workspace_edit(ls, action.edits)))
        return out

    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensOptions(resolve_provider=False))
    def on_code_lens(ls: OscovaServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens] | None:
        found = ls.lookup(params.text_document.uri)
        if found is None:
            return None
        _, parsed, _ = found
        if not isinstance(parsed, DefinitionFile):
            return []
        return code_lenses(parsed, params.text_document.uri, trusted=ls.runs.trusted)

    @server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT, lsp.InlayHintOptions(resolve_provider=False))
    def on_inlay_hint(ls: OscovaServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint] | None:
        found = ls.lookup(params.text_document.uri)
        if found is None:
            return None
        ws, parsed, _ = found
        return [lsp.InlayHint(position=convert.position(h.position), label=h.label, kind=lsp.InlayHintKind.Type,
                              tooltip=h.tooltip)
                for h in hints.inlay_hints(ws, parsed, convert.to_range(params.range))]

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def on_document_symbol(ls: OscovaServer, params: lsp.DocumentSymbolParams) -> Any:
        found = ls.lookup(params.text_document.uri)
        if found is None:
            return None
        ws, parsed, path = found
        result = symbols.document_symbols(ws, parsed)
        if ls.caps("text_document", "document_symbol", "hierarchical_document_symbol_support"):
            return [convert.symbol(s) for s in result]
        return convert.flat_symbols(result, path)

    @server.feature(lsp.WORKSPACE_SYMBOL)
    def on_workspace_symbol(ls: OscovaServer, params: lsp.WorkspaceSymbolParams) -> list[lsp.SymbolInformation]:
        out = []
        for analysis in ls.session.analyses.values():
            for sym in symbols.workspace_symbols(analysis.workspace, params.query):
                out.append(lsp.SymbolInformation(name=sym.name, kind=convert.SYMBOL_KIND[sym.kind],
                                                 location=convert.location(sym.location),
                                                 container_name=sym.container))
        return out

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_LINK, lsp.DocumentLinkOptions(resolve_provider=False))
    def on_document_link(ls: OscovaServer, params: lsp.DocumentLinkParams) -> list[lsp.DocumentLink] | None:
        found = ls.lookup(params.text_document.uri)
        if found is None:
            return None
        ws, parsed, _ = found
        tooltips = bool(ls.caps("text_document", "document_link", "tooltip_support"))
        return [lsp.DocumentLink(range=convert.range_(link.range), target=convert.uri(link.target),
                                 tooltip=link.tooltip if tooltips else None)
                for link in navigation.document_links(ws, parsed)]

    # ---------------------------------------------------------------------------------- runs

    for name, handler in command_handlers(server.runs).items():
        server.command(name)(functools.partial(handler))  # (pygls tags the callable; a bound method refuses)

    @server.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def on_progress_cancel(ls: OscovaServer, params: lsp.WorkDoneProgressCancelParams) -> None:
        ls.runs.cancel_progress(params.token)

    return server


def _workspace_edit(ls: OscovaServer, edits: Iterable[Any]) -> lsp.WorkspaceEdit:
    document_changes = bool(ls.caps("workspace", "workspace_edit", "document_changes"))
    versions = {path: ls.version_of(path) for path in ls.session.open}
    return convert.workspace_edit(edits, versions, document_changes)
