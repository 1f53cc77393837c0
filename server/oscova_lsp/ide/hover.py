"""Hover text: variables (provider, meaning), provider types, agent ids, tools, models, keys, OSC codes."""

from __future__ import annotations

from collections.abc import Sequence

from oscova_runtime.catalogue import BUILTIN_TOOLS, PROVIDERS_BY_TYPE
from oscova_runtime.definition import AgentDefinition

from ..analysis.bindings import binders, template_bindings
from ..analysis.diagnostics import Diagnostic
from ..analysis.files import DefinitionFile, EvalFile, ParsedFile, variable_ranges
from ..analysis.jinja_facts import EMPTY, UNDEFINED_EFFECTS
from ..analysis.rules.registry import RULES
from ..analysis.template_uses import LISTED_USES, TemplateUse
from ..analysis.text import Position
from ..analysis.workspace import Workspace
from . import eval_files
from .locate import Target, target_at
from .model import Hover
from .queries import relative, variable_occurrences


def hover(ws: Workspace, parsed: ParsedFile, pos: Position, diagnostics: Sequence[Diagnostic] = ()) -> Hover | None:
    target = target_at(ws, parsed, pos)
    sections: list[str] = []
    found = eval_files.hover(ws, parsed, pos, agent_text, tool_text) if isinstance(parsed, EvalFile) else None
    if found is not None:
        sections.append(found.markdown)
    if target is not None:
        text = describe(ws, parsed, target)
        if text:
            sections.append(text)
    shown = {target.value} if target is not None and target.kind == "code" else set()
    for diag in diagnostics:
        if diag.range.contains(pos) and diag.code in RULES and diag.code not in shown:
            shown.add(diag.code)
            rule = RULES[diag.code]
            sections.append(f"**{rule.code}** ({diag.severity.label}): {rule.summary}\n\n{rule.explanation.strip()}"
                            + (f"\n\nQuick fix: {rule.fix}." if rule.fix else "")
                            + f"\n\n`oscova-lsp rule {rule.code}` prints the whole rule.")
    if not sections:
        return None
    where = target.range if target is not None else found.range if found is not None else None
    return Hover("\n\n---\n\n".join(sections), where)


def token_question(ws: Workspace, parsed: ParsedFile, pos: Position) -> tuple[str, str | None] | None:
    """Which token figures a hover at `pos` adds: `(agent id, None)` on a definition's `id` (the prompt's),
    `(agent id, provider type)` on one of its `context_providers` entries (that provider's share); else None."""
    if not isinstance(parsed, DefinitionFile) or not parsed.raw_id:
        return None
    target = target_at(ws, parsed, pos)
    if target is None:
        return None
    if target.kind == "agent" and target.declaration:
        return parsed.raw_id, None
    return (parsed.raw_id, target.value) if target.kind == "provider" else None


def describe(ws: Workspace, parsed: ParsedFile, target: Target) -> str | None:
    kind = target.kind
    if kind == "variable":
        return _variable(ws, parsed, target)
    if kind == "provider":
        return provider_text(ws, target.value)
    if kind == "agent":
        return agent_text(ws, target.value)
    if kind == "tool":
        return tool_text(ws, target.value)
    if kind == "model":
        model = ws.host.models.get(target.value)
        if model is None:
            return f"**model** `{target.value}`: not configured in `[models]`"
        where = f" at {model.base_url}" if model.base_url else ""
        key = f"; key from `${model.api_key_env}`" if model.api_key_env else ""
        return f"**model** `{target.value}`: `{model.model}`{where}{key}"
    if kind == "key":
        field = AgentDefinition.model_fields.get(target.value)
        if field is None:
            return None
        return f"**{target.value}**: {field.description or ''}"
    if kind == "template":
        uses = ws.template_uses(target.value)
        exists = target.value in ws.files
        head = f"**template** `{relative(ws, target.value)}`" + ("" if exists else " (does not exist)")
        if uses:
            rendered = list(dict.fromkeys(f"`{u.renderer}` for {u.label}" for u in uses))
            more = f"; and {len(rendered) - LISTED_USES} more" if len(rendered) > LISTED_USES else ""
            head += "\n\nRendered by: " + "; ".join(rendered[:LISTED_USES]) + more
        return head
    if kind == "code":
        rule = RULES.get(target.value)
        return rule.documentation() if rule else None
    return None


