"""The cross-file checks: one function per file kind, each returning that file's diagnostics."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from oscova_runtime.catalogue import (
    BUILTIN_TOOLS,
    CHAT_HISTORY_STATE_KEY,
    SELECTABLE_TOOLS,
    PlannedProvider,
    ProviderPlan,
    plan_providers,
    provider_types,
)
from oscova_runtime.definition import AgentDefinition, ProviderEntry
from oscova_runtime.host_config import HostConfig
from oscova_runtime.workspace import grant_outside, grant_too_wide

from .bindings import TemplateBindings, binders, template_bindings
from .diagnostics import Diagnostic, Fix, Related, TextEdit
from .files import (
    DefinitionFile,
    HostFile,
    ParsedFile,
    Problem,
    TemplateFile,
    reference_ranges,
    template_facts,
    variable_places,
)
from .jinja_source import TemplateFacts, VariableUse
from .rules import (
    ROOT_BASE,
    RULES,
    is_known_code,
    memory_root_outside,
    template_missing,
    template_outside_root,
    unknown_code,
)
from .suggest import did_you_mean
from .text import LineIndex, Position, Range
from .toml_source import TomlDocument
from .workspace import LISTED_USES, TemplateUse, Workspace
from .yaml_source import Path, YamlDocument


def _diag(path: str, problem: Problem) -> Diagnostic:
    related = tuple(Related(path, rng, msg) for rng, msg in problem.related)
    fixes: tuple[Fix, ...] = ()
    if problem.fix is not None:
        title, edits = problem.fix
        fixes = (Fix(title, tuple(TextEdit(path, rng, text) for rng, text in edits)),)
    return Diagnostic(path, problem.range, problem.code, problem.message, RULES[problem.code].severity,
                      related, fixes)


_VARIABLES_WITH_CHECKS = frozenset({"current_time", "user_context", "working_directory"})
"""Names checked wherever they are bound (OSC102, OSC103, OSC106)."""


class Checker:
    """Computes the diagnostics of one file against the workspace's current state."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self._graph: tuple[int, dict[str, list[str]], dict[str, int]] | None = None
        """(`Workspace.agent_graph` count, the `agent_tools` edges into exposed agents, each agent's strongly
        connected component): see `_agent_graph`."""

    def check(self, path: str) -> list[Diagnostic]:
        parsed = self.ws.files.get(path)
        if parsed is None:
            return []
        out = [_diag(path, p) for p in parsed.problems]
        if isinstance(parsed, DefinitionFile):
            out += self._definition(parsed)
        elif isinstance(parsed, TemplateFile):
            out += self._template_file(parsed)
        elif isinstance(parsed, HostFile):
            out += self._host(parsed)
        return out

    # ---------------------------------------------------------------------------------- definitions

    def _definition(self, parsed: DefinitionFile) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        doc = parsed.doc
        definition = parsed.definition
        if doc is None or "*" in parsed.borrowed:  # the file is broken; others see its last good facts
            return out
        path = parsed.path
        host = self.ws.host
        if parsed.raw_id:
            others = sorted(p for p in self.ws.defs_by_id.get(parsed.raw_id, ()) if p != path)
            if others:
                id_range = doc.value_range(("id",)) or doc.best_range(("id",))
                related = tuple(Related(p, self._id_range(p), "also defined here") for p in others)
                out.append(Diagnostic(path, id_range, "OSC005",
                                      f"another definition has the id `{parsed.raw_id}`: "
                                      f"{', '.join(self._rel(p) for p in others)}",
                                      RULES["OSC005"].severity, related))
        if definition is None:
            return out
        plan = plan_providers(definition, host, requested=True)  # what the configured host builds
        out += self._providers(parsed, definition, doc, host, plan)
        if "agent_tools" not in parsed.borrowed:
            out += self._agent_tools(parsed, definition, doc)
        out += self._tools(parsed, definition, doc, host, plan)
        if definition.instructions_file and "instructions_file" not in parsed.borrowed:
            target = self.ws.resolve_relative(path, definition.instructions_file)
            if not self.ws.inside(target):
                rng = doc.value_range(("instructions_file",)) or doc.best_range(("instructions_file",))
                out.append(self._outside_root(path, rng, definition.instructions_file))
            elif target not in self.ws.files and not self.ws.is_file(target):
                rng = doc.value_range(("instructions_file",)) or doc.best_range(("instructions_file",))
                out.append(self._simple(path, rng, "OSC040", template_missing(
                    definition.instructions_file, f"the definition file {self._rel(path)}")))
        out += self._grants(path, doc, ("workspaces",), definition.workspaces)
        model = self._model(parsed, definition, doc, host)
        if model is not None:
            out.append(model)
        inline = parsed.inline if "instructions" not in parsed.borrowed else None
        if inline is not None:
            for error in inline.facts.syntax_errors:
                start = inline.map.position(parsed.lines, parsed.text, error.line, 0, "", 0)
                rng = parsed.lines.line_range(start.line) if inline.map.kind == "block" else (
                    doc.value_range(("instructions",)) or doc.best_range(("instructions",)))
                out.append(self._simple(path, rng, "OSC100", f"template syntax error: {error.message}"))
            out += self._template_checks(parsed, template_bindings(self.ws, parsed))
        return out

    def _model(self, parsed: DefinitionFile, definition: AgentDefinition, doc: YamlDocument,
               host: HostConfig) -> Diagnostic | None:
        """OSC041 where a model name is written, or for the implicit `default` when `[models]` exists
        without it. No host configuration, or none that parses: nothing to compare with."""
        host_file = self.ws.host_file
        if host_file is None or host_file.config is None or definition.model in host.models:
            return None
        written = doc.value_range(("model",))
        if written is None and not host.models:
            return None  # no `[models]` at all: one OSC042 on the host configuration says so
        path = parsed.path
        name = definition.model
        if not host.models:
            message = (f"model `{name}` is not configured: {self._rel(host_file.path)} has no `[models]`; "
                       f"add `[models.{name}]` to run this agent")
        else:
            configured = ", ".join(f"`{m}`" for m in host.models)
            implicit = "" if written else "no `model` is set, so "
            message = (f"{implicit}model `{name}` is not configured in `[models]` (configured: {configured}); "
                       f"add `[models.{name}]`" + ("" if written else " or set `model`"))
        rng = written or doc.key_range(("id",)) or doc.best_range(())
        choice = did_you_mean(name, host.models) if written else None
        fix = Fix(f"Use model `{choice.name}`", (TextEdit(path, rng, choice.name),)) if choice else None
        return self._simple(path, rng, "OSC041", message, fix=fix)

    def _id_range(self, path: str) -> Range:
        parsed = self.ws.files.get(path)
        if isinstance(parsed, DefinitionFile) and parsed.doc is not None:
            return parsed.doc.value_range(("id",)) or parsed.doc.best_range(())
        return Range.of(0, 0, 0, 0)

    def _rel(self, path: str) -> str:
        return os.path.relpath(path, self.ws.root)

    def _simple(self, path: str, rng: Range, code: str, message: str, *, fix: Fix | None = None,
                related: tuple[Related, ...] = ()) -> Diagnostic:
        return Diagnostic(path, rng, code, message, RULES[code].severity, related, (fix,) if fix else ())

    def _entry_range(self, doc: YamlDocument, index: int) -> Range:
        return doc.value_range(("context_providers", index)) or doc.best_range(("context_providers",))

    def _file_index(self, parsed: DefinitionFile, index: int) -> int:
        """Index among non-null entries -> index in the file's list."""
        nulls = parsed.null_entries
        original = index
        for null in sorted(nulls):
            if null <= original:
                original += 1
        return original

    def _providers(self, parsed: DefinitionFile, definition: AgentDefinition, doc: YamlDocument,
                   host: HostConfig, plan: ProviderPlan) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        path = parsed.path
        taken = frozenset(k for p in plan.providers for k in p.state_keys)
        for unknown in plan.unknown:
            file_index = self._file_index(parsed, unknown.entry_index)
            entry = definition.context_providers[unknown.entry_index]
            type_path: Path = ("context_providers", file_index) if isinstance(entry, str) else (
                "context_providers", file_index, "type")
            rng = doc.value_range(type_path) or self._entry_range(doc, file_index)
            choice = did_you_mean(unknown.type, provider_types(host))
            fix = Fix(f"Use provider type `{choice.name}`", (TextEdit(path, rng, choice.name),)) if choice else None
            known = ", ".join(f"`{t}`" for t in provider_types(host))
            out.append(self._simple(path, rng, "OSC013",
                                    f"unknown provider type `{unknown.type}`"
                                    + (choice.words if choice else f" (known: {known})"), fix=fix))
        owners: dict[str, PlannedProvider] = {}
        for provider in plan.providers:
            for key in provider.state_keys:
                if key == CHAT_HISTORY_STATE_KEY:
                    out.append(self._state_key_problem(parsed, doc, provider, key, "OSC012", None, taken))
                    continue
                first = owners.get(key)
                if first is None:
                    owners[key] = provider
                    continue
                out.append(self._state_key_problem(parsed, doc, provider, key, "OSC011", first, taken))
            if provider.origin == "listed" and provider.inactive_reason and provider.entry_index is not None:
                file_index = self._file_index(parsed, provider.entry_index)
                out.append(self._simple(path, self._entry_range(doc, file_index), "OSC014",
                                        f"`{provider.type}` contributes nothing here: {provider.inactive_reason}"))
        return out

    def _state_key_problem(self, parsed: DefinitionFile, doc: YamlDocument, provider: PlannedProvider,
                           key: str, code: str, first: PlannedProvider | None,
                           taken: frozenset[str]) -> Diagnostic:
        path, definition = parsed.path, parsed.definition
        # A default provider colliding can only be the chat-history key (and a plan implies a definition).
        if provider.entry_index is None or definition is None:
            rng = doc.key_range(("id",)) or doc.best_range(())
            return self._simple(path, rng, code, f"`{provider.type}` has the state key `{key}`")
        file_index = self._file_index(parsed, provider.entry_index)
        entry = definition.context_providers[provider.entry_index]
        key_path: Path = ("context_providers", file_index, "state_key")
        explicit = doc.value_range(key_path) if isinstance(entry, ProviderEntry) and entry.state_key else None
        rng = explicit or self._entry_range(doc, file_index)
        new_key = _unique_state_key(provider, taken)
        edits = self._state_key_edits(parsed, doc, file_index, entry, new_key)
        fix = Fix(f"Set `state_key: {new_key}`", edits) if edits else None
        if first is None:  # OSC012: the key of the chat-history provider; OSC011 names the first owner
            message = (f"`{provider.type}` uses the state key `{key}`, which belongs to the chat-history provider "
                       "that every agent has: the agent fails when it is built")
            return self._simple(path, rng, code, message, fix=fix)
        related = (Related(path, self._provider_origin_range(parsed, doc, first),
                           f"`{first.type}` ({first.class_name}) already has the state key `{key}`"),)
        where = (f"`{first.type}` of the default order" if first.origin == "default"
                 else f"the earlier entry `{first.type}`")
        message = (f"`{provider.type}` has the state key `{key}`, which {where} already uses "
                   f"(position {first.position}): the agent fails when it is built")
        return self._simple(path, rng, code, message, fix=fix, related=related)

    def _provider_origin_range(self, parsed: DefinitionFile, doc: YamlDocument, provider: PlannedProvider) -> Range:
        if provider.entry_index is not None:
            return self._entry_range(doc, self._file_index(parsed, provider.entry_index))
        trigger = {"memory": "memory", "skills": "skills", "todo": "todo", "vision": "vision",
                   "agent_tools": "agent_tools", "tool_search": "tool_mode"}.get(provider.type)
        for key in (trigger, "default_providers", "id"):
            if key and doc.key_range((key,)):
                return doc.key_range((key,))  # type: ignore[return-value]
        return doc.best_range(())

    def _state_key_edits(self, parsed: DefinitionFile, doc: YamlDocument, index: int,
                         entry: str | ProviderEntry, new_key: str) -> tuple[TextEdit, ...]:
        path = parsed.path
        item_path: Path = ("context_providers", index)
        item = doc.span(item_path)
        if item is None:  # no span to edit: the diagnostic goes without a quick fix
            return ()
        if isinstance(entry, str):
            return (TextEdit(path, item.value, f"{{type: {entry}, state_key: {new_key}}}"),)
        existing = doc.value_range((*item_path, "state_key"))
        if existing is not None:
            return (TextEdit(path, existing, new_key),)
        type_span = doc.span((*item_path, "type"))
        if type_span is None:
            return ()
        if item.style == "[":
            return (TextEdit(path, Range(type_span.value.end, type_span.value.end), f", state_key: {new_key}"),)
        indent = type_span.key.start.character if type_span.key else type_span.value.start.character
        return (TextEdit(path, Range(type_span.value.end, type_span.value.end),
                         f"\n{' ' * indent}state_key: {new_key}"),)

    def _agent_tools(self, parsed: DefinitionFile, definition: AgentDefinition,
                     doc: YamlDocument) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        path = parsed.path
        for index, agent_id in enumerate(definition.agent_tools):
            def rng(index: int = index) -> Range:  # only when reported: most items are fine
                return doc.value_range(("agent_tools", index)) or doc.best_range(("agent_tools",))

            target = self.ws.definition_by_id(agent_id)
            if target is None:
                choice = did_you_mean(agent_id, self.ws.defs_by_id)
                fix = Fix(f"Use agent `{choice.name}`", (TextEdit(path, rng(), choice.name),)) if choice else None
                out.append(self._simple(path, rng(), "OSC020",
                                        f"no agent has the id `{agent_id}`: it is omitted when this agent is built"
                                        + (choice.words if choice else ""), fix=fix))
                continue
            if target.definition is not None and not target.definition.exposed_as_tool:
                related = (Related(target.path, self._id_range(target.path), f"`{agent_id}` is defined here"),)
                edits = self._expose_edits(target)
                fix = Fix(f"Set `exposed_as_tool: true` in {self._rel(target.path)}", edits) if edits else None
                out.append(self._simple(path, rng(), "OSC021",
                                        f"`{agent_id}` is not `exposed_as_tool`: it is omitted when this agent is built",
                                        fix=fix, related=related))
                continue
            if self._same_component(definition.id, agent_id):
                cycle = self._cycle_from(definition.id, agent_id)
                if cycle is not None:
                    shown = " → ".join(f"`{a}`" for a in [definition.id, *cycle])
                    out.append(self._simple(path, rng(), "OSC022", f"`agent_tools` forms a cycle: {shown}"))
        return out

    def _expose_edits(self, target: DefinitionFile) -> tuple[TextEdit, ...]:
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

    def _same_component(self, origin: str, start: str) -> bool:
        """Whether `start` can lead back to `origin` (which lists it): both in one strongly connected component
        of the graph of `agent_tools` edges into exposed agents."""
        if origin == start:
            return True
        components = self._agent_graph()[1]
        found = components.get(origin)
        return found is not None and found == components.get(start)

    def _agent_graph(self) -> tuple[dict[str, list[str]], dict[str, int]]:
        """Agent id -> the exposed agents its `agent_tools` lists, and each agent's strongly connected
        component; computed again only when that graph changed (`Workspace.agent_graph`)."""
        if self._graph is None or self._graph[0] != self.ws.agent_graph:
            edges: dict[str, list[str]] = {}
            for agent_id in self.ws.defs_by_id:
                target = self.ws.definition_by_id(agent_id)
                if target is None or target.definition is None:
                    continue
                children = []
                for child in target.definition.agent_tools:
                    child_def = self.ws.definition_by_id(child)
                    if child_def is not None and child_def.definition is not None and \
                            child_def.definition.exposed_as_tool:
                        children.append(child)
                edges[agent_id] = children
            self._graph = (self.ws.agent_graph, edges, _components(edges))
        return self._graph[1], self._graph[2]

    def _cycle_from(self, origin: str, start: str) -> list[str] | None:
        """The path start → … → origin through exposed agents, if one exists."""
        edges = self._agent_graph()[0]
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        seen: set[str] = set()
        while stack:
            current, trail = stack.pop()
            if current == origin:
                return trail
            if current in seen:
                continue
            seen.add(current)
            for child in reversed(edges.get(current, ())):
                stack.append((child, [*trail, child]))
        return None

    def _tools(self, parsed: DefinitionFile, definition: AgentDefinition, doc: YamlDocument,
               host: HostConfig, plan: ProviderPlan) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        path = parsed.path
        known = set(SELECTABLE_TOOLS) | set(host.tools) | set(BUILTIN_TOOLS)
        active_types = {p.type for p in plan.providers if not p.inactive_reason}
        provider_tools = {
            name: spec.provider for name, spec in BUILTIN_TOOLS.items()
            if spec.provider is not None and spec.provider in active_types
        }
        seen: dict[str, Callable[[], Range]] = {}
        search_mode = "tool_search" in active_types
        lists: list[tuple[str, list[str]]] = [("tools", definition.tools)]
        if search_mode:
            lists.append(("pinned_tools", definition.pinned_tools))
        for key, names in lists:
            for index, name in enumerate(names):
                def rng(key: str = key, index: int = index) -> Range:  # only when reported
                    return doc.value_range((key, index)) or doc.best_range((key,))

                if name not in known:
                    choice = did_you_mean(name, sorted(set(SELECTABLE_TOOLS) | set(host.tools)))
                    fix = Fix(f"Use tool `{choice.name}`", (TextEdit(path, rng(), choice.name),)) if choice else None
                    out.append(self._simple(path, rng(), "OSC031",
                                            f"unknown tool `{name}`: it is omitted at run time"
                                            + (choice.words if choice else ""), fix=fix))
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
                    delete = self._list_item_delete(doc, key, index)
                    fix = Fix(f"Remove the duplicate `{name}`", (TextEdit(path, delete, ""),)) if delete else None
                    out.append(self._simple(path, rng(), "OSC030",
                                            f"{why}: the tool merge does not deduplicate, so the model sees it twice",
                                            fix=fix, related=related))
                seen.setdefault(name, rng)
        return out

    def _list_item_delete(self, doc: YamlDocument, key: str, index: int) -> Range | None:
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

    # ------------------------------------------------------------------------------------ templates

    def _template_file(self, parsed: TemplateFile) -> list[Diagnostic]:
        facts = parsed.facts
        if facts is None:
            return self._reference_checks(parsed) + self._include_cycle(parsed)
        bindings = template_bindings(self.ws, parsed)
        out: list[Diagnostic] = self._include_cycle(parsed)
        if bindings.unused:
            out.append(self._simple(parsed.path, self._first_line(parsed.lines), "OSC107",
                                    "no agent or provider uses this template; it is checked as agent instructions"))
        out += self._template_checks(parsed, bindings)
        return out

    def _include_cycle(self, parsed: TemplateFile) -> list[Diagnostic]:
        """Templates that include each other, reported once: at the first template of the cycle, on its
        reference into it. The checks follow the cycle only as far as it adds uses."""
        found = self.ws.include_cycle(parsed.path)
        if found is None:
            return []
        target, cycle = found
        ref, rng = next((ref, rng) for ref, rng in reference_ranges(parsed)
                        if self.ws.resolve_template(ref.path) == target)
        shown = cycle if len(cycle) <= LISTED_USES + 2 else [*cycle[:LISTED_USES], "", cycle[-1]]
        names = [f"`{self._rel(p)}`" if p else f"… {len(cycle) - LISTED_USES - 1} more …" for p in shown]
        size = len(cycle) - 1
        return [self._simple(parsed.path, rng, "OSC040",
                             f"`{ref.kind}` of `{ref.path}` closes a cycle of {size} template{'s' if size != 1 else ''}: "
                             f"{' → '.join(names)}; rendering recurses until Jinja gives up unless a condition "
                             "stops it")]

    def _first_line(self, lines: LineIndex) -> Range:
        for n in range(lines.line_count):
            if lines.line_text(n).strip():
                return lines.line_range(n)
        return Range.of(0, 0, 0, 0)

    def _template_checks(self, parsed: TemplateFile | DefinitionFile, bindings: TemplateBindings) -> list[Diagnostic]:
        """The checks of a template file or of a definition's inline instructions, for each of its uses."""
        out: list[Diagnostic] = []
        path, lines = parsed.path, parsed.lines
        facts = template_facts(parsed)
        if facts is None:  # callers pass a template with facts or a definition with inline instructions
            return out
        inline = parsed if isinstance(parsed, DefinitionFile) else None
        uses = bindings.uses
        personal_uses = [use for use in uses if use.renderer == "personal" and not use.no_context]
        for var, where in variable_places(parsed):
            unbound = bindings.unbound_uses(var.name)
            untrusted = bindings.untrusted(var.name)
            if not unbound and not untrusted and var.name not in _VARIABLES_WITH_CHECKS:
                continue  # the common case: nothing to report, no range computed
            rng = where()
            if unbound:
                out.append(self._unbound(path, rng, var.name, unbound, bindings))
            if var.name == "current_time" and personal_uses:
                out.append(self._simple(path, rng, "OSC102",
                                        "`current_time` changes every minute: in standing instructions it breaks "
                                        "prompt-cache prefixes",
                                        fix=Fix("Use `current_date`", (TextEdit(path, rng, "current_date"),))))
            if var.name == "user_context":
                not_shared = [use for use in personal_uses if use.agent_path and not self._is_shared(use.agent_path)]
                if not_shared:
                    names = _listed([u.label for u in not_shared])
                    out.append(self._simple(path, rng, "OSC103",
                                            f"`user_context` renders empty: the agent is not `shared` ({names})"))
            if var.name == "working_directory" and any(u.renderer == "environment" and not u.no_context
                                                       for u in uses):
                out.append(self._simple(path, rng, "OSC106",
                                        "`working_directory` renders empty: the default host does not derive it; "
                                        "use `workspace_directories`"))
            if untrusted and not facts.is_delimited(var.offset):
                out.append(self._simple(
                    path, rng, "OSC105",
                    f"`{var.name}` is untrusted data ({untrusted}) rendered outside a labelled delimiter",
                    fix=Fix(f"Wrap it in <{var.name}> tags", self._wrap_edits(path, facts, var, rng, lines, inline))))
        if any(use.renderer == "memory" and not use.no_context for use in uses) and not any(
                v.name == "agent_memory" for v in facts.free_uses):
            rng = self._first_line(lines) if inline is None else Range.of(0, 0, 0, 0)
            out.append(self._simple(path, rng, "OSC104",
                                    "the memory system prompt does not reference `{{ agent_memory }}`: "
                                    "the `<agent_memory>` block is appended after it"))
        out += self._reference_checks(parsed)
        return out

    def _wrap_edits(self, path: str, facts: TemplateFacts, var: VariableUse, rng: Range, lines: LineIndex,
                    inline: DefinitionFile | None) -> tuple[TextEdit, ...]:
        """Wraps the whole `{{ ... }}` expression around the variable in a tag named after it."""
        text = facts.text
        open_at = text.rfind("{{", 0, var.offset)
        close_at = text.find("}}", var.offset)
        if open_at == -1 or close_at == -1:
            return (TextEdit(path, rng, f"<{var.name}>{var.name}</{var.name}>"),)
        if inline is None:
            before, after = lines.position(open_at), lines.position(close_at + 2)
            return (TextEdit(path, Range(after, after), f"</{var.name}>"),
                    TextEdit(path, Range(before, before), f"<{var.name}>"))
        # Inline: the expression's columns relative to the variable, on the variable's file line.
        delta_open = var.offset - open_at
        delta_close = close_at + 2 - var.offset
        start = Position(rng.start.line, max(rng.start.character - delta_open, 0))
        end = Position(rng.start.line, rng.start.character + delta_close)
        return (TextEdit(path, Range(end, end), f"</{var.name}>"), TextEdit(path, Range(start, start), f"<{var.name}>"))

    def _is_shared(self, agent_path: str) -> bool:
        parsed = self.ws.files.get(agent_path)
        return isinstance(parsed, DefinitionFile) and parsed.definition is not None and parsed.definition.shared

    def _unbound(self, path: str, rng: Range, name: str, unbound: list[TemplateUse],
                 bindings: TemplateBindings) -> Diagnostic:
        renderers = sorted({u.renderer for u in unbound})
        named = list(dict.fromkeys((u.label, u.via[-1] if u.via and u.via[-1] != path else None) for u in unbound))
        labels = _listed([label + (f" via {self._rel(via)}" if via else "") for label, via in named[:LISTED_USES]],
                         len(named))
        if all(u.no_context for u in unbound):
            importers = _listed(sorted({self._rel(u.via[-1]) for u in unbound if u.via}))
            message = (f"`{name}` is not bound: {importers} imports this template without context, so it sees no "
                       f"provider variable (for {labels}); add `with context` to the import: it renders empty")
            return Diagnostic(path, rng, "OSC101", message, RULES["OSC101"].severity)
        found = [d for d in binders(self.ws, name) if d.binder.kind != "jinja"]
        names = "`, `".join(renderers)
        noun = "provider that renders" if len(renderers) == 1 else "providers that render"
        message = f"`{name}` is not bound by the `{names}` {noun} this template"
        uses = bindings.uses
        if len(uses) > 1 or unbound[0].agent_path is not None or unbound[0].renderer != "personal":
            message += f" (for {labels})"
        if found:
            message += f"; {found[0].binder.words} binds it"
        message += ": it renders empty"
        related = tuple(Related(d.path, d.range, f"`{name}` is bound here by {d.binder.renderer}") for d in found
                        if d.path is not None and d.range is not None)
        choice = did_you_mean(name, sorted(bindings.provider_names(unbound)))
        fixes: list[Fix] = []
        if choice:
            message += choice.words  # the same suggestion as the quick fix, for the CLI
            fixes.append(Fix(f"Use `{choice.name}`", (TextEdit(path, rng, choice.name),)))
        declare = self._declare_variable_edit(name) if all(u.renderer == "personal" for u in unbound) else None
        if declare is not None:
            fixes.append(Fix(f"Declare `{name}` in `[variables]`", (declare,)))
        return Diagnostic(path, rng, "OSC101", message, RULES["OSC101"].severity, related, tuple(fixes))

    def _declare_variable_edit(self, name: str) -> TextEdit | None:
        host_file = self.ws.host_file
        if host_file is None or host_file.doc is None:
            return None
        doc = host_file.doc
        table = (*host_file.prefix, "variables")
        header = doc.spans.get(table)
        if header is not None and header.key is not None:
            line = header.value.start.line + 1
            return TextEdit(host_file.path, Range.of(line, 0, line, 0), f'{name} = ""\n')
        end_line = host_file.lines.line_count - 1
        end = Position(end_line, len(host_file.lines.line_text(end_line)))
        section = "tool.oscova.variables" if host_file.prefix else "variables"
        lead = "\n" if host_file.lines.line_text(end_line).strip() else ""
        return TextEdit(host_file.path, Range(end, end), f'{lead}\n[{section}]\n{name} = ""\n')

    # ------------------------------------------------------------------------ the workspace boundary

    def _outside_root(self, path: str, rng: Range, value: str) -> Diagnostic:
        """A template path that resolves outside the root (absolute, `..`, a symlink leaving): never read."""
        return self._simple(path, rng, "OSC040", template_outside_root(value))

    def _grants(self, path: str, doc: YamlDocument | TomlDocument, key: Path, folders: list[str]) -> list[Diagnostic]:
        """OSC043 for a grant leaving the root without `[host] allow_outside_workspaces`; OSC044 for `/` or
        the home folder, which are never granted silently, allowed or not."""
        out: list[Diagnostic] = []
        allowed = self.ws.host.host.allow_outside_workspaces
        for index, folder in enumerate(folders):
            rng = doc.value_range((*key, index)) or doc.best_range(key)
            if not allowed and grant_outside(self.ws.root, folder, real_path=self.ws.real_path):
                out.append(self._simple(path, rng, "OSC043",
                                        f"workspace grant `{folder}` is outside the workspace root: it is ignored "
                                        "at run time unless `[host] allow_outside_workspaces = true`"))
            too_wide = grant_too_wide(self.ws.root, folder, real_path=self.ws.real_path, home=self.ws.home_folder())
            if too_wide:
                out.append(self._simple(path, rng, "OSC044",
                                        f"workspace grant `{folder}`: {too_wide} to the agent's tools"))
        return out

    def _reference_checks(self, parsed: TemplateFile | DefinitionFile) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        facts = template_facts(parsed)
        # A target that was read is inside the root; one that is indexed but unread may be a link leading out.
        if facts is None or all(t in self.ws.files and self.ws.files[t].skipped is None
                                for t in self.ws.reference_targets(parsed, facts)):
            return out  # the common case, without mapping every reference to its range
        for ref, rng in reference_ranges(parsed):
            target = self.ws.resolve_template(ref.path)
            if not self.ws.inside(target):
                out.append(self._outside_root(parsed.path, rng, ref.path))
                continue
            if ref.ignore_missing:
                continue
            if target in self.ws.files or self.ws.is_file(target):
                continue
            out.append(self._simple(parsed.path, rng, "OSC040", template_missing(ref.path, ROOT_BASE)))
        return out

    # ----------------------------------------------------------------------------------------- host

    def _host(self, parsed: HostFile) -> list[Diagnostic]:
        out: list[Diagnostic] = []
        config = parsed.config
        doc = parsed.doc
        if config is None or doc is None or parsed.borrowed:
            return out
        prefix = parsed.prefix
        if not config.models:
            rng = doc.key_range(prefix) if prefix else None
            out.append(self._simple(parsed.path, rng or self._first_line(parsed.lines), "OSC042",
                                    "no `[models]` section: the agents are checked but cannot run; add "
                                    "`[models.default]` with `model` and `base_url` (any OpenAI-compatible "
                                    "server, e.g. a local Ollama)"))
        candidates: list[tuple[Path, str | None]] = [
            (("environment", "template"), config.environment.template),
            (("memory", "system_prompt"), config.memory.system_prompt),
        ]
        candidates += [(("providers", name, "template"), p.template) for name, p in config.providers.items()]
        for key_path, value in candidates:
            if not value:
                continue
            target = self.ws.resolve_template(value)
            rng = doc.value_range((*prefix, *key_path)) or doc.best_range((*prefix, *key_path))
            if not self.ws.inside(target):
                out.append(self._outside_root(parsed.path, rng, value))
                continue
            if target in self.ws.files or self.ws.is_file(target):
                continue
            out.append(self._simple(parsed.path, rng, "OSC040", template_missing(value, ROOT_BASE)))
        out += self._grants(parsed.path, doc, (*prefix, "environment", "workspace_directories"),
                            config.environment.workspace_directories)
        memory_root = config.memory.root
        if not self.ws.inside(os.path.normpath(os.path.join(self.ws.root, memory_root))):
            key = (*prefix, "memory", "root")
            rng = doc.value_range(key) or doc.best_range(key) or self._first_line(parsed.lines)
            out.append(self._simple(parsed.path, rng, "OSC040", memory_root_outside(memory_root)))
        return out + self._lint_codes(parsed.path, doc, prefix, config)

    def _lint_codes(self, path: str, doc: TomlDocument, prefix: Path, config: HostConfig) -> list[Diagnostic]:
        """OSC002 on each code of `[lint]` that names no rule (a typo must not pass for a clean check). No
        `select` or `ignore` hides it: it is about them (`UNFILTERED`)."""
        out: list[Diagnostic] = []
        lint = config.lint
        entries = [((*prefix, "lint", key, index), code, f"`[lint] {key}`", False)
                   for key, codes in (("select", lint.select or []), ("ignore", lint.ignore))
                   for index, code in enumerate(codes)]
        entries += [((*prefix, "lint", "severity", code), code, "`[lint.severity]`", True) for code in lint.severity]
        for key_path, code, where, is_key in entries:
            if is_known_code(code):
                continue
            rng = (doc.key_range(key_path) if is_key else doc.value_range(key_path)) or doc.best_range(key_path)
            out.append(Diagnostic(path, rng, "OSC002", unknown_code(code, where), RULES["OSC002"].severity,
                                  data={UNFILTERED: True}))
        return out


