"""The tools a definition lists: each known (OSC031) and reaching the model once (OSC030)."""

from __future__ import annotations

from collections.abc import Callable

from oscova_runtime.catalogue import BUILTIN_TOOLS, SELECTABLE_TOOLS

from ..diagnostics import Diagnostic, Fix, Related, TextEdit
from ..files import DefinitionFile
from ..suggest import did_you_mean
from ..text import Position, Range
from ..yaml_source import YamlDocument
from .common import Context, value_place
from .rule import Rule, W

DUPLICATE_TOOL = Rule(
    "OSC030", W, "definitions", "One tool contributed twice",
    """The tool merge concatenates tools without deduplication: a tool listed twice, pinned and listed, or a
tool and an agent tool of one name reach the model twice.""",
    "remove the duplicate")

UNKNOWN_TOOL = Rule(
    "OSC031", W, "definitions", "Unknown tool",
    """The tool is neither a built-in tool nor declared under `[tools.NAME]`; it is omitted at run time.""",
    "use the closest tool name")

_PROVIDER_TOOLS = [(name, spec.provider) for name, spec in BUILTIN_TOOLS.items() if spec.provider is not None]
"""The built-in tools a provider contributes, with that provider's type."""


def check(ctx: Context, parsed: DefinitionFile) -> list[Diagnostic]:
    agent = ctx.agent(parsed)
    if agent is None:
        return []
    definition, doc, plan = agent.definition, agent.doc, agent.plan
    out: list[Diagnostic] = []
    path, host = parsed.path, ctx.ws.host
    known = ctx.for_host("known_tools", lambda host: set(SELECTABLE_TOOLS) | set(host.tools) | set(BUILTIN_TOOLS))
    active_types = {p.type for p in plan.providers if not p.inactive_reason}
    provider_tools = {name: provider for name, provider in _PROVIDER_TOOLS if provider in active_types}
    seen: dict[str, Callable[[], Range]] = {}
    lists: list[tuple[str, list[str]]] = [("tools", definition.tools)]
    if "tool_search" in active_types:
        lists.append(("pinned_tools", definition.pinned_tools))
    for key, names in lists:
        for index, name in enumerate(names):
            def rng(key: str = key, index: int = index) -> Range:  # only when reported
                return value_place(doc, (key, index), (key,))

            if name not in known:
                choice = did_you_mean(name, sorted(set(SELECTABLE_TOOLS) | set(host.tools)))
                fix = Fix(f"Use tool `{choice.name}`", (TextEdit(path, rng(), choice.name),)) if choice else None
                out.append(UNKNOWN_TOOL.diagnostic(path, rng(), f"unknown tool `{name}`: it is omitted at run time"
                                                   + (choice.words if choice else ""), fix))
                continue
            why = None
            related: tuple[Related, ...] = ()
            if name in seen:
                why = f"`{name}` is already listed"
                related = (Related(path, seen[name](), "first listed here"),)
            elif name in provider_tools:
                why = f"the `{provider_tools[name]}` provider already contributes `{name}`"
            elif name in definition.agent_tools:
                why = f"the agent tool `{name}` has the same name"
                related = (Related(path, doc.value_range(("agent_tools", definition.agent_tools.index(name)))
                                   or rng(), "agent tool"),)
            if why:
                delete = _list_item_delete(doc, key, index)
                fix = Fix(f"Remove the duplicate `{name}`", (TextEdit(path, delete, ""),)) if delete else None
                out.append(DUPLICATE_TOOL.diagnostic(path, rng(), f"{why}: the tool merge does not deduplicate, so "
                                                     "the model sees it twice", fix, related=related))
            seen.setdefault(name, rng)
    return out


def _list_item_delete(doc: YamlDocument, key: str, index: int) -> Range | None:
    span = doc.span((key, index))
    parent = doc.span((key,))
    if span is None:  # no span to delete: the diagnostic goes without a quick fix
        return None
    if parent is not None and parent.style == "[":
        text = doc.text
        end = span.end_offset
        rest = text[end:parent.end_offset]
        comma = rest.find(",")
        if comma != -1:
            stop = end + comma + 1
            while stop < len(text) and text[stop] == " ":
                stop += 1
            return doc.lines.range(span.start_offset, stop)
        before = text[parent.start_offset:span.start_offset]
        comma = before.rfind(",")
        start = parent.start_offset + comma if comma != -1 else span.start_offset
        return doc.lines.range(start, end)
    line = span.value.start.line
    return Range(Position(line, 0), Position(line + 1, 0))
