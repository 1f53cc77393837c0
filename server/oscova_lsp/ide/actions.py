"""Code actions: the quick fixes the engine attaches to diagnostics (docs/rules.md names each)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..analysis.diagnostics import Diagnostic
from ..analysis.text import Range
from .model import CodeAction


def _overlaps(a: Range, b: Range) -> bool:
    return not (a.end < b.start or b.end < a.start)


def code_actions(diagnostics: Sequence[Diagnostic], within: Range,
                 only: Iterable[tuple[str, Range]] | None = None) -> list[CodeAction]:
    """Quick fixes of the diagnostics touching `within`; `only`: (code, range) pairs the client sent."""
    wanted = set(only) if only is not None else None
    out: list[CodeAction] = []
    for diag in diagnostics:
        if not diag.fixes:
            continue
        if wanted is not None:
            if (diag.code, diag.range) not in wanted:
                continue
        elif not _overlaps(diag.range, within):
            continue
        for index, fix in enumerate(diag.fixes):
            out.append(CodeAction(fix.title, fix.edits, diag.code, diag.range, preferred=index == 0))
    return out
