"""A persistent cache: an unchanged file is read and hashed, not parsed again; an unchanged workspace is not
checked again.

Two layers:
- Facts (`facts.json`): each template's facts (the costly part: Jinja's parser) and each definition's YAML
  document with the facts of its inline instructions, keyed by the file's text digest. The host
  configuration is one small file and is parsed every time. An entry never stands for a finding that
  depends on another file (or on `oscova.toml`): the cross-file checks run on the facts of the load.
- Results (`results.json`): the diagnostics of the last whole check of the root (by `oscova-lsp check`, or
  by the language server when it read the root at start),
  reused only when everything they were computed from is unchanged — the files found, every file's text
  digest (or why it was not read), the lint options and the engine key — and every question the checks
  asked the disk (is this path inside the root after symlinks, is there a file there) gets the same answer
  again. Any difference, however small, runs the checks on the current facts, so stored results can never
  hide a problem that the files on disk would show. A start tells that they hold without reading the files
  (`warm_start.check_by_stat`): the results carry a `Manifest` of the identities of the files and folders read.

What is stored is what the files themselves say (names, positions, messages, a definition's values): no
environment value, secret from the environment or rendered prompt. Entries of files gone from the
workspace are dropped on the next write.

The parts: `cache_files` (where the cache lives, and why its files can be trusted), `cache_keys` (what an entry
is keyed by), `stored_results` (a check's results and whether they still hold), `warm_start` (the results
checked at a start by the files' identities); here, `FactsCache`, what one load takes from and gives to them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .cache_files import (
    FACTS_FILE,
    RESULTS_FILE,
    cache_disabled,
    cache_folder,
    collector_paused,
    read_entries,
    usable_folder,
    write_entries,
)
from .cache_keys import engine_key, text_digest, world_digest
from .disk import FileKind, file_kind
from .stored_results import StoredResults, results_that_hold, results_to_json
from .warm_start import Manifest

if TYPE_CHECKING:
    from .files import ParsedFile

Texts = dict[str, tuple[str | None, str | None]]
"""Path -> (text, why it was not read), as `read_text` returns them."""


@dataclass
class CacheReport:
    """What one load took from the cache: for tests, benchmarks and curious users."""

    reused: list[str] = field(default_factory=list)
    parsed: list[str] = field(default_factory=list)
    """Files with an entry-worthy text that had no valid entry (the host configuration is never cached)."""
    written: bool = False
    results_reused: bool = False
    """The whole check's results were reused: nothing they were computed from changed."""


