"""The analysis host: the one owner of the workspace state, after rust-analyzer's `AnalysisHost`.

It holds the editor's folders, one `Analysis` per workspace root, and the open documents (an open buffer
takes precedence over the file on disk). Changes go in through its methods (`open`, `change`, `close`,
`disk_changed`, `add_folder`, `set_lint`, `install`), each returning the files whose diagnostics may
change; readers take a `Snapshot`, which later changes never alter: the per-root analysis a live snapshot
holds is copied before it is changed (copy on write), so a snapshot taken before an edit keeps answering
the state before it. Diagnostics, every editor feature and the run service read snapshots; the CLI checks
each root through the host (`check`).

Loading a root (`load`) runs off the caller's thread on a fresh `Analysis` that shares nothing; `install`
swaps it in with the open documents and the disk changes seen meanwhile applied on top. A snapshot says
which roots are loaded: until its root is, a file's cross-file answers are partial (`Snapshot.is_loaded`).

No pygls or lsprotocol here: the language server (`oscova_lsp.lsp`) drives the host over the protocol.
"""

from __future__ import annotations

import logging
import os
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from oscova_runtime.paths import is_inside

from .cache_keys import text_digest
from .diagnostics import Diagnostic
from .discovery import workspace_roots
from .disk import NEVER_SCANNED, SCAN_DELAY_ENV, SCAN_GATE_ENV, Roots, read_text
from .engine import Analysis
from .files import TOO_LARGE, ParsedFile, file_kind
from .lint import LintOptions
from .stored_results import StoredResults
from .template_prefetch import TemplatePrefetch

logger = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class OpenDocument:
    """An open buffer: its text and the editor's version of it."""

    text: str
    version: int | None


class Snapshot:
    """The workspace state at one moment: later changes to the host do not alter it."""

    def __init__(self, analyses: dict[str, Analysis], loaded: frozenset[str], documents: dict[str, OpenDocument],
                 roots: Roots) -> None:
        self._analyses = analyses
        self._documents = documents
        self._roots = roots
        self.loaded = loaded
        """The roots read completely (the others hold only their open documents so far)."""

    @property
    def analyses(self) -> Mapping[str, Analysis]:
        """One analysis per workspace root, by root."""
        return MappingProxyType(self._analyses)

    @property
    def documents(self) -> Mapping[str, OpenDocument]:
        """The open documents, by path."""
        return MappingProxyType(self._documents)

    @property
    def folders(self) -> tuple[str, ...]:
        return self._roots.folders

    def root_of(self, path: str) -> str:
        """The workspace root holding the file `path`."""
        return self._roots.root_of(path)

    def root_of_folder(self, folder: str) -> str:
        """The workspace root holding the folder `folder` (the folder itself when it is one)."""
        return self._roots.root_of_folder(folder)

    def is_loaded(self, path: str) -> bool:
        """Whether the root holding `path` was read completely."""
        return self.root_of(path) in self.loaded

    def analysis(self, path: str) -> Analysis | None:
        """The analysis of the root holding `path`."""
        return self._analyses.get(self.root_of(path))

    def parsed(self, path: str) -> tuple[Analysis, ParsedFile] | None:
        if file_kind(path) is None:
            return None
        analysis = self.analysis(path)
        parsed = analysis.workspace.files.get(path) if analysis is not None else None
        return (analysis, parsed) if analysis is not None and parsed is not None else None

    def diagnostics(self, path: str) -> list[Diagnostic]:
        found = self.parsed(path)
        return found[0].diagnostics(path) if found is not None else []

    def all_files(self) -> list[str]:
        return sorted(p for a in self._analyses.values() for p in a.workspace.files)

    def version(self, path: str) -> int | None:
        """The editor's version of an open document (None when it is not open)."""
        document = self._documents.get(path)
        return document.version if document is not None else None

    def unsaved(self, paths: Iterable[str]) -> list[str]:
        """The paths open in the editor with text that differs from the file on disk, sorted."""
        out = []
        for path in sorted(set(paths)):
            document = self._documents.get(path)
            if document is not None and read_text(path)[0] != document.text:
                out.append(path)
        return out


