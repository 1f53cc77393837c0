"""The warm start: a root's stored results checked by the identities of what they were computed from, so a
start (the language server's first milliseconds, `oscova-lsp check` of an unchanged root) answers without
reading, let alone parsing, the files.

A load that will store its results records a `Manifest`: the identity (size, times, inode: `paths.identity`)
of each file it reads, taken before the file is read, with the file's state, and of each folder the
discovery lists (taken before it is listed) and each nested workspace it leaves out, with the `pyproject.toml`
they hold (whose text decides whether a folder is a workspace of its own). A later start (`check_by_stat`)
takes the identities again: every folder's unchanged means the discovery finds the same files (a name added,
removed or renamed in a folder changes its times); a file's unchanged means its recorded state holds, and
only the others are read. An identity too recent to be believed (git's "racy" rule: its times not older than
the start of the reading, less `RACY_NS`) is recorded as unknown: that file is read every time, that folder
sends the start to the full reading.

It imports no parser and no pydantic model, nor does any module it imports: a start checks the stored results
before any of them loads.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from oscova_runtime.paths import Boundary, Identity, identity

from .cache_files import (
    RESULTS_FILE,
    cache_disabled,
    cache_folder,
    collector_paused,
    read_entries,
    usable_folder,
)
from .cache_keys import engine_key, text_digest, world_digest
from .disk import read_text
from .stored_results import StoredResults, results_that_hold

RACY_NS = 100_000_000
"""An identity whose times are not this much older than the start of the reading that recorded it is not
believed (git's "racy" rule): a change within the file system's timestamp granularity, or the kernel clock's
tick, keeps size and times equal. Times in whole seconds (a file system that keeps no more) get `RACY_COARSE_NS`."""
RACY_COARSE_NS = 3_000_000_000


def _racy(found: Identity, started: int) -> bool:
    _, mtime, ctime, _, _ = found
    slack = RACY_COARSE_NS if mtime % 1_000_000_000 == 0 or ctime % 1_000_000_000 == 0 else RACY_NS
    return max(mtime, ctime) >= started - slack


class Manifest:
    """The identities of what one load read (see above), filled while it reads."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.started = time.time_ns()
        self.boundary = Boundary(root)
        self.listing: dict[str, Identity | None] = {}
        self.nested: list[str] = []
        self.files: dict[str, Identity | None] = {}
        self.states: dict[str, str] = {}
        """Each file's state as `world_digest` takes it (filled by `FactsCache.world`)."""

    def listed(self, folder: str, nested: bool) -> None:
        """`discovery.discover`'s call before it lists `folder` (or leaves out the nested workspace `folder`)."""
        self.listing[folder] = self._believed(folder)
        pyproject = os.path.join(folder, "pyproject.toml")
        found = self._believed(pyproject)
        if found is not None or os.path.lexists(pyproject):
            self.listing[pyproject] = found
        if nested:
            self.nested.append(folder)

    def reading(self, path: str) -> None:
        """Before `path` is read."""
        self.files[path] = self._believed(path)

    def _believed(self, path: str) -> Identity | None:
        found = identity(path, root=self.boundary)
        return None if found is None or _racy(found, self.started) else found

    def to_json(self) -> dict[str, Any]:
        key = self._key
        return {"listing": [[key(p), *(found or ())] for p, found in self.listing.items()],
                "nested": [key(p) for p in self.nested],
                "files": [[key(p), self.states[p], *(self.files.get(p) or ())] for p in self.states]}

    def _key(self, path: str) -> str:
        return os.path.relpath(path, self.root) if path != self.root else ""


@dataclass
class StatCheck:
    """What `check_by_stat` found."""

    stored: StoredResults | None
    """The stored results, when they hold for the files as they are now."""
    states: dict[str, str] = field(default_factory=dict)
    """Each file's state (text digest, or "-" and why it was not read), by path."""
    nested: list[str] | None = None
    """The nested workspaces the discovery would leave out, when it is known to find the same files."""
    decided: bool = True
    """False: the identities cannot tell (a folder changed or too recent): the files must be read to know."""


def check_by_stat(root: str, settings: str, *, decode: bool = True) -> StatCheck:
    """The stored results of `root`'s last whole check (its lint options as `settings`) when the identities of
    the files and folders they were computed from tell that they hold, reading only the files whose identity
    changed or was not believed, parsing nothing and importing no parser. `decode`: their diagnostics as values,
    else in their stored form (`StoredResults.rows`)."""
    root = os.path.abspath(root)
    if cache_disabled():
        return StatCheck(None)
    folder = cache_folder(root)
    if not usable_folder(folder):
        return StatCheck(None)
    with collector_paused():
        body = read_entries(os.path.join(folder, RESULTS_FILE), engine_key(), os.path.realpath(root))
        if body is None:
            return StatCheck(None)
        try:
            found = _by_stat(root, body["manifest"])
        except (KeyError, TypeError, ValueError):  # no manifest, or one of the wrong shape: read to know
            return StatCheck(None, decided=False)
        if found is None:
            return StatCheck(None, decided=False)
        states, nested, inside = found
        stored = results_that_hold(root, body, world_digest(root, settings, states.items()), inside, decode)
    return StatCheck(stored, states, nested)


def _by_stat(root: str, manifest: dict[str, Any]) -> tuple[dict[str, str], list[str], frozenset[str]] | None:
    """The state of every file the discovery would find, the nested workspaces it would leave out and the
    files whose identity was taken (so inside the root); None when a folder's identity changed or was not
    believed."""
    boundary = Boundary(root)
    prefix = root.rstrip(os.sep) + os.sep

    def place(key: Any) -> str:
        if type(key) is not str or os.path.isabs(key) or ".." in key.split(os.sep):
            raise ValueError("path")  # a key names a path under the root, as `Manifest` wrote it
        return prefix + key if key else root

    for key, *recorded in manifest["listing"]:
        if not recorded or list(identity(place(key), root=boundary) or ()) != recorded:
            return None
    states: dict[str, str] = {}
    inside: set[str] = set()
    for key, state, *recorded in manifest["files"]:
        path = place(key)
        if type(state) is not str:
            raise ValueError("state")
        now = identity(path, root=boundary)
        if now is not None:
            inside.add(path)
        if not recorded or list(now or ()) != recorded:
            text, skipped = read_text(path, boundary)
            state = text_digest(text) if text is not None else f"-{skipped}"
        states[path] = state
    return states, [place(key) for key in manifest["nested"]], frozenset(inside)
