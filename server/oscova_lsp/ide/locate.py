"""What sits at a position: an agent id, a tool, a provider type, a variable, a template path, a key."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..analysis.files import DefinitionFile, HostFile, ParsedFile, TemplateFile
from ..analysis.text import Position, Range
from ..analysis.workspace import Workspace
from ..analysis.yaml_source import Path
from .queries import reference_occurrences, unquoted, variable_occurrences

_CODE_RE = re.compile(r"OSC\d{3}")


@dataclass(frozen=True, slots=True)
class Target:
    """What the cursor is on.

    kind: `agent` (value: the id; declaration True on `id:`), `tool`, `provider`, `model`, `template`
    (value: the resolved path), `variable`, `key` (a definition's top-level key), `code` (an OSC code).
    """

    kind: str
    value: str
    range: Range
    declaration: bool = False
    raw: str | None = None


def target_at(ws: Workspace, parsed: ParsedFile, pos: Position) -> Target | None:
    """What is at `pos`; never a template outside the workspace root (OSC040 says why): nothing offers it,
    links to it or reads it."""
    found = _target_at(ws, parsed, pos)
    if found is not None and found.kind == "template" and not ws.inside(found.value):
        return None
    return found


def _target_at(ws: Workspace, parsed: ParsedFile, pos: Position) -> Target | None:
    for occ in variable_occurrences(parsed):
        if occ.range.contains(pos):
            return Target("variable", occ.name, occ.range)
    for ref in reference_occurrences(ws, parsed):
        if ref.range.contains(pos):
            return Target("template", ref.target, ref.range, raw=ref.reference.path)
    if isinstance(parsed, DefinitionFile):
        found = _definition_target(ws, parsed, pos)
        if found is not None:
            return found
    elif isinstance(parsed, HostFile):
        found = _host_target(ws, parsed, pos)
        if found is not None:
            return found
    return _code_at(parsed, pos)


def _code_at(parsed: ParsedFile, pos: Position) -> Target | None:
    line = parsed.lines.line_text(pos.line)
    for m in _CODE_RE.finditer(line):
        if m.start() <= pos.character <= m.end():
            return Target("code", m.group(), Range.of(pos.line, m.start(), pos.line, m.end()))
    return None


def yaml_path_at(parsed: DefinitionFile, pos: Position) -> tuple[Path, bool] | None:
    """The deepest YAML path whose key (True) or value (False) contains `pos`."""
    doc = parsed.doc
    if doc is None:
        return None
    best: tuple[Path, bool] | None = None
    for path, span in doc.spans.items():
        if not path:
            continue
        on_key = span.key is not None and span.key.contains(pos)
        on_value = span.value.contains(pos) and span.value.start != span.value.end
        if not (on_key or on_value):
            continue
        if best is None or len(path) > len(best[0]) or (len(path) == len(best[0]) and on_value and not on_key):
            best = (path, on_key and not on_value)
    return best


def _definition_target(ws: Workspace, parsed: DefinitionFile, pos: Position) -> Target | None:
    found = yaml_path_at(parsed, pos)
    if found is None or parsed.doc is None:
        return None
    path, on_key = found
    doc = parsed.doc
    span = doc.spans[path]
    if on_key:
        if len(path) == 1 and isinstance(path[0], str):
            return Target("key", path[0], span.key or span.value)
        return None
    value = _value_at(doc.value, path)
    if not isinstance(value, str):
        return None
    rng = unquoted(span)
    head = path[0]
    if path == ("id",):
        return Target("agent", value, rng, declaration=True)
    if head == "agent_tools" and len(path) == 2:
        return Target("agent", value, rng)
    if head in ("tools", "pinned_tools") and len(path) == 2:
        return Target("tool", value, rng)
    if head == "context_providers" and (len(path) == 2 or (len(path) == 3 and path[2] == "type")):
        return Target("provider", value, rng)
    if path == ("model",):
        return Target("model", value, rng)
    if path == ("instructions_file",):
        return Target("template", ws.resolve_relative(parsed.path, value), rng, raw=value)
    return None


def _host_target(ws: Workspace, parsed: HostFile, pos: Position) -> Target | None:
    doc = parsed.doc
    if doc is None:
        return None
    prefix = parsed.prefix
    n = len(prefix)
    for path, span in doc.spans.items():
        if len(path) != n + 2 or path[:n] != prefix:
            continue
        section, key = path[n], path[n + 1]
        if section == "variables" and span.key is not None and span.key.contains(pos):
            return Target("variable", str(key), span.key, declaration=True)
    template_keys = {("environment", "template"), ("memory", "system_prompt")}
    config = parsed.config
    for path, span in doc.spans.items():
        rel = path[n:]
        is_template = rel in template_keys or (len(rel) == 3 and rel[0] == "providers" and rel[2] == "template")
        if is_template and span.value.contains(pos):
            value = _value_at(doc.value, path)
            if isinstance(value, str) and config is not None:
                rng = span.value
                text = parsed.lines.line_text(rng.start.line)
                start = text.find(value, rng.start.character)
                if start != -1:
                    rng = Range.of(rng.start.line, start, rng.start.line, start + len(value))
                return Target("template", ws.resolve_template(value), rng, raw=value)
    return None


def _value_at(value: object, path: Path) -> object:
    current = value
    for part in path:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
        else:
            return None
    return current


def word_at(text: str, offset: int, pattern: str = r"[A-Za-z0-9_.-]") -> tuple[int, int]:
    """The [start, end) of the word around `offset` (possibly empty)."""
    word = re.compile(pattern)
    start = offset
    while start > 0 and word.match(text[start - 1]):
        start -= 1
    end = offset
    while end < len(text) and word.match(text[end]):
        end += 1
    return start, end


def is_template(parsed: ParsedFile) -> bool:
    return isinstance(parsed, TemplateFile)