def _listed(items: list[str], total: int | None = None) -> str:
    """`a, b, c` — or the first `LISTED_USES` and how many more of `total` (repeats named once)."""
    unique = list(dict.fromkeys(items))
    total = len(unique) if total is None else total
    shown = unique[:LISTED_USES]
    return ", ".join(shown) + (f" and {total - len(shown)} more" if total > len(shown) else "")


def _unique_state_key(provider: PlannedProvider, taken: frozenset[str]) -> str:
    """The provider's class name when no provider of the list uses it, else with the first free number."""
    if provider.class_name not in taken:
        return provider.class_name
    n = 2
    while f"{provider.class_name}{n}" in taken:
        n += 1
    return f"{provider.class_name}{n}"


UNFILTERED = "unfiltered"
"""A diagnostic's `data` key: reported whatever `select`, `ignore` and suppressions say (an error in them)."""


@dataclass
class LintOptions:
    """Which codes are reported and at what severity, from `[lint]`, the command line or the editor.
    Everywhere a code is taken, a prefix (`OSC1`, `OSC01`) stands for every code it starts."""

    select: frozenset[str] | None = None
    ignore: frozenset[str] = frozenset()
    severity: dict[str, str] | None = None


def apply_lint(diagnostics: list[Diagnostic], parsed: ParsedFile | None, host: HostConfig,
               options: LintOptions | None = None) -> list[Diagnostic]:
    """Drops suppressed, ignored and unselected codes and applies severity overrides; the command line
    and the editor override `[lint]`."""
    from .diagnostics import Severity

    # `[lint]` codes naming no rule are reported (`Checker._lint_codes`) and left out here: a `select` of
    # typos alone selects nothing less than everything
    ignore = _codes(host.lint.ignore)
    select = _codes(host.lint.select or []) or None
    severity: dict[str, str] = {c.strip().upper(): level for c, level in host.lint.severity.items()
                                if is_known_code(c)}
    if options is not None:
        ignore |= _codes(options.ignore)
        if options.select is not None:
            select = _codes(options.select)
        severity.update({c.strip().upper(): level for c, level in (options.severity or {}).items() if c.strip()})
    suppressions = parsed.suppressions if parsed is not None else {}
    out = []
    for diag in diagnostics:
        if diag.data.get(UNFILTERED):
            out.append(diag)
            continue
        if _selected(diag.code, ignore) or (select is not None and not _selected(diag.code, select)):
            continue
        line_codes = suppressions.get(diag.range.start.line, ...)
        if line_codes is None or (line_codes is not ... and _selected(diag.code, line_codes)):
            continue
        override = _most_specific(diag.code, severity)
        if override:
            try:
                diag = diag.with_severity(Severity.parse(override))
            except KeyError:
                pass
        out.append(diag)
    return out


def _codes(values: Iterable[str]) -> set[str]:
    return {c.strip().upper() for c in values if is_known_code(c)}


def _selected(code: str, prefixes: Iterable[str]) -> bool:
    return any(code.startswith(prefix) for prefix in prefixes)


def _most_specific(code: str, levels: dict[str, str]) -> str | None:
    """The level of the longest code or prefix in `levels` that `code` starts with."""
    matches = [prefix for prefix in levels if code.startswith(prefix)]
    return levels[max(matches, key=len)] if matches else None


def _components(edges: dict[str, list[str]]) -> dict[str, int]:
    """Each node's strongly connected component (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    component: dict[str, int] = {}
    counter = 0
    for root in edges:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child_at = work.pop()
            if child_at == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = edges.get(node, ())
            while child_at < len(children):
                child = children[child_at]
                child_at += 1
                if child not in index:
                    work.append((node, child_at))
                    work.append((child, 0))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                if low[node] == index[node]:
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component[member] = index[node]
                        if member == node:
                            break
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
    return component
