"""The server's state without the protocol: one `Analysis` per workspace root, the open documents that
take precedence over disk, and exactly which files a change re-checks."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..analysis.checks import LintOptions
from ..analysis.diagnostics import Diagnostic
from ..analysis.engine import Analysis
from ..analysis.files import TOO_LARGE, ParsedFile, file_kind
from ..analysis.workspace import NEVER_SCANNED, find_root, workspace_roots


@dataclass
class OpenDocument:
    text: str
    version: int | None


class Session:
    def __init__(self, folders: list[str], lint: LintOptions | None = None) -> None:
        self.folders = [os.path.abspath(f) for f in folders]
        self.lint = lint
        self.analyses: dict[str, Analysis] = {}
        self.loaded: set[str] = set()
        self.open: dict[str, OpenDocument] = {}
        self.analysed_version: dict[str, int | None] = {}
        self._disk_changes_while_loading: dict[str, set[str]] = {}
        self._root_cache: dict[str, str | None] = {}

    # ------------------------------------------------------------------------------------------ roots

    def discover_roots(self) -> list[str]:
        """Every workspace root under the editor's folders: each folder's own root plus nested
        folders holding their own `oscova.toml`."""
        roots: list[str] = []
        for folder in self.folders:  # the same discovery as `oscova-lsp check FOLDER`
            roots += [root for root in workspace_roots(folder) if root not in roots]
        return roots

    def root_of(self, path: str) -> str:
        directory = os.path.dirname(path)
        if directory not in self._root_cache:
            self._root_cache[directory] = find_root(directory)
        found = self._root_cache[directory]
        if found is not None:
            return found
        inside = [f for f in self.folders if path.startswith(f.rstrip(os.sep) + os.sep)]
        return max(inside, key=len) if inside else directory

    def analysis_for(self, path: str) -> tuple[Analysis, bool]:
        """The analysis a file belongs to; True when it was just created (and still needs loading)."""
        root = self.root_of(path)
        analysis = self.analyses.get(root)
        if analysis is not None:
            return analysis, False
        analysis = Analysis(root, self.lint)
        self.analyses[root] = analysis
        self._disk_changes_while_loading.setdefault(root, set())
        return analysis, True

    def ensure_root(self, root: str) -> Analysis:
        if root not in self.analyses:
            self.analyses[root] = Analysis(root, self.lint)
            self._disk_changes_while_loading.setdefault(root, set())
        return self.analyses[root]

    def forget_root_cache(self) -> None:
        self._root_cache.clear()

    def load(self, root: str) -> Analysis:
        """A freshly loaded analysis of `root` (run in a worker thread: it shares nothing with the live one).

        A large workspace parses its templates in worker processes (`Analysis.load`), started by a fork
        server: forking this process directly, with the server's threads holding locks, can deadlock the
        children. `OSCOVA_LSP_JOBS=N` sets the number of processes (1: parse in this thread).
        """
        analysis = Analysis(root, self.lint)
        try:
            workers = int(os.environ.get("OSCOVA_LSP_JOBS", str(os.cpu_count() or 1)))
        except ValueError:
            workers = os.cpu_count() or 1
        analysis.load(jobs=workers, mp_context=_fork_server())
        return analysis

    def install(self, root: str, analysis: Analysis) -> set[str]:
        """Replaces the live analysis of `root` by a loaded one; open documents and disk changes seen while it
        loaded are applied on top. Returns every file of the root."""
        analysis.lint = self.lint
        self.analyses[root] = analysis
        self.loaded.add(root)
        for path in sorted(self._disk_changes_while_loading.pop(root, set())):
            if path not in self.open:
                analysis.workspace.update_from_disk(path)
        for path, doc in self.open.items():
            if self.root_of(path) == root:
                analysis.update(path, doc.text)
                self.analysed_version[path] = doc.version
        return set(analysis.workspace.files)

    def set_lint(self, lint: LintOptions | None) -> None:
        self.lint = lint
        for analysis in self.analyses.values():
            analysis.lint = lint

    # ---------------------------------------------------------------------------------------- changes

    def is_tracked(self, path: str) -> bool:
        return file_kind(path) is not None

    def apply_open(self, path: str, text: str, version: int | None) -> set[str]:
        """An open document's current text; returns the files to re-check."""
        self.open[path] = OpenDocument(text, version)
        if not self.is_tracked(path):
            return set()
        analysis, _ = self.analysis_for(path)
        self.analysed_version[path] = version
        return analysis.update(path, text)

    def still_skipped(self, path: str, version: int | None) -> bool:
        """True when an open document the analysis skipped as too large is still too large after an edit:
        only its version moves (its stored text stays the last one analysed, which is skipped alike)."""
        document = self.open.get(path)
        found = self.parsed(path)
        if document is None or found is None or not (found[1].skipped or "").startswith(TOO_LARGE):
            return False
        document.version = version
        self.analysed_version[path] = version
        return True

    def close(self, path: str) -> set[str]:
        """Back to the file on disk (or gone, if it was never saved)."""
        self.open.pop(path, None)
        self.analysed_version.pop(path, None)
        if not self.is_tracked(path):
            return set()
        analysis, _ = self.analysis_for(path)
        if not os.path.lexists(path) and path not in analysis.workspace.files:
            return set()
        return analysis.workspace.update_from_disk(path) | {path}

    def disk_changed(self, path: str, deleted: bool) -> set[str]:
        """A file changed outside the editor; ignored while the editor has it open."""
        if path in self.open or not self.is_tracked(path) or self._never_scanned(path):
            return set()
        if os.path.basename(path) in ("oscova.toml", "pyproject.toml"):
            self.forget_root_cache()
        root = self.root_of(path)
        pending = self._disk_changes_while_loading.get(root)
        if pending is not None and root not in self.loaded:
            pending.add(path)
        analysis, _ = self.analysis_for(path)
        if deleted or not os.path.lexists(path):
            if path not in analysis.workspace.files:
                return set()
            return analysis.update(path, None)
        return analysis.workspace.update_from_disk(path)

    def _never_scanned(self, path: str) -> bool:
        root = self.root_of(path)
        rel = os.path.relpath(path, root)
        parts = rel.split(os.sep)[:-1]
        if any(p in NEVER_SCANNED for p in parts):
            return True
        analysis = self.analyses.get(root)
        if analysis is not None:
            for excluded in analysis.workspace.host.host.exclude:
                base = os.path.normpath(os.path.join(root, excluded))
                if path.startswith(base.rstrip(os.sep) + os.sep):
                    return True
        return False

    # ---------------------------------------------------------------------------------------- queries

    def parsed(self, path: str) -> tuple[Analysis, ParsedFile] | None:
        if not self.is_tracked(path):
            return None
        analysis, _ = self.analysis_for(path)
        parsed = analysis.workspace.files.get(path)
        if parsed is None:
            return None
        return analysis, parsed

    def diagnostics(self, path: str) -> list[Diagnostic]:
        found = self.parsed(path)
        if found is None:
            return []
        return found[0].diagnostics(path)

    def all_files(self) -> list[str]:
        return sorted(p for a in self.analyses.values() for p in a.workspace.files)


