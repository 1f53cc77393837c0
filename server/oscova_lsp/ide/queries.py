"""Workspace queries shared by the features: where variables, references and agent ids sit in files.
Which provider binds which variable is `analysis.bindings`'s answer, read here as the checks read it."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..analysis.bindings import Binding, binders, template_bindings
from ..analysis.files import (
    DefinitionFile,
    EvalFile,
    ParsedFile,
    reference_ranges,
    variable_ranges,
)
from ..analysis.jinja_facts import TemplateReference
from ..analysis.text import Position, Range
from ..analysis.workspace import Workspace
from ..analysis.yaml_source import Path, Span, YamlDocument
from .model import Location


@dataclass(frozen=True, slots=True)
class VariableOccurrence:
    name: str
    range: Range
    offset: int
    """The offset in the template's own text (the inline string for `instructions`)."""


@dataclass(frozen=True, slots=True)
class ReferenceOccurrence:
    reference: TemplateReference
    range: Range
    """The path string, quotes included, in file coordinates."""
    target: str


def variable_occurrences(parsed: ParsedFile) -> list[VariableOccurrence]:
    """Free variable uses of a template file or of a definition's inline `instructions`, as file ranges.

    The engine maps them (`variable_ranges`), so a hover or hint sits on the diagnostic's range.
    """
    return [VariableOccurrence(use.name, rng, use.offset) for use, rng in variable_ranges(parsed)]


def reference_occurrences(ws: Workspace, parsed: ParsedFile) -> list[ReferenceOccurrence]:
    """`include`/`import`/`extends` paths of a template (file or inline) as file ranges, with their targets."""
    return [ReferenceOccurrence(ref, rng, ws.resolve_template(ref.path)) for ref, rng in reference_ranges(parsed)]


def bindings_for(ws: Workspace, parsed: ParsedFile) -> dict[str, list[Binding]]:
    """Every name a template may use, with what binds it (one entry per use), as the checks see it."""
    return template_bindings(ws, parsed).by_name()


def variable_declarations(ws: Workspace, name: str) -> list[Location]:
    """Where `name` is declared in a file: a `[variables]` key, a custom provider's `variables`, a `[user]` key."""
    return [Location(d.path, d.range) for d in binders(ws, name) if d.path is not None and d.range is not None]


def scalar_range(doc: YamlDocument, path: Path) -> Range | None:
    """The value at `path` without its quotes: the text an edit of the value replaces."""
    span = doc.span(path)
    if span is None:
        return None
    return unquoted(span)


def unquoted(span: Span) -> Range:
    rng = span.value
    if span.style in ("'", '"') and rng.start.line == rng.end.line and rng.end.character - rng.start.character >= 2:
        return Range(Position(rng.start.line, rng.start.character + 1), Position(rng.end.line, rng.end.character - 1))
    return rng


@dataclass(frozen=True, slots=True)
class AgentOccurrence:
    path: str
    range: Range
    declaration: bool


def agent_occurrences(ws: Workspace, agent_id: str) -> list[AgentOccurrence]:
    """Every `id:` equal to `agent_id`, every `agent_tools` item naming it and every place an evaluation names
    it, across the workspace."""
    out: list[AgentOccurrence] = []
    paths = set(ws.defs_by_id.get(agent_id, ())) | set(ws.agent_tool_referrers.get(agent_id, ()))
    for path in sorted(paths):
        parsed = ws.files.get(path)
        if not isinstance(parsed, DefinitionFile) or parsed.doc is None:
            continue
        doc = parsed.doc
        if parsed.raw_id == agent_id:
            rng = scalar_range(doc, ("id",))
            if rng is not None:
                out.append(AgentOccurrence(path, rng, True))
        items = doc.value if isinstance(doc.value, dict) else {}
        tools = items.get("agent_tools")
        if isinstance(tools, list):
            for index, item in enumerate(tools):
                if item == agent_id:
                    rng = scalar_range(doc, ("agent_tools", index))
                    if rng is not None:
                        out.append(AgentOccurrence(path, rng, False))
    for path in sorted(p for p, f in ws.files.items() if isinstance(f, EvalFile)):  # few files: no index
        out += _eval_occurrences(ws, path, agent_id)
    return out


def _eval_occurrences(ws: Workspace, path: str, agent_id: str) -> list[AgentOccurrence]:
    """An evaluation's `agent:` naming `agent_id`, and its tool assertions naming it (an agent is called as a tool
    by its id) where the evaluated agent has it in `agent_tools`."""
    parsed = ws.files.get(path)
    if not isinstance(parsed, EvalFile) or parsed.doc is None or not isinstance(parsed.doc.value, dict):
        return []
    doc, data = parsed.doc, parsed.doc.value
    places: list[Path] = [("agent",)] if data.get("agent") == agent_id else []
    caller = ws.definition_by_id(data["agent"]) if isinstance(data.get("agent"), str) else None
    if caller is not None and caller.definition is not None and agent_id in caller.definition.agent_tools:
        for c, case in enumerate(data.get("cases") or []):
            expect = case.get("expect") if isinstance(case, dict) else None
            for e, item in enumerate(expect if isinstance(expect, list) else []):
                places += _tool_names(item, ("cases", c, "expect", e), agent_id)
    return [AgentOccurrence(path, rng, False) for place in places if (rng := scalar_range(doc, place)) is not None]


def _tool_names(item: object, at: Path, agent_id: str) -> list[Path]:
    """Where one assertion names the tool `agent_id`: `tool_called.name`, `tools.calls[i]`, `no_tool[i]`."""
    if not isinstance(item, dict):
        return []
    found: list[Path] = []
    called = item.get("tool_called")
    if isinstance(called, dict) and called.get("name") == agent_id:
        found.append((*at, "tool_called", "name"))
    sequence = item.get("tools")
    calls = sequence.get("calls") if isinstance(sequence, dict) else None
    found += [(*at, "tools", "calls", i) for i, name in enumerate(calls if isinstance(calls, list) else [])
              if name == agent_id]
    banned = item.get("no_tool")
    found += [(*at, "no_tool", i) for i, name in enumerate(banned if isinstance(banned, list) else [])
              if name == agent_id]
    return found


def definition_location(ws: Workspace, agent_id: str) -> Location | None:
    parsed = ws.definition_by_id(agent_id)
    if parsed is None or parsed.doc is None:
        return None
    rng = scalar_range(parsed.doc, ("id",)) or Range.of(0, 0, 0, 0)
    return Location(parsed.path, rng)


def relative(ws: Workspace, path: str) -> str:
    try:
        return os.path.relpath(path, ws.root)
    except ValueError:  # pragma: no cover - another drive on Windows
        return path
