"""The phase before pygls: the first diagnostics pushed while pygls and lsprotocol are still unimported
(about a second of imports), over the one framer.

`launch` answers `initialize`; this phase then reads what follows (`initialized`, the documents the editor
opens), publishes the stored results of each root's last check that hold for its files (a warm start: told
by the identities of the files and folders, `warm_start.check_by_stat`, with no parser, pydantic model or analysis
host imported), then reads and checks each small root on an `AnalysisHost` built from the `initialize` params
and publishes its diagnostics. It answers no request: every request is the pygls server's, answered by its one
handler. Only then does a thread import the pygls server. The publications go out in one write per batch, not
one per file. A client that pulls diagnostics gets nothing here (there is nothing to push to it).

The hand-over (`EarlyPhaseResult`): the pygls server receives every message read here, in order, and handles
them on a fresh host exactly as if it had read them itself (its diagnostics are computed again: the same code on
the same inputs). It takes over what was published (`DiagnosticsPublisher.adopt_early`), so its initial sweep
sends only what differs. At the first message the phase does not handle (a request, an edit, `exit`, a
response, a bad frame) it stops handling any: from then on it only collects them, so none is handled before
what came before it.
"""

from __future__ import annotations

import gc
import logging
import os
import select
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from oscova_runtime.framing import CHUNK, Dropped, Framer, Message, encode
from oscova_runtime.paths import is_inside

from ..analysis.cache_keys import text_digest
from ..analysis.disk import SCAN_DELAY_ENV, SCAN_GATE_ENV, Roots, file_kind, find_root, more_files_than
from ..analysis.lint import lint_key
from ..analysis.warm_start import StatCheck, check_by_stat
from . import wire_json
from .settings import Settings
from .wire_json import path_of, result_id

if TYPE_CHECKING:  # the analysis host, its parsers and pydantic are imported once a root is read here
    from ..analysis.diagnostics import Diagnostic
    from ..analysis.engine import Analysis
    from ..analysis.host import AnalysisHost, Snapshot

logger = logging.getLogger(__name__)

EARLY_LOAD_FILES = 300
"""A root with at most this many files is read and checked here (a few milliseconds per file, in this
thread: below the engine's `PARALLEL_THRESHOLD`); a larger one is read by the pygls server only (reading
it here too would do the work twice), and only its stored results go out early."""
POLL_SECONDS = 0.05
WRITE_BATCH = 1 << 18
"""Publications are written out once this many bytes are pending (and whenever the phase waits)."""
HANDLED_NOTIFICATIONS = frozenset({"initialized", "textDocument/didOpen", "$/setTrace", "$/cancelRequest"})
"""The notifications read here; anything else (every request among them) ends the phase's handling."""


@dataclass
class EarlyPhaseResult:
    """What the pygls server takes over."""

    items: list[Message | Dropped]
    """Every message read (the `initialize` first), in order, minus the requests answered here."""
    published: dict[str, str] = field(default_factory=dict)
    """The `result_id` of each file's last publication here."""
    versions: dict[str, int | None] = field(default_factory=dict)
    """The version each file's last publication here was of (None: the file on disk)."""
    shown: set[str] = field(default_factory=set)
    """The files whose last publication here had diagnostics."""
    first: dict[str, Analysis] = field(default_factory=dict)
    """By root: what was read here (a small root whole, or what the open documents of a large root need,
    `AnalysisHost.load_first`), for the pygls server's reading of the whole root to reuse."""
    first_texts: dict[str, str] = field(default_factory=dict)
    """The open documents whose final diagnostics went out here, with the text they are of."""


