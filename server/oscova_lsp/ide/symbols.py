"""Document symbols (a definition's keys, a template's references, the host's tables) and workspace
symbols (agents by id and name)."""

from __future__ import annotations

import re

from ..analysis.files import DefinitionFile, HostFile, ParsedFile, TemplateFile
from ..analysis.text import Range
from ..analysis.workspace import Workspace
from .model import ItemKind, Location, Symbol, WorkspaceSymbol
from .queries import reference_occurrences, variable_occurrences

_BLOCK_RE = re.compile(r"\{%-?\s*(block|macro)\s+([A-Za-z_]\w*)")


def document_symbols(ws: Workspace, parsed: ParsedFile) -> list[Symbol]:
    if isinstance(parsed, DefinitionFile):
        return _definition(parsed)
    if isinstance(parsed, TemplateFile):
        return _template(ws, parsed)
    if isinstance(parsed, HostFile):
        return _host(parsed)
    return []


def _definition(parsed: DefinitionFile) -> list[Symbol]:
    doc = parsed.doc
    if doc is None or not isinstance(doc.value, dict):
        return []
    children = []
    for path, span in doc.spans.items():
        if len(path) != 1 or span.key is None:
            continue
        whole = Range(span.key.start, max(span.value.end, span.key.end))
        value = doc.value.get(path[0])
        detail = str(value) if isinstance(value, str | int | float | bool) and not isinstance(value, str) or (
            isinstance(value, str) and "\n" not in value and len(value) < 60) else None
        kind = ItemKind.AGENT if path[0] == "id" else ItemKind.PROPERTY
        children.append(Symbol(str(path[0]), kind, whole, span.key, detail))
    if not children:
        return []
    whole = Range(children[0].range.start, max(c.range.end for c in children))
    name = parsed.raw_id or "agent"
    id_span = doc.span(("id",))
    selection = id_span.value if id_span is not None else children[0].selection_range
    display = parsed.definition.display_name if parsed.definition is not None else None
    return [Symbol(name, ItemKind.AGENT, whole, selection, display, children)]


def _template(ws: Workspace, parsed: TemplateFile) -> list[Symbol]:
    out: list[Symbol] = []
    lines = parsed.lines
    for m in _BLOCK_RE.finditer(parsed.text):
        rng = lines.range(m.start(), m.end())
        out.append(Symbol(m.group(2), ItemKind.FUNCTION if m.group(1) == "macro" else ItemKind.MODULE, rng,
                          lines.range(m.start(2), m.end(2)), m.group(1)))
    for ref in reference_occurrences(ws, parsed):
        out.append(Symbol(ref.reference.path, ItemKind.FILE, ref.range, ref.range, ref.reference.kind))
    seen: set[str] = set()
    for occ in variable_occurrences(parsed):
        if occ.name not in seen:
            seen.add(occ.name)
            out.append(Symbol(occ.name, ItemKind.VARIABLE, occ.range, occ.range, "variable"))
    out.sort(key=lambda s: (s.range.start.line, s.range.start.character))
    return out


def _host(parsed: HostFile) -> list[Symbol]:
    doc = parsed.doc
    if doc is None:
        return []
    out: list[Symbol] = []
    tables: dict[tuple, Symbol] = {}
    for path, span in doc.spans.items():
        if span.key is None:
            continue
        is_header = span.value.start.line == span.key.start.line and span.value.start.character <= span.key.start.character
        if is_header:
            name = ".".join(str(p) for p in path)
            symbol = Symbol(name, ItemKind.TABLE, span.value, span.key)
            tables[path] = symbol
            out.append(symbol)
    for path, span in doc.spans.items():
        if span.key is None or path in tables:
            continue
        parent = tables.get(path[:-1])
        if parent is not None:
            parent.children.append(Symbol(str(path[-1]), ItemKind.PROPERTY, Range(span.key.start, span.value.end),
                                          span.key))
            parent.range = Range(parent.range.start, max(parent.range.end, span.value.end))
    return out


def workspace_symbols(ws: Workspace, query: str) -> list[WorkspaceSymbol]:
    """Agents whose id or name matches `query` (case-insensitive subsequence)."""
    needle = query.lower()
    out = []
    for parsed in ws.definitions():
        if not parsed.raw_id or parsed.doc is None:
            continue
        name = parsed.definition.name if parsed.definition is not None else None
        if not (_matches(needle, parsed.raw_id.lower()) or (name and _matches(needle, name.lower()))):
            continue
        rng = parsed.doc.value_range(("id",)) or Range.of(0, 0, 0, 0)
        label = parsed.raw_id if not name or name == parsed.raw_id else f"{parsed.raw_id} ({name})"
        out.append(WorkspaceSymbol(label, ItemKind.AGENT, Location(parsed.path, rng), name))
    out.sort(key=lambda s: s.name)
    return out


def _matches(needle: str, haystack: str) -> bool:
    if not needle:
        return True
    it = iter(haystack)
    return all(ch in it for ch in needle)