def _fork_server() -> object | None:
    import multiprocessing

    try:
        return multiprocessing.get_context("forkserver")
    except ValueError:  # a platform without it: the engine's default start method
        return None



class LargeText:
    """The text of an open document too large to analyse (SPEC §9: skipped with a notice), kept in blocks so
    that an edit costs a block or two, not a join and split of the whole document (pygls's own document does
    that on every keystroke: 180–310 ms for 50 MB). Positions are LSP's: lines and UTF-16 code units."""

    BLOCK = 1 << 16

    def __init__(self, text: str, language_id: str = "") -> None:
        self.language_id = language_id
        self._blocks: list[str] = []
        self._newlines: list[int] = []
        self._set_blocks(0, 0, text)

    def __len__(self) -> int:
        return sum(len(b) for b in self._blocks)

    def text(self) -> str:
        return "".join(self._blocks)

    def replace(self, start: tuple[int, int] | None, end: tuple[int, int] | None, text: str) -> None:
        """Applies one content change: a range (line, UTF-16 character) to replace, or None for all of it."""
        if start is None or end is None:
            self._blocks, self._newlines = [], []
            self._set_blocks(0, 0, text)
            return
        first, at = self._locate(*start)
        last, upto = self._locate(*end)
        if (last, upto) < (first, at):
            (first, at), (last, upto) = (last, upto), (first, at)
        merged = self._blocks[first][:at] + text + self._blocks[last][upto:]
        self._set_blocks(first, last + 1, merged)

    def _set_blocks(self, first: int, stop: int, text: str) -> None:
        # Pieces of one to two blocks: a block is split only once it doubled, so edits never fragment the text.
        count = max(1, len(text) // self.BLOCK)
        size = -(-len(text) // count)
        pieces = [text[i:i + size] for i in range(0, len(text), size)] if text else []
        if not pieces and not self._blocks[:first] + self._blocks[stop:]:
            pieces = [""]
        self._blocks[first:stop] = pieces
        self._newlines[first:stop] = [p.count("\n") for p in pieces]

    def _locate(self, line: int, character: int) -> tuple[int, int]:
        """(block, index in it) of a position; past the end of a line or of the text, its end."""
        index, offset = 0, 0
        if line > 0:  # the block holding the line-th newline, and the index just after it
            remaining = line
            for index, count in enumerate(self._newlines):
                if remaining <= count:
                    block = self._blocks[index]
                    offset = -1
                    for _ in range(remaining):
                        offset = block.index("\n", offset + 1)
                    offset += 1
                    break
                remaining -= count
            else:
                return len(self._blocks) - 1, len(self._blocks[-1])
        units = 0
        while index < len(self._blocks):  # walk the line to the character (a line may cross blocks)
            block = self._blocks[index]
            stop = block.find("\n", offset)
            stop = len(block) if stop == -1 else stop
            segment = block[offset:stop]
            if len(segment) + units >= character and _bmp_only(segment[:character - units]):
                return index, offset + character - units
            for char in segment:
                width = 2 if ord(char) > 0xFFFF else 1
                if units + width > character:
                    return index, offset
                units += width
                offset += 1
            if stop < len(block) or index == len(self._blocks) - 1:
                return index, offset
            index, offset = index + 1, 0
        return len(self._blocks) - 1, len(self._blocks[-1])


def _bmp_only(text: str) -> bool:
    return not text or max(text) <= "\uffff"
