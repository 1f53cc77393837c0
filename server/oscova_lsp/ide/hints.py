"""Inlay hints: after each template variable, the provider that binds it."""

from __future__ import annotations

from ..analysis.files import ParsedFile
from ..analysis.text import Range
from ..analysis.workspace import Workspace
from .model import InlayHint
from .queries import bindings_for, variable_occurrences


def inlay_hints(ws: Workspace, parsed: ParsedFile, within: Range | None = None) -> list[InlayHint]:
    occurrences = variable_occurrences(parsed)
    if not occurrences:
        return []
    bindings = bindings_for(ws, parsed)
    out = []
    for occ in occurrences:
        if within is not None and not (within.start <= occ.range.end <= within.end):
            continue
        found = [b for b in bindings.get(occ.name, ()) if b.binder.kind != "jinja"]  # globals go unlabelled
        if not found:
            continue
        renderers = sorted({b.renderer for b in found})
        tooltip = "\n".join(f"{b.renderer} ({b.use_label}): {b.meaning}" for b in found)
        out.append(InlayHint(occ.range.end, ": " + " | ".join(renderers), tooltip))
    return out
