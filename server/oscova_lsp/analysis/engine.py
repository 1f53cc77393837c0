"""The analysis engine's front door, shared by `oscova-lsp check` and the language server.

It imports neither pygls nor lsprotocol: results are plain `Diagnostic` values.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from .checks import Checker, LintOptions, apply_lint
from .diagnostics import Diagnostic
from .files import ParsedFile, parse_file
from .workspace import Workspace, find_root, read_text

PARALLEL_THRESHOLD = 400
"""Below this many files, worker processes cost more than they save."""


class Analysis:
    """One workspace root, its parsed files and its diagnostics, kept current by `update`."""

    def __init__(self, root: str, lint: LintOptions | None = None) -> None:
        self.workspace = Workspace(root)
        self.checker = Checker(self.workspace)
        self.lint = lint

    @property
    def root(self) -> str:
        return self.workspace.root

    def load(self, *, jobs: int | None = None) -> None:
        paths = self.workspace.discover()
        workers = jobs if jobs is not None else (os.cpu_count() or 1)
        if workers > 1 and len(paths) >= PARALLEL_THRESHOLD:
            self.workspace.load(_parse_parallel(paths, workers))
        else:
            self.workspace.load()

    def update(self, path: str, text: str | None) -> set[str]:
        """Applies one file's new text (None: deleted); returns the files to re-check."""
        return self.workspace.update(path, text)

    def diagnostics(self, path: str) -> list[Diagnostic]:
        path = os.path.abspath(path)
        parsed = self.workspace.files.get(path)
        if parsed is None:
            return []
        try:
            found = self.checker.check(path)
        except RecursionError:
            return []
        return sorted(apply_lint(found, parsed, self.workspace.host, self.lint), key=Diagnostic.sort_key)

    def all_diagnostics(self, under: Iterable[str] | None = None) -> dict[str, list[Diagnostic]]:
        prefixes = [os.path.abspath(p) for p in under] if under else None
        out: dict[str, list[Diagnostic]] = {}
        for path in sorted(self.workspace.files):
            if prefixes and not any(path == p or path.startswith(p.rstrip(os.sep) + os.sep) for p in prefixes):
                continue
            out[path] = self.diagnostics(path)
        return out


def _parse_one(path: str) -> ParsedFile:
    return parse_file(path, *read_text(path))


def _parse_parallel(paths: list[str], workers: int) -> list[ParsedFile]:
    from concurrent.futures import ProcessPoolExecutor

    chunk = max(16, len(paths) // (workers * 8))
    try:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(_parse_one, paths, chunksize=chunk))
    except (OSError, RuntimeError):  # no process support here: parse in this process
        return [_parse_one(path) for path in paths]


def analysis_for(path: str, lint: LintOptions | None = None) -> Analysis:
    """The analysis of the workspace containing `path` (its root found by `oscova.toml`)."""
    absolute = os.path.abspath(path)
    root = find_root(absolute)
    if root is None:
        root = absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
    return Analysis(root, lint)