def _variable(ws: Workspace, parsed: ParsedFile, target: Target) -> str:
    name = target.value
    if target.declaration:
        count = sum(1 for f in ws.files.values() for occ in variable_occurrences(f) if occ.name == name)
        return (f"**`{name}`**: a personal variable declared in `[variables]`, bound by the `personal` provider "
                f"in agent instructions ({count} use{'s' if count != 1 else ''} in the workspace)")
    bindings = template_bindings(ws, parsed)
    lines = [f"**`{name}`**"]
    for binding in bindings.by_name().get(name, []):
        binder = binding.binder
        if binder.kind == "jinja":
            line = "- a Jinja default global"
        else:
            who = f"`{binder.renderer}` ({binder.class_name})" if binder.class_name else f"`{binder.renderer}`"
            line = f"- bound by {who} for {binding.use_label}: {binding.meaning}"
        if line not in lines:
            lines.append(line)
    unbound = bindings.unbound_uses(name)
    if unbound:
        use = next((use for use, rng in variable_ranges(parsed) if rng == target.range), None)
        effect = UNDEFINED_EFFECTS[use.effect if use is not None else EMPTY]
        lines.append(_unbound(ws, name, unbound, effect, partly=len(lines) > 1))
    return "\n".join(lines)


def _unbound(ws: Workspace, name: str, unbound: list[TemplateUse], effect: str, partly: bool) -> str:
    """Why `name` is unbound and what rendering does here, in the words of the checks (OSC101, OSC109)."""
    if all(use.no_context for use in unbound):
        return ("- not bound: this template is imported without context, so it sees no provider variable; "
                "add `with context` to the import")
    labels = list(dict.fromkeys(use.label for use in unbound))
    more = f" and {len(labels) - LISTED_USES} more" if len(labels) > LISTED_USES else ""
    where = f" for {', '.join(labels[:LISTED_USES])}{more}" if partly else ""
    others = list(dict.fromkeys(d.binder.words for d in binders(ws, name) if d.binder.kind != "jinja"))
    if others:
        return f"- not bound by the provider that renders this template{where}; {', '.join(others)} binds it: {effect}"
    return f"- no provider binds it{where}: {effect}"


def provider_text(ws: Workspace, provider_type: str) -> str:
    spec = PROVIDERS_BY_TYPE.get(provider_type)
    if spec is not None:
        text = (f"**provider** `{spec.type}`: {spec.class_name} (default state key `{spec.class_name}`), "
                f"position {spec.position} of the default order\n\n{spec.summary}\n\n"
                f"Contributes: {', '.join(spec.contributes)}. Applies when: {spec.applies_when}.")
        if spec.variables:
            text += "\n\nVariables its template binds: " + ", ".join(f"`{v.name}`" for v in spec.variables)
        if spec.tools:
            text += "\n\nTools: " + ", ".join(f"`{t}`" for t in spec.tools)
        return text
    custom = ws.host.providers.get(provider_type)
    if custom is None:
        return f"**provider** `{provider_type}`: unknown provider type"
    text = (f"**custom provider** `{provider_type}`: `{custom.class_}` (state keys "
            f"{', '.join(f'`{k}`' for k in custom.effective_state_keys)})\n\n"
            f"Contributes: {', '.join(custom.contributes)}. {'Trusted' if custom.trusted else 'Untrusted'}.")
    if custom.template:
        text += f"\n\nTemplate: `{custom.template}`"
    if custom.variables:
        text += "\n\nVariables: " + ", ".join(f"`{v}`" for v in custom.variables)
    return text


def agent_text(ws: Workspace, agent_id: str) -> str:
    parsed = ws.definition_by_id(agent_id)
    if parsed is None:
        return f"**agent** `{agent_id}`: no definition has this id"
    definition = parsed.definition
    text = f"**agent** `{agent_id}`"
    if definition is not None:
        if definition.name:
            text += f" — {definition.name}"
        if definition.description:
            text += f"\n\n{definition.description}"
        flags = [f for f in ("exposed_as_tool", "shared", "memory", "todo", "vision") if getattr(definition, f)]
        text += "\n\n" + (", ".join(f"`{f}`" for f in flags) if flags else "not `exposed_as_tool`")
        if definition.agent_tools:
            text += "\n\nAgent tools: " + ", ".join(f"`{a}`" for a in definition.agent_tools)
    text += f"\n\nDefined in `{relative(ws, parsed.path)}`"
    return text


def tool_text(ws: Workspace, name: str) -> str:
    spec = BUILTIN_TOOLS.get(name)
    if spec is not None:
        origin = f"contributed by the `{spec.provider}` provider" if spec.provider else "built-in tool"
        approval = "; needs approval" if spec.approval_required else ""
        return f"**tool** `{name}` ({origin}{approval}): {spec.description}"
    custom = ws.host.tools.get(name)
    if custom is not None:
        text = f"**tool** `{name}`: custom, `{custom.callable}`, approval {custom.approval}"
        return text + (f"\n\n{custom.description}" if custom.description else "")
    return f"**tool** `{name}`: unknown tool"
