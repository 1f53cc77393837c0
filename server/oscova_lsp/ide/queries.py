"""Workspace queries shared by the features: where variables, references and agent ids sit in files,
and which provider binds which variable."""

from __future__ import annotations

import os
from dataclasses import dataclass

from oscova_runtime.catalogue import (
    JINJA_GLOBALS,
    PROVIDERS_BY_TYPE,
    custom_provider_variables,
    environment_variables,
    memory_variables,
    personal_variables,
)

from ..analysis.files import (
    DefinitionFile,
    HostFile,
    ParsedFile,
    reference_ranges,
    variable_ranges,
)
from ..analysis.jinja_source import TemplateReference
from ..analysis.text import Position, Range
from ..analysis.workspace import TemplateUse, Workspace
from ..analysis.yaml_source import Path, Span, YamlDocument
from .model import Location


@dataclass(frozen=True, slots=True)
class Binding:
    """One provider that binds a variable for one use of a template."""

    renderer: str
    meaning: str
    use_label: str


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


def template_uses_of(ws: Workspace, parsed: ParsedFile) -> list[TemplateUse]:
    """How a template is rendered; a definition's inline instructions by `personal`; unused templates as
    agent instructions (as the checker treats them)."""
    if isinstance(parsed, DefinitionFile):
        agent = parsed.raw_id or os.path.basename(parsed.path)
        return [TemplateUse("personal", f"agent `{agent}` instructions", parsed.path, parsed.path)]
    uses = ws.template_uses(parsed.path)
    return uses or [TemplateUse("personal", "agent instructions", None, None)]


def variables_for(ws: Workspace, renderer: str) -> dict[str, str]:
    """Variable -> meaning for the provider that renders a template."""
    host = ws.host
    if renderer == "personal":
        return personal_variables(host)
    if renderer == "environment":
        return environment_variables()
    if renderer == "memory":
        return memory_variables()
    provider = host.providers.get(renderer)
    return custom_provider_variables(renderer, provider) if provider else {}


def bindings_for(ws: Workspace, parsed: ParsedFile) -> dict[str, list[Binding]]:
    """Every name a template may use, with the providers that bind it (one entry per use)."""
    out: dict[str, dict[Binding, None]] = {}  # uses that differ only in their includer bind alike: once
    variables: dict[str, dict[str, str]] = {}
    for use in template_uses_of(ws, parsed):
        if use.renderer not in variables:
            variables[use.renderer] = variables_for(ws, use.renderer)
        for name, meaning in variables[use.renderer].items():
            out.setdefault(name, {})[Binding(use.renderer, meaning, use.label)] = None
        for name in use.extra_bound:
            out.setdefault(name, {})[Binding("template", "Set by an including template.", use.label)] = None
    return {name: list(found) for name, found in out.items()}


def binders(ws: Workspace, name: str) -> list[Binding]:
    """Every provider in this host that would bind `name` in some template."""
    out: list[Binding] = []
    for spec in PROVIDERS_BY_TYPE.values():
        for var in spec.variables:
            if var.name == name:
                out.append(Binding(spec.type, var.meaning, f"the `{spec.type}` provider"))
    if name in ws.host.variables:
        out.append(Binding("personal", "A personal variable declared in `[variables]`.", "the `personal` provider"))
    for provider_name, provider in ws.host.providers.items():
        if name in provider.variables:
            out.append(Binding(provider_name, f"Declared by the custom provider `{provider_name}` ({provider.class_name}).",
                               f"the custom provider `{provider_name}`"))
    if name in JINJA_GLOBALS:
        out.append(Binding("jinja", "A Jinja default global.", "Jinja"))
    return out


def variable_declarations(ws: Workspace, name: str) -> list[Location]:
    """Where `name` is declared in a file: a `[variables]` key, a custom provider's `variables`, a `[user]` key."""
    host = ws.host_file
    if host is None or host.doc is None or host.config is None:
        return []
    doc = host.doc
    prefix = host.prefix
    out: list[Location] = []
    rng = doc.key_range((*prefix, "variables", name))
    if rng is not None and name in host.config.variables:
        out.append(Location(host.path, rng))
    for provider_name, provider in host.config.providers.items():
        if name in provider.variables:
            where = doc.value_range((*prefix, "providers", provider_name, "variables"))
            found = _find_in_range(host, where, name) if where else None
            found = found or doc.key_range((*prefix, "providers", provider_name, "variables"))
            if found is not None:
                out.append(Location(host.path, found))
    if name.startswith("user_"):
        key = name.removeprefix("user_")
        rng = doc.key_range((*prefix, "user", key))
        if rng is not None:
            out.append(Location(host.path, rng))
    return out


def _find_in_range(host: HostFile, where: Range, word: str) -> Range | None:
    lines = host.lines
    start, end = lines.offset(where.start), lines.offset(where.end)
    for quote in ('"', "'"):
        i = host.text.find(f"{quote}{word}{quote}", start, end)
        if i != -1:
            return lines.range(i + 1, i + 1 + len(word))
    return None


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
    """Every `id:` equal to `agent_id` and every `agent_tools` item naming it, across the workspace."""
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
    return out


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
