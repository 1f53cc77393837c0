"""The diagnostics publisher: debounced publication, the files a change affects, pushed or pulled diagnostics.

The host takes an edit at once (`AnalysisHost.change`: every reader sees it); only its publication waits for
the debounce. The publisher owns the timers, the set of files to publish and the diagnostics computed for the
current state (dropped for the files a change affects: the host tells, `invalidate`). It reads and changes the
workspace only through the `AnalysisHost`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from lsprotocol import types as lsp

from ..analysis.diagnostics import Diagnostic
from ..analysis.host import AnalysisHost, Snapshot
from ..analysis.rules.syntax import could_not_check
from . import wire_json
from .settings import DEFAULT_DEBOUNCE_MS


class PublishingServer(Protocol):
    """What the publisher needs of the server (`server.OscovaServer`), without importing it."""

    def send_json(self, message: dict[str, Any]) -> None: ...
    def window_show_message(self, params: lsp.ShowMessageParams) -> None: ...
    def workspace_diagnostic_refresh(self, params: None) -> Any: ...


logger = logging.getLogger(__name__)

CHUNK = 100
"""Files published between two yields to the event loop in a whole-workspace publication."""


class DiagnosticsPublisher:
    def __init__(self, server: PublishingServer, host: Callable[[], AnalysisHost],
                 spawn: Callable[[Any], asyncio.Task[Any]], caps: Callable[..., Any]) -> None:
        self._server = server
        self._host = host
        self._spawn = spawn
        self._caps = caps
        self.pull = False
        """The client pulls diagnostics (`textDocument/diagnostic`) instead of receiving them."""
        self.debounce = DEFAULT_DEBOUNCE_MS / 1000
        """Seconds an edit waits before it is checked (`oscova.debounce`, set from the settings at `initialize`)."""
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._to_publish: set[str] = set()
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._cache: dict[str, list[Diagnostic]] = {}
        self._change: asyncio.Future[None] | None = None
        self._skipped_noticed: set[str] = set()
        self._shown: set[str] = set()
        """Files whose last publication had diagnostics: the client shows something for them."""
        self._stored_shown: dict[str, str] = {}
        """Files published from stored results before their root was read, with the `result_id` sent."""
        self._first_shown: dict[str, tuple[int | None, str]] = {}
        """Open documents published before their root was read (`publish_first`): the version and `result_id`."""

    @property
    def host(self) -> AnalysisHost:
        return self._host()

    # ------------------------------------------------------------------------------------------ edits

    def opened(self, path: str, text: str, version: int | None) -> None:
        self._skipped_noticed.discard(path)
        self.invalidate(self.host.open(path, text, version) | {path})
        self.notice_skipped(path)

    def closed(self, path: str) -> None:
        timer = self._timers.pop(path, None)
        if timer is not None:
            timer.cancel()
        self._skipped_noticed.discard(path)
        self.invalidate(self.host.close(path) | {path})
        self.publish_pending()

    def changed(self, path: str, text: str, version: int | None) -> None:
        """An edit: the host takes it now; its diagnostics go out once the document rests for the debounce."""
        self.host.change(path, text, version)
        timer = self._timers.pop(path, None)
        if timer is not None:
            timer.cancel()
        self._timers[path] = asyncio.get_running_loop().call_later(self.debounce, self._fire, path)

    def _fire(self, path: str) -> None:
        self._timers.pop(path, None)
        try:
            self.publish_pending(origin=path)
            self.notice_skipped(path)
        except Exception:
            logger.exception("re-checking after a change to %s failed", path)
        for waiter in self._waiters.pop(path, []):
            if not waiter.done():
                waiter.set_result(None)

    async def settled(self, path: str) -> None:
        """Waits for the debounce of a document's edits (pull diagnostics honour it too)."""
        while path in self._timers:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(path, []).append(waiter)
            await waiter

    def notice_skipped(self, path: str) -> None:
        """The notice docs/editors.md promises, once per open document, when the analysis skips it (too large)."""
        found = self.host.snapshot().parsed(path)
        skipped = found[1].skipped if found is not None else None
        if not skipped:
            self._skipped_noticed.discard(path)
        elif path not in self._skipped_noticed:
            self._skipped_noticed.add(path)
            self._server.window_show_message(lsp.ShowMessageParams(
                type=lsp.MessageType.Warning,
                message=f"oscova: {os.path.basename(path)} is not checked: {skipped}. Diagnostics and editor "
                        "features for it come back once it is under the limit."))

    def shutdown(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    # ------------------------------------------------------------------------------------ diagnostics

    def invalidate(self, paths: Iterable[str]) -> None:
        """The files whose diagnostics may have changed: recomputed and published next."""
        for path in paths:
            self._cache.pop(path, None)
            self._to_publish.add(path)
        if self._change is not None and not self._change.done():
            self._change.set_result(None)
        self._change = None

    def forget(self, paths: Iterable[str] | None = None) -> None:
        """Drops the diagnostics computed for `paths` (all: None) without publishing them."""
        if paths is None:
            self._cache.clear()
        else:
            for path in paths:
                self._cache.pop(path, None)

    def diagnostics(self, path: str, snapshot: Snapshot | None = None) -> list[Diagnostic]:
        """The file's diagnostics in the host's current state (`snapshot`: taken from it just now)."""
        found = self._cache.get(path)
        if found is None:
            try:
                found = (snapshot or self.host.snapshot()).diagnostics(path)
            except Exception as error:  # a bug in the lint step: said on the file, not hidden as "no problems"
                logger.exception("checking %s failed", path)
                found = [could_not_check(path, error)]
            self._cache[path] = found
        return found

    def publish_pending(self, origin: str | None = None) -> None:
        """Pushes the diagnostics of every file a change affected; a pull client is asked to pull again
        when files other than the edited one changed."""
        snapshot = self.host.snapshot()  # analyses the edits taken: the files they affect join `_to_publish`
        paths, self._to_publish = self._to_publish, set()
        if self.pull:
            self.refresh_pull(paths - {origin} if origin else paths)
            return
        ready = [p for p in paths if snapshot.is_loaded(p)]
        if len(ready) <= CHUNK:
            for path in sorted(ready):
                self.publish(path, snapshot)
        else:
            self._spawn(self.publish_all(ready))

    def publish(self, path: str, snapshot: Snapshot | None = None, *, sweep: bool = False) -> None:
        """Pushes the file's diagnostics. `sweep` (a whole-workspace publication): a file the client shows
        nothing for and that has nothing to show is left out, and one the stored results already showed
        exactly as they are now is not sent again."""
        snapshot = snapshot or self.host.snapshot()
        found = self.diagnostics(path, snapshot)
        version = snapshot.version(path)
        early = self._stored_shown.pop(path, None)
        first = self._first_shown.pop(path, None)
        if sweep and version is None and (not found and path not in self._shown or
                                          early is not None and early == self.result_id(path, found)):
            return
        if sweep and first is not None and first == (version, self.result_id(path, found)):
            return  # shown just so, for this version, before the root was read
        self._send(path, found, version)

    def publish_first(self, path: str, found: list[Diagnostic], version: int | None) -> None:
        """An open document's final diagnostics before its root was read (`OscovaServer.look_first`); the
        publication of the whole root does not send them again while they hold."""
        self._send(path, found, version)
        self._first_shown[path] = (version, self.result_id(path, found))

    def _send(self, path: str, found: list[Diagnostic], version: int | None) -> None:
        if found:
            self._shown.add(path)
        else:
            self._shown.discard(path)
        self._server.send_json(wire_json.publication(path, found, version, self._related_support()))

    def publish_stored(self, diagnostics: dict[str, list[Diagnostic]]) -> None:
        """Pushes the stored results of a root's last check before the root is read (they hold for its files
        on disk): the files with findings, open documents left to their own versioned publication; none the
        phase before pygls already published just so."""
        for path, found in diagnostics.items():
            if found and not self.host.is_open(path):
                result_id = self.result_id(path, found)
                if self._stored_shown.get(path) != result_id:
                    self._send(path, found, None)
                self._stored_shown[path] = result_id

    def adopt_early(self, published: dict[str, str], shown: set[str],
                    versions: dict[str, int | None] | None = None) -> None:
        """What the phase before pygls published (`early.EarlyPhaseResult`): a sweep does not send it again while it
        holds, and a file it showed findings for gets its empty publication when they go. `versions`: the open
        documents published with their version."""
        for path, result_id in published.items():
            if versions is not None and versions.get(path) is not None:
                self._first_shown[path] = (versions[path], result_id)
            else:
                self._stored_shown[path] = result_id
        self._shown |= shown

    async def publish_all(self, paths: Iterable[str], report: Callable[[int, int], None] | None = None) -> None:
        """Publishes every file of `paths` (a sweep: see `publish`), yielding to the event loop between chunks;
        `report(done, total)` after each chunk."""
        paths = sorted(paths)
        for index in range(0, len(paths), CHUNK):
            snapshot = self.host.snapshot()  # one per chunk: none is held while other handlers run
            for path in paths[index:index + CHUNK]:
                self.publish(path, snapshot, sweep=True)
            del snapshot
            if report is not None:
                report(min(index + CHUNK, len(paths)), len(paths))
            await asyncio.sleep(0)

    async def installed(self, paths: set[str], report: Callable[[int, int], None] | None = None,
                        primed: dict[str, list[Diagnostic]] | None = None) -> None:
        """A root was read: its files' diagnostics go out (or the pull client is asked to pull them).
        `primed`: diagnostics already known for the installed state (stored results that hold for it)."""
        self.forget(paths)
        if primed:
            self._cache.update((path, found) for path, found in primed.items() if path in paths)
        if self.pull:
            self.invalidate(paths)
            self._to_publish.clear()
            self.refresh_pull(paths)
        else:
            await self.publish_all(paths, report)

    async def recheck_everything(self) -> None:
        snapshot = self.host.snapshot()
        paths = snapshot.all_files()
        loaded = [p for p in paths if snapshot.is_loaded(p)]
        del snapshot  # not held across the awaits below
        self.forget()
        self.invalidate(paths)
        self._to_publish.clear()
        if self.pull:
            self.refresh_pull(set(paths))
        else:
            await self.publish_all(loaded)

    def _related_support(self) -> bool:
        value = self._caps("text_document", "publish_diagnostics", "related_information")
        return True if value is None else bool(value)

    def refresh_pull(self, paths: set[str]) -> None:
        if paths and self._caps("workspace", "diagnostics", "refresh_support"):
            self._server.workspace_diagnostic_refresh(None)

    @staticmethod
    def result_id(path: str, items: list[Diagnostic]) -> str:
        return wire_json.result_id(path, items)

    async def wait_for_change(self) -> None:
        if self._change is None:
            self._change = asyncio.get_running_loop().create_future()
        await asyncio.wait([self._change])
