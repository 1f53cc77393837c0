"""Agents as tools of other agents: `agent_tools` names a known agent (OSC020) that is exposed as a tool
(OSC021), and no agent reaches itself through them (OSC022)."""

from __future__ import annotations

from ..diagnostics import Diagnostic, Fix, Related, TextEdit
from ..files import DefinitionFile
from ..graph import path_between, strongly_connected_components
from ..suggest import did_you_mean
from ..text import Position, Range
from .common import Context, value_place
from .rule import Rule, W

UNKNOWN_AGENT = Rule(
    "OSC020", W, "definitions", "`agent_tools` names no known agent",
    """No definition in the workspace has this id. The build omits missing agent tools silently.""",
    "use the closest agent id")

NOT_EXPOSED = Rule(
    "OSC021", W, "definitions", "`agent_tools` names an agent that is not exposed as a tool",
    """Only definitions with `exposed_as_tool: true` resolve as agent tools; others are omitted at build
time without an error.""",
    "set `exposed_as_tool: true` in that definition")

CYCLE = Rule(
    "OSC022", W, "definitions", "`agent_tools` forms a cycle",
    """Agents call each other in a loop. The build guard stops the recursion, so some agent in the cycle
is built without its tools; at run time the agents may call each other without end. The message shows
the path.""")


def check(ctx: Context, parsed: DefinitionFile) -> list[Diagnostic]:
    agent = ctx.agent(parsed)
    if agent is None or "agent_tools" in parsed.borrowed_keys:  # borrowed: others see its last good list
        return []
    definition, doc = agent.definition, agent.doc
    out: list[Diagnostic] = []
    path = parsed.path
    for index, agent_id in enumerate(definition.agent_tools):
        def rng(index: int = index) -> Range:  # only when reported: most items are fine
            return value_place(doc, ("agent_tools", index), ("agent_tools",))

        target = ctx.ws.definition_by_id(agent_id)
        if target is None:
            choice = did_you_mean(agent_id, ctx.ws.defs_by_id)
            fix = Fix(f"Use agent `{choice.name}`", (TextEdit(path, rng(), choice.name),)) if choice else None
            out.append(UNKNOWN_AGENT.diagnostic(path, rng(), f"no agent has the id `{agent_id}`: it is omitted when "
                                                "this agent is built" + (choice.words if choice else ""), fix))
            continue
        if target.definition is not None and not target.definition.exposed_as_tool:
            related = (Related(target.path, ctx.id_range(target.path), f"`{agent_id}` is defined here"),)
            edits = _expose_edits(target)
            fix = Fix(f"Set `exposed_as_tool: true` in {ctx.rel(target.path)}", edits) if edits else None
            out.append(NOT_EXPOSED.diagnostic(path, rng(), f"`{agent_id}` is not `exposed_as_tool`: it is omitted "
                                              "when this agent is built", fix, related=related))
            continue
        if _same_component(ctx, definition.id, agent_id):
            cycle = path_between(_agent_graph(ctx)[0], agent_id, definition.id)
            if cycle is not None:
                shown = " → ".join(f"`{a}`" for a in [definition.id, *cycle])
                out.append(CYCLE.diagnostic(path, rng(), f"`agent_tools` forms a cycle: {shown}"))
    return out


def _expose_edits(target: DefinitionFile) -> tuple[TextEdit, ...]:
    doc = target.doc
    if doc is None:
        return ()
    existing = doc.value_range(("exposed_as_tool",))
    if existing is not None:
        return (TextEdit(target.path, existing, "true"),)
    id_span = doc.span(("id",))
    if id_span is None or id_span.key is None:
        return ()
    line = id_span.value.end.line
    indent = id_span.key.start.character
    insert = Position(line + 1, 0)
    if line + 1 >= target.lines.line_count:
        end = Position(line, len(target.lines.line_text(line)))
        return (TextEdit(target.path, Range(end, end), f"\n{' ' * indent}exposed_as_tool: true"),)
    return (TextEdit(target.path, Range(insert, insert), f"{' ' * indent}exposed_as_tool: true\n"),)


def _same_component(ctx: Context, origin: str, start: str) -> bool:
    """Whether `start` can lead back to `origin` (which lists it): both in one strongly connected component
    of the graph of `agent_tools` edges into exposed agents."""
    if origin == start:
        return True
    components = _agent_graph(ctx)[1]
    found = components.get(origin)
    return found is not None and found == components.get(start)


def _agent_graph(ctx: Context) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Agent id -> the exposed agents its `agent_tools` lists, and each agent's strongly connected
    component; computed again only when that graph changed (`Workspace.agent_graph`)."""
    def compute() -> tuple[dict[str, list[str]], dict[str, int]]:
        ws = ctx.ws
        definitions = {agent_id: found.definition for agent_id in ws.defs_by_id
                       if (found := ws.definition_by_id(agent_id)) is not None and found.definition is not None}
        exposed = {agent_id for agent_id, definition in definitions.items() if definition.exposed_as_tool}
        edges = {agent_id: [child for child in definition.agent_tools if child in exposed]
                 for agent_id, definition in definitions.items()}
        return edges, strongly_connected_components(edges)

    return ctx.memo("agent_graph", ctx.ws.agent_graph, compute)