class FactsCache:
    """The cache of one workspace root for one load: `lookup` before parsing, `save` after."""

    def __init__(self, root: str, folder: str, engine: str) -> None:
        self.root = os.path.abspath(root)
        self.folder = folder
        self.engine = engine
        self._read: dict[str, Any] | None = None
        self._kept: dict[str, Any] = {}
        self._pending: dict[str, str] = {}  # path -> digest of a text parsed in this load
        self._digests: dict[str, str] = {}
        self._stale = False
        self.report = CacheReport()
        self.manifest = Manifest(self.root)
        """The identities of what this load reads, stored with its results (`Manifest`)."""

    @classmethod
    def open(cls, root: str) -> FactsCache | None:
        """The cache of `root` (its entries are read on first use: stored results need none); None when
        caching is turned off."""
        if cache_disabled():
            return None
        folder = cache_folder(root)
        if not usable_folder(folder):
            return None
        return cls(root, folder, engine_key())

    @property
    def _entries(self) -> dict[str, Any]:
        if self._read is None:
            entries = read_entries(os.path.join(self.folder, FACTS_FILE), self.engine, os.path.realpath(self.root))
            self._read = entries if entries is not None else {}
            self._stale = entries is None
        return self._read

    def _key(self, path: str) -> str:
        prefix = self.root.rstrip(os.sep) + os.sep
        return path[len(prefix):] if path.startswith(prefix) else path

    def lookup(self, paths: Iterable[str], texts: Texts) -> tuple[dict[str, ParsedFile], Texts]:
        """The files whose cached facts hold for their current text (`texts`, as `read_text` returns them),
        and the texts of the others."""
        hits: dict[str, ParsedFile] = {}
        misses: Texts = {}
        with collector_paused():
            self._lookup(paths, texts, hits, misses)
        return hits, misses

    def _lookup(self, paths: Iterable[str], texts: Texts, hits: dict[str, ParsedFile], misses: Texts) -> None:
        from . import facts_json

        for path in paths:
            text, skipped = texts[path]
            kind = file_kind(path)
            if text is None or kind not in (FileKind.DEFINITION, FileKind.TEMPLATE):
                misses[path] = (text, skipped)
                continue
            key = self._key(path)
            digest = self.digest(path, text)
            entry = self._entries.get(key)
            parsed = None
            if isinstance(entry, list) and len(entry) == 2 and entry[0] == digest:
                try:
                    parsed = facts_json.decode(path, kind, text, entry[1])
                except Exception:  # noqa: BLE001 - an entry of the wrong shape is rebuilt, never trusted
                    parsed = None
            if parsed is None:
                misses[path] = (text, skipped)
                self._pending[path] = digest
                self.report.parsed.append(path)
            else:
                hits[path] = parsed
                self._kept[key] = entry
                self.report.reused.append(path)

    def digest(self, path: str, text: str) -> str:
        """`text_digest(text)`, computed once per file and load (the results key hashes them all)."""
        found = self._digests.get(path)
        if found is None:
            found = self._digests[path] = text_digest(text)
        return found

    # -- results of a whole check

    def world(self, paths: list[str], texts: Texts, settings: str) -> str:
        """The digest of everything a whole check reads besides the disk probes: the root, the files found
        (in order), each one's text digest or the reason it was not read, and `settings` (the lint options)."""
        for path in paths:
            text, skipped = texts[path]
            self.manifest.states[path] = self.digest(path, text) if text is not None else f"-{skipped}"
        return world_digest(self.root, settings, ((path, self.manifest.states[path]) for path in paths))

    def results(self, world: str) -> StoredResults | None:
        """The stored results of the last whole check when they were computed from `world` and every disk
        probe the checks made still gets the same answer; None otherwise (the checks run again)."""
        with collector_paused():
            body = read_entries(os.path.join(self.folder, RESULTS_FILE), self.engine, os.path.realpath(self.root))
            stored = results_that_hold(self.root, body, world)
        if stored is not None:
            self.report.results_reused = True
        return stored

    def save_results(self, world: str, stored: StoredResults) -> None:
        """Stores a whole check's results with the manifest of the files read (a cache that cannot be written
        is left alone)."""
        with collector_paused():
            body = results_to_json(world, stored)
            body["manifest"] = self.manifest.to_json()
            write_entries(self.folder, RESULTS_FILE, self.engine, os.path.realpath(self.root), body)

    def save(self, parsed_files: Iterable[ParsedFile]) -> None:
        """Stores the facts of the files parsed in this load; drops entries of files no longer there. Writes
        only when something changed; a cache that cannot be written is left alone (it is only a cache)."""
        with collector_paused():
            self._save(parsed_files)

    def _save(self, parsed_files: Iterable[ParsedFile]) -> None:
        from . import facts_json

        added = 0
        for parsed in parsed_files:
            digest = self._pending.get(parsed.path)
            if digest is None or parsed.skipped is not None:
                continue
            try:
                facts = facts_json.encode(parsed)
            except facts_json.Uncacheable:
                continue
            self._kept[self._key(parsed.path)] = [digest, facts]
            added += 1
        entries = self._entries  # read first: whether the file on disk is stale is known once it is read
        if not added and not self._stale and self._kept.keys() == entries.keys():
            return
        self.report.written = write_entries(self.folder, FACTS_FILE, self.engine, os.path.realpath(self.root), self._kept)
