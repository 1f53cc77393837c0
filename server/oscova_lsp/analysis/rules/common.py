"""What the rule families' checks share: the workspace being checked, and where findings point."""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar, cast

from ..files import DefinitionFile
from ..text import LineIndex, Range
from ..workspace import LISTED_USES, Workspace
from ..yaml_source import Path

T = TypeVar("T")


class Document(Protocol):
    """A YAML or TOML document with the span of every key and value."""

    def value_range(self, path: Path) -> Range | None: ...

    def best_range(self, path: Path) -> Range: ...


def value_place(doc: Document, path: Path, around: Path | None = None) -> Range:
    """Where a finding about the value at `path` points: that value, else the best range of `around` (by
    default `path` itself: the nearest enclosing value that exists)."""
    return doc.value_range(path) or doc.best_range(path if around is None else around)


def first_line(lines: LineIndex) -> Range:
    """The first line with text: where a finding about a whole file points."""
    for n in range(lines.line_count):
        if lines.line_text(n).strip():
            return lines.line_range(n)
    return Range.of(0, 0, 0, 0)


def listed(items: list[str], total: int | None = None) -> str:
    """`a, b, c` — or the first `LISTED_USES` and how many more of `total` (repeats named once)."""
    unique = list(dict.fromkeys(items))
    total = len(unique) if total is None else total
    shown = unique[:LISTED_USES]
    return ", ".join(shown) + (f" and {total - len(shown)} more" if total > len(shown) else "")


class Context:
    """The workspace one checker checks against, and what its checks compute once for many files."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self._memo: dict[str, tuple[Hashable, Any]] = {}

    def rel(self, path: str) -> str:
        """A path as messages show it: relative to the workspace root."""
        return os.path.relpath(path, self.ws.root)

    def id_range(self, path: str) -> Range:
        """Where the definition at `path` writes its id (related information points there)."""
        parsed = self.ws.files.get(path)
        if isinstance(parsed, DefinitionFile) and parsed.doc is not None:
            return value_place(parsed.doc, ("id",), ())
        return Range.of(0, 0, 0, 0)

    def memo(self, key: str, version: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, kept under `key` until `version` changes (a fork of the analysis starts afresh)."""
        found = self._memo.get(key)
        if found is None or found[0] != version:
            found = self._memo[key] = (version, compute())
        return cast(T, found[1])
