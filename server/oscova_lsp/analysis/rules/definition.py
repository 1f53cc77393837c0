"""A definition among the others and the host: its id is its own (OSC005), its model is configured (OSC041)."""

from __future__ import annotations

from ..diagnostics import Diagnostic, Fix, Related, TextEdit
from ..files import DefinitionFile
from ..suggest import did_you_mean
from ..toml_source import toml_key
from .common import Context, value_place
from .rule import E, Rule

DUPLICATE_ID = Rule(
    "OSC005", E, "definitions", "Two definitions share an `id`",
    """An agent's `id` is its cache key and the name other agents call it by; two definitions with one id
replace each other in the orchestrator's cache and in `agent_tools`.""")


def duplicate_id(ctx: Context, parsed: DefinitionFile) -> list[Diagnostic]:
    """Checked on the id as written, even when the rest of the definition does not validate."""
    doc = parsed.doc
    if doc is None or parsed.borrows_all:  # broken: others see its last good facts
        return []
    path = parsed.path
    others = sorted(p for p in ctx.ws.defs_by_id.get(parsed.raw_id, ()) if p != path) if parsed.raw_id else []
    if not others:
        return []
    related = tuple(Related(p, ctx.id_range(p), "also defined here") for p in others)
    return [DUPLICATE_ID.diagnostic(path, value_place(doc, ("id",)),
                                    f"another definition has the id `{parsed.raw_id}`: "
                                    f"{', '.join(ctx.rel(p) for p in others)}", related=related)]


UNKNOWN_MODEL = Rule(
    "OSC041", E, "definitions", "`model` names no configured model",
    """The definition's `model` has no `[models.NAME]` table in the host configuration, so the agent
cannot be run. It is reported where a model name is written, and for a definition without `model` (which
uses `default`) when `[models]` exists without `[models.default]`. A host configuration without any
`[models]` is one fact about the workspace: OSC042.""",
    "use the closest configured model")


def model(ctx: Context, parsed: DefinitionFile) -> list[Diagnostic]:
    """OSC041 where a model name is written, or for the implicit `default` when `[models]` exists
    without it. No host configuration, or none that parses: nothing to compare with."""
    agent = ctx.agent(parsed)
    if agent is None:
        return []
    definition, doc = agent.definition, agent.doc
    host_file, host = ctx.ws.host_file, ctx.ws.host
    if host_file is None or host_file.config is None or definition.model in host.models:
        return []
    written = doc.value_range(("model",))
    if written is None and not host.models:
        return []  # no `[models]` at all: one OSC042 on the host configuration says so
    path = parsed.path
    name = definition.model
    if not host.models:
        message = (f"model `{name}` is not configured: {ctx.rel(host_file.path)} has no `[models]`; "
                   f"add `[models.{toml_key(name)}]` to run this agent")
    else:
        configured = ", ".join(f"`{m}`" for m in host.models)
        implicit = "" if written else "no `model` is set, so "
        message = (f"{implicit}model `{name}` is not configured in `[models]` (configured: {configured}); "
                   f"add `[models.{toml_key(name)}]`" + ("" if written else " or set `model`"))
    rng = written or doc.key_range(("id",)) or doc.best_range(())
    choice = did_you_mean(name, host.models) if written else None
    fix = Fix(f"Use model `{choice.name}`", (TextEdit(path, rng, choice.name),)) if choice else None
    return [UNKNOWN_MODEL.diagnostic(path, rng, message, fix)]