class EarlyPhase:
    def __init__(self, initialize: dict[str, Any], out: BinaryIO) -> None:
        params = initialize.get("params")
        self._params: dict[str, Any] = params if isinstance(params, dict) else {}
        caps = self._params.get("capabilities")
        self._caps: dict[str, Any] = caps if isinstance(caps, dict) else {}
        self._out = out
        self.result = EarlyPhaseResult([Message(initialize)])
        self.stopped = False
        """A message the phase does not handle came: the rest is the pygls server's."""
        self._initialized = False
        self._worked = False
        """The workspace's publications are out: a request read now ends the phase's handling."""
        self._eof = False
        self._inbox: list[Message | Dropped] = []
        """Read, not handled yet (behind a request that waits for the workspace to be read)."""
        self._folders: list[str] = []
        self._roots = Roots(())
        """Which root holds a document, before the analysis host is built (its lookups remembered)."""
        self._lint: Any = None
        self._documents: dict[str, tuple[str, int]] = {}
        """The open documents (text, version) by path, until the analysis host is built (`_host`)."""
        self.host: AnalysisHost | None = None
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._published: dict[str, str] = {}
        """The `result_id` of each file's last publication here (`EarlyPhaseResult.published`)."""
        self._held: dict[str, StatCheck] = {}
        """The roots whose stored results held and went out, with what told so."""

    def run(self, fd: int, framer: Framer, start_loader: Callable[[], Any]) -> EarlyPhaseResult:
        """Reads and handles messages until the pygls server (imported by `start_loader()`'s thread) is ready."""
        try:
            self._begin()
            while not (self._initialized or self.stopped or self._eof or self._inbox):
                self._drain(framer)  # the read that brought `initialize` may have brought `initialized` too
                if not (self._initialized or self.stopped or self._inbox):
                    self._poll(fd, framer, None)
            self._poll(fd, framer, 0)
            if self._eof:  # a client already gone needs no head start; what it sent is the server's
                self.stopped = True
            if not self.stopped:
                self._work()
        except Exception:  # only a head start: the pygls server does it all again anyway
            logger.exception("the start before pygls failed; the server takes over")
            self.stopped = True
        self._process()
        self._flush()
        loader = start_loader()
        while loader.is_alive():
            if self._eof:
                loader.join()
            else:
                self._poll(fd, framer, POLL_SECONDS)
        self._flush()  # the answers to what the last read brought: written before the pygls server takes over
        self.result.published = dict(self._published)
        return self.result

    # ------------------------------------------------------------------------------------------ reading

    def _poll(self, fd: int, framer: Framer, timeout: float | None) -> None:
        """Handles the messages already framed, then those of one read if bytes come within `timeout`."""
        self._drain(framer)
        self._flush()
        if self._eof or not select.select([fd], [], [], timeout)[0]:
            return
        data = os.read(fd, CHUNK)
        if not data:
            self._eof = True
            return
        framer.feed(data)
        self._drain(framer)

    def _drain(self, framer: Framer) -> None:
        while (item := framer.next()) is not None:
            self._inbox.append(item)
        self._process()

    def _process(self) -> None:
        """Handles the messages read, in order; a request waits (and so does all that follows it) until the
        workspace's publications are out, then ends the phase's handling."""
        while self._inbox:
            item = self._inbox[0]
            if not (self._worked or self.stopped) and isinstance(item, Message) and \
                    isinstance(item.value, dict) and "id" in item.value:
                return
            self._receive(self._inbox.pop(0))

    def _receive(self, item: Message | Dropped) -> None:
        value = item.value if isinstance(item, Message) else None
        if self.stopped or not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
            self._stop(item)
            return
        method = value.get("method")
        if "id" in value or method not in HANDLED_NOTIFICATIONS:
            self._stop(item)
            return
        self.result.items.append(item)
        try:
            if method == "initialized":
                self._initialized = True
            elif method == "textDocument/didOpen":
                self._open(value.get("params"))
        except Exception as error:  # malformed params: the pygls server says so
            logger.info("the start before pygls stops at %s: %s", method, error)
            self.stopped = True

    def _stop(self, item: Message | Dropped) -> None:
        self.stopped = True
        self.result.items.append(item)

    # -------------------------------------------------------------------------------------- the workspace

    def _begin(self) -> None:
        """The editor's folders and the lint options of `initializationOptions` (as the pygls server's
        `initialize` handler reads them)."""
        params = self._params
        folders = [path_of(f.get("uri")) for f in params.get("workspaceFolders") or [] if isinstance(f, dict)]
        if not folders and params.get("rootUri"):
            folders = [path_of(params["rootUri"])]
        elif not folders and isinstance(params.get("rootPath"), str):
            folders = [params["rootPath"]]
        self._folders = [f for f in folders if f]
        self._roots = Roots(self._folders)
        self._lint = Settings.parse(params.get("initializationOptions")).lint_options()

    def _host(self) -> AnalysisHost:
        """The analysis host (its import loads the parsers and the definition model), the documents opened so
        far opened in it."""
        if self.host is None:
            from ..analysis.host import AnalysisHost

            self.host = AnalysisHost(self._folders, self._lint)
            for path, (text, version) in self._documents.items():
                self.host.open(path, text, version)
        return self.host

    def _work(self) -> None:
        """The stored results of every root (open documents' roots first) that hold, then each small root read
        and its diagnostics published (none pushed to a client that pulls them)."""
        if self._pulls():  # nothing is pushed to a client that pulls: the pygls server answers its pulls
            self._worked = True
            return
        collecting = gc.isenabled()
        gc.disable()  # as the server's root loads: a large graph with few cycles
        try:
            checks = self._stored_roots()
            stored = {root for root, check in checks.items() if self._publish_stored(root, check)}
            self._held = {root: checks[root] for root in stored}
            self._flush()
            held = os.environ.get(SCAN_GATE_ENV) or os.environ.get(SCAN_DELAY_ENV)  # tests hold reading back
            # A root whose stored results went out is read by the pygls server only: nothing here would differ.
            small = [root for root, check in checks.items()
                     if root not in stored and not self._large(root, check)] if not held else []
            # The open documents of a root not read here whole: what they need first, their diagnostics out.
            for root in dict.fromkeys(self._roots.root_of(path) for path in self._documents):
                if root not in small and root not in stored:
                    self._look_first(root)
            if small:
                host = self._host()
                opened = {host.root_of(path) for path in self._documents}
                for root in sorted(dict.fromkeys(host.discover_roots() + small), key=lambda r: r not in opened):
                    if root in small or root not in stored and not self._large(root, None):
                        self._load(root)
        finally:
            if collecting:
                gc.enable()
        self._worked = True

    def _stored_roots(self) -> dict[str, StatCheck]:
        """Each editor folder's workspace root and the roots nested in it as far as the identities of the
        stored results tell (`warm_start.check_by_stat`, which reads no file it need not), with what they told."""
        settings = lint_key(self._lint)
        checks: dict[str, StatCheck] = {}
        queue = [(find_root(f) or (f if os.path.isdir(f) else os.path.dirname(f)), f) for f in self._folders]
        while queue:
            root, folder = queue.pop(0)
            if root in checks:
                continue
            checks[root] = check = check_by_stat(root, settings, decode=False)
            queue += [(n, folder) for n in check.nested or [] if is_inside(n, folder, real=False)]
        if not all(check.decided for check in checks.values()):  # a folder changed: read, as the server will
            host = self._host()
            for root in host.discover_roots():
                check = checks.get(root) or check_by_stat(root, settings, decode=False)
                if not check.decided:
                    found = host.stored_results(root)
                    check = StatCheck(found[0], found[1]) if found is not None else StatCheck(None)
                checks[root] = check
        opened = {self._roots.root_of(path) for path in self._documents}
        return dict(sorted(checks.items(), key=lambda item: item[0] not in opened))

    @staticmethod
    def _large(root: str, check: StatCheck | None) -> bool:
        if check is not None and check.decided and check.stored is not None:
            return len(check.states) > EARLY_LOAD_FILES
        return more_files_than(root, EARLY_LOAD_FILES)

    def _publish_stored(self, root: str, check: StatCheck) -> bool:
        """As `OscovaServer._publish_stored`, when the stored results hold for the files on disk and the open
        documents: the files with findings, and each open document (its text is the file's, so they hold
        for its version too) with its version, so the editor need not wait for the root to be read. Whether
        they held (and went out)."""
        if check.stored is None:
            return False
        for path, (text, _) in self._documents.items():
            if self._roots.root_of(path) == root and file_kind(path) is not None and \
                    check.states.get(path) != text_digest(text):
                return False
        rows = check.stored.rows
        if rows is None:  # read as values (a folder had changed: `AnalysisHost.stored_results`)
            rows = {path: found for path, found in check.stored.diagnostics.items()}
        out: list[tuple[str, dict[str, Any], str, bool]] = []
        try:  # every row checked before any goes out: a stored row of the wrong shape is not believed
            for path in sorted(rows, key=lambda p: p not in self._documents):  # the open documents first
                document = self._documents.get(path)
                if rows[path] or document is not None:
                    version = document[1] if document is not None else None
                    if check.stored.rows is not None:
                        message, rid = wire_json.publication_of_rows(path, rows[path], version, self._related())
                    else:
                        message = wire_json.publication(path, rows[path], version, self._related())
                        rid = result_id(path, rows[path])
                    out.append((path, message, rid, bool(rows[path])))
        except (ValueError, TypeError):
            return False
        for path, message, rid, shows in out:
            self._write(message)
            self._published[path] = rid
            self.result.versions[path] = message["params"].get("version")
            if shows:
                self.result.shown.add(path)
            else:
                self.result.shown.discard(path)
            if path in self._documents:
                self.result.first_texts[path] = self._documents[path][0]
        return True

    def _look_first(self, root: str) -> None:
        """The open documents of a large root, before the pygls server reads it whole: their stored diagnostics
        when the stored results held and the document is the file, else what they need read here
        (`AnalysisHost.load_first`); published, final, with their versions."""
        documents = {path: text for path, (text, _) in self._documents.items()
                     if self._roots.root_of(path) == root and file_kind(path) is not None}
        wanted = [path for path, text in documents.items() if self.result.first_texts.get(path) != text]
        if not wanted:
            return
        held = self._held.get(root)
        if held is not None and held.stored is not None and \
                all(held.states.get(path) == text_digest(documents[path]) for path in wanted):
            for path in wanted:
                self._send(path, held.stored.of(path), self._documents[path][1])
                self.result.first_texts[path] = documents[path]
            self._flush()
            return
        analysis, found = self._host().load_first(root, wanted, documents, self.result.first.get(root))
        self.result.first[root] = analysis
        for path, diagnostics in found.items():
            self.result.first_texts[path] = documents[path]
            self._send(path, diagnostics, self._documents[path][1])
        self._flush()

    def _load(self, root: str) -> None:
        host = self._host()
        analysis = host.load(root)
        files = host.install(root, analysis)
        self.result.first[root] = analysis  # the pygls server's reading of the root reuses what was parsed here
        snapshot = host.snapshot()
        for path in sorted(files):
            self._publish(path, snapshot, sweep=True)

    def _open(self, params: Any) -> None:
        document = params.get("textDocument") if isinstance(params, dict) else None
        text = document.get("text") if isinstance(document, dict) else None
        version = document.get("version") if isinstance(document, dict) else None
        if not isinstance(document, dict) or not isinstance(text, str) or type(version) is not int:
            raise ValueError("not a TextDocumentItem")
        path = path_of(document.get("uri"))
        if path is None:
            return
        self._documents[path] = (text, version)
        if self._pulls():  # nothing is pushed to a client that pulls (`_work`)
            return
        if self.host is None:
            if self._worked and file_kind(path) is not None:  # no root read here: this one's needs are
                self._look_first(self._roots.root_of(path))
            return
        affected = self.host.open(path, text, version) | {path}
        if self._worked:  # as the server's `did_open`: every affected file of a root read so far
            snapshot = self.host.snapshot()
            for affected_path in sorted(p for p in affected if snapshot.is_loaded(p)):
                self._publish(affected_path, snapshot)
            if not snapshot.is_loaded(path) and file_kind(path) is not None:
                del snapshot
                self._look_first(self._roots.root_of(path))

    # ----------------------------------------------------------------------------------------- publishing

    def _pulls(self) -> bool:
        document = self._caps.get("textDocument")
        return isinstance(document, dict) and document.get("diagnostic") is not None

    def _related(self) -> bool:
        """Whether the client takes a diagnostic's related locations (as `DiagnosticsPublisher`)."""
        related = self._cap("textDocument", "publishDiagnostics", "relatedInformation")
        return True if related is None else bool(related)

    def _cap(self, *path: str) -> Any:
        current: Any = self._caps
        for part in path:
            current = current.get(part) if isinstance(current, dict) else None
        return current

    def _diagnostics(self, path: str, snapshot: Snapshot) -> list[Any]:
        try:
            return list(snapshot.diagnostics(path))
        except Exception as error:  # as the publisher: a bug in the lint step said on the file
            from ..analysis.rules.syntax import could_not_check

            logger.exception("checking %s failed", path)
            return [could_not_check(path, error)]

    def _publish(self, path: str, snapshot: Snapshot, *, sweep: bool = False) -> None:
        """As `DiagnosticsPublisher.publish`: in a sweep, a file with nothing to show that shows nothing, or
        that was published just so, is left out."""
        found = self._diagnostics(path, snapshot)
        version = snapshot.version(path)
        if sweep and version is None and (not found and path not in self.result.shown or
                                          self._published.get(path) == result_id(path, found)):
            return
        self._send(path, found, version)

    def _send(self, path: str, found: list[Diagnostic], version: int | None) -> None:
        self._write(wire_json.publication(path, found, version, self._related()))
        self._published[path] = result_id(path, found)
        self.result.versions[path] = version
        if found:
            self.result.shown.add(path)
        else:
            self.result.shown.discard(path)

    def _write(self, payload: dict[str, Any]) -> None:
        """Queues a message; they go out in order, in batches (`_flush`)."""
        data = encode(payload)
        self._pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes >= WRITE_BATCH:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._out.write(b"".join(self._pending))
            self._out.flush()
            self._pending, self._pending_bytes = [], 0