class AnalysisHost:
    """Owns the documents and the analyses of every workspace root; hands out `Snapshot`s."""

    def __init__(self, folders: Iterable[str] = (), lint: LintOptions | None = None,
                 on_change: Callable[[set[str]], None] | None = None) -> None:
        self._roots = Roots(folders)
        self._lint = lint
        self._analyses: dict[str, Analysis] = {}
        self._loaded: set[str] = set()
        self._documents: dict[str, OpenDocument] = {}
        self._unanalysed: dict[str, str] = {}
        """Edits taken (`change`) and not analysed yet: the next snapshot, or any other change, analyses them."""
        self._on_change = on_change
        """Told the files an edit affected once it is analysed (the publisher: their diagnostics may differ)."""
        self._disk_changes_while_loading: dict[str, set[str]] = {}
        self._snapshots: weakref.WeakSet[Snapshot] = weakref.WeakSet()
        self.changes = 0
        """Counts every change to an analysis (an edit, a disk change, a root read): what was worked out from the
        workspace at one count holds while the count stays."""

    # ------------------------------------------------------------------------------------------ reading

    def snapshot(self) -> Snapshot:
        """The current state, every edit taken so far analysed, unaltered by later changes."""
        self._analyse_edits()
        snapshot = Snapshot(dict(self._analyses), frozenset(self._loaded), dict(self._documents), self._roots)
        self._snapshots.add(snapshot)
        return snapshot

    @property
    def folders(self) -> tuple[str, ...]:
        return self._roots.folders

    @property
    def lint(self) -> LintOptions | None:
        return self._lint

    def root_of(self, path: str) -> str:
        """The workspace root holding the file `path`."""
        return self._roots.root_of(path)

    def root_of_folder(self, folder: str) -> str:
        """The workspace root holding the folder `folder` (the folder itself when it is one)."""
        return self._roots.root_of_folder(folder)

    def is_loaded(self, root: str) -> bool:
        return root in self._loaded

    def is_open(self, path: str) -> bool:
        return path in self._documents

    def version(self, path: str) -> int | None:
        document = self._documents.get(path)
        return document.version if document is not None else None

    @staticmethod
    def is_tracked(path: str) -> bool:
        """A definition, template or host configuration (the files the analysis reads)."""
        return file_kind(path) is not None

    # -------------------------------------------------------------------------------------------- roots

    def discover_roots(self) -> list[str]:
        """Every workspace root under the editor's folders: each folder's own root plus nested folders
        holding their own `oscova.toml` (the same discovery as `oscova-lsp check FOLDER`)."""
        roots: list[str] = []
        for folder in self._roots.folders:
            roots += [root for root in workspace_roots(folder) if root not in roots]
        return roots

    def add_folder(self, folder: str) -> str | None:
        """An editor folder added; returns the root it brings in (None when the host had the folder)."""
        folder = os.path.abspath(folder)
        if folder in self._roots.folders:
            return None
        self._analyse_edits()  # each under the root it was taken in
        self._roots = Roots((*self._roots.folders, folder))
        root = self._roots.root_of_folder(folder)
        self._ensure(root)
        return root

    def ensure_root(self, root: str) -> None:
        """Makes `root` known (empty until `install`): its open documents are analysed meanwhile."""
        self._ensure(root)

    def load(self, root: str, like: Analysis | None = None) -> Analysis:
        """A freshly read analysis of `root`: call it in a worker thread (it shares nothing with the host).
        `like`: an analysis of the same root (`load_first`'s) whose parsed files are reused for the same text.

        A large workspace parses its templates in worker processes (`Analysis.load`), started by a fork
        server: forking a process whose threads hold locks can deadlock the children. `OSCOVA_LSP_JOBS=N`
        sets the number of processes (1: parse in this thread).
        """
        delay = os.environ.get(SCAN_DELAY_ENV)
        if delay:
            time.sleep(float(delay))
        gate = os.environ.get(SCAN_GATE_ENV)
        deadline = time.monotonic() + 120
        while gate and not os.path.exists(gate) and time.monotonic() < deadline:
            time.sleep(0.02)
        analysis = Analysis(root, self._lint)
        try:
            workers = int(os.environ.get("OSCOVA_LSP_JOBS", str(os.cpu_count() or 1)))
        except ValueError:
            workers = os.cpu_count() or 1
        analysis.load(jobs=workers, fork_server=True, like=like)
        return analysis

    def load_first(self, root: str, wanted: Iterable[str], documents: Mapping[str, str],
                   like: Analysis | None = None) -> tuple[Analysis, dict[str, list[Diagnostic]]]:
        """What the files `wanted` of `root` need read, and their diagnostics, final (`Analysis.load_first`), before
        the whole root is: call it in a worker thread, with the open documents' texts (`documents`) taken on the
        host's. The analysis is not installed (requests still wait for the whole root); a later `load(root,
        like=...)` reuses what it parsed."""
        analysis = Analysis(root, self._lint)
        final = analysis.load_first(wanted, documents, like=like)
        return analysis, {path: analysis.diagnostics(path) for path in sorted(final)}

    def check(self, root: str, *, jobs: int | None = None, cache: bool = True, under: Iterable[str] | None = None,
              prefetch: TemplatePrefetch | None = None) -> tuple[dict[str, list[Diagnostic]], list[str]]:
        """A one-shot check of `root` (`oscova-lsp check`, in this thread): its diagnostics (those under `under`)
        and the notices of files not read. The root is loaded and installed, unless the stored results of the
        last check were reused (`Analysis.check_all`: nothing they came from changed), which needs no parse.
        `prefetch`: the root's templates already sent to workers."""
        self._ensure(root)
        analysis = Analysis(root, self._lint)
        found = analysis.check_all(jobs=jobs, cache=cache, under=under, prefetch=prefetch)
        if analysis.workspace.files:
            self.install(root, analysis)
        return found, list(analysis.workspace.notices)

    def stored_results(self, root: str) -> tuple[StoredResults, dict[str, str]] | None:
        """The stored results of `root`'s last whole check when they hold for its files on disk now, with each
        file's state (`Analysis.stored_results`); call it in a worker thread. None: they do not, or no cache."""
        return Analysis(root, self._lint).stored_results()

    def overlays(self, root: str, analysis: Analysis | None, states: dict[str, str] | None = None) -> bool:
        """Whether `install` would change what a freshly loaded `analysis` of `root` (or the files whose states,
        text digests, are `states`) says: an open document whose text is not the file's, a disk change seen
        while it loaded, or other lint options. When not, diagnostics computed from the files hold for the
        installed state."""
        if self._disk_changes_while_loading.get(root) or analysis is not None and analysis.lint != self._lint:
            return True
        for path, document in self._documents.items():
            if self.root_of(path) != root or not self.is_tracked(path):
                continue
            if states is not None:
                if states.get(path) != text_digest(document.text):
                    return True
                continue
            parsed = analysis.workspace.files.get(path) if analysis is not None else None
            if (parsed.text if parsed is not None else None) != document.text:
                return True
        return False

    def install(self, root: str, analysis: Analysis) -> set[str]:
        """Makes a loaded analysis the root's own, with the open documents and the disk changes seen while it
        loaded applied on top. Returns every file of the root."""
        for path in [path for path in self._unanalysed if self.root_of(path) == root]:
            del self._unanalysed[path]  # the open documents' texts are applied below
        analysis.lint = self._lint
        self._analyses[root] = analysis
        self.changes += 1
        self._loaded.add(root)
        for path in sorted(self._disk_changes_while_loading.pop(root, set())):
            if path not in self._documents:
                analysis.workspace.update_from_disk(path)
        for path, document in self._documents.items():
            if self.root_of(path) == root and self.is_tracked(path):
                analysis.update(path, document.text)
        return set(analysis.workspace.files)

    def mark_loaded(self, root: str) -> set[str]:
        """A root whose reading failed: served from what it holds (its open documents) from now on."""
        self._ensure(root)
        return self.install(root, self._writable(root))

    # ------------------------------------------------------------------------------------------ changes

    def set_lint(self, lint: LintOptions | None) -> None:
        self._analyse_edits()
        self._lint = lint
        for root in list(self._analyses):
            self._writable(root).lint = lint

    def open(self, path: str, text: str, version: int | None) -> set[str]:
        """A document opened, analysed at once; returns the files to re-check."""
        self._unanalysed.pop(path, None)
        self._analyse_edits()
        self._documents[path] = OpenDocument(text, version)
        if not self.is_tracked(path):
            return set()
        return self._writable(self.root_of(path)).update(path, text)

    def change(self, path: str, text: str, version: int | None) -> None:
        """An edit, taken at once: the document's text and version are the new ones now; it is analysed at the
        next snapshot (or any other change), and the files it affected go to `on_change` then."""
        self._documents[path] = OpenDocument(text, version)
        if self.is_tracked(path):
            self._unanalysed[path] = text
            self.changes += 1

    def _analyse_edits(self) -> None:
        if not self._unanalysed:
            return
        edits, self._unanalysed = self._unanalysed, {}
        affected: set[str] = set()
        counted = self.changes  # each edit was counted when it was taken
        for path, text in edits.items():
            affected |= self._writable(self.root_of(path)).update(path, text) | {path}
        self.changes = counted
        if self._on_change is not None:
            self._on_change(affected)

    def still_skipped(self, path: str, version: int | None) -> bool:
        """True when an open document the analysis skipped as too large is still too large after an edit: only
        its version moves (its stored text stays the last one analysed, which is skipped alike)."""
        self._analyse_edits()
        document = self._documents.get(path)
        analysis = self._analyses.get(self.root_of(path))
        parsed = analysis.workspace.files.get(path) if analysis is not None else None
        if document is None or parsed is None or not (parsed.skipped or "").startswith(TOO_LARGE):
            return False
        self._documents[path] = OpenDocument(document.text, version)
        return True

    def close(self, path: str) -> set[str]:
        """Back to the file on disk (or gone, if it was never saved)."""
        self._unanalysed.pop(path, None)
        self._analyse_edits()
        self._documents.pop(path, None)
        if not self.is_tracked(path):
            return set()
        root = self.root_of(path)
        current = self._analyses.get(root)
        if current is None or not os.path.lexists(path) and path not in current.workspace.files:
            return set()
        return self._writable(root).workspace.update_from_disk(path) | {path}

    def disk_changed(self, path: str, deleted: bool) -> set[str]:
        """A file changed outside the editor; ignored while the editor has it open."""
        self._analyse_edits()
        if path in self._documents or not self.is_tracked(path) or self._never_scanned(path):
            return set()
        if os.path.basename(path) in ("oscova.toml", "pyproject.toml"):
            self._roots = Roots(self._roots.folders)  # where roots are may have changed
        root = self.root_of(path)
        pending = self._disk_changes_while_loading.get(root)
        if pending is not None and root not in self._loaded:
            pending.add(path)
        current = self._analyses.get(root)
        if (deleted or not os.path.lexists(path)) and (current is None or path not in current.workspace.files):
            return set()
        analysis = self._writable(root)
        if deleted or not os.path.lexists(path):
            return analysis.update(path, None)
        return analysis.workspace.update_from_disk(path)

    # ---------------------------------------------------------------------------------------- internals

    def _ensure(self, root: str) -> Analysis:
        analysis = self._analyses.get(root)
        if analysis is None:
            analysis = self._analyses[root] = Analysis(root, self._lint)
            self._disk_changes_while_loading.setdefault(root, set())
        return analysis

    def _writable(self, root: str) -> Analysis:
        """The root's analysis, copied first when a live snapshot holds it (copy on write)."""
        analysis = self._ensure(root)
        self.changes += 1  # every caller changes it
        if any(s._analyses.get(root) is analysis for s in list(self._snapshots)):
            analysis = self._analyses[root] = analysis.fork()
        return analysis

    def _never_scanned(self, path: str) -> bool:
        root = self.root_of(path)
        parts = os.path.relpath(path, root).split(os.sep)[:-1]
        if any(p in NEVER_SCANNED for p in parts):
            return True
        analysis = self._analyses.get(root)
        if analysis is not None:
            for excluded in analysis.workspace.host.host.exclude:
                if is_inside(os.path.dirname(path), os.path.normpath(os.path.join(root, excluded))):
                    return True
        return False
