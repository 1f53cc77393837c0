"""How each template is rendered: by which provider, for which agent, through which includers, with which
names already set. Every unbound-variable message and every hover on a template asks it.

Apart from `Workspace` because answering it is a graph computation of its own: the uses flow down the include
graph from the definitions and the host configuration, and templates that include each other settle in a
fixpoint. It reads the workspace through `IncludeGraph` and keeps what it settled until a file changes
(`TemplateUses.forget`), so a check of every template walks the include graph about once.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from .files import DefinitionFile, HostFile, ParsedFile, TemplateFile
from .jinja_source import TemplateFacts


@dataclass(frozen=True, slots=True)
class TemplateUse:
    """One way a template gets rendered: by which provider, for whom, with which variables."""

    renderer: str
    """The provider type (`personal`, `environment`, `memory`) or custom provider name."""
    label: str
    """How a message names this use, e.g. "agent `triage` instructions"."""
    agent_path: str | None = None
    owner_path: str | None = None
    """The file that declares the use (definition or host configuration)."""
    via: tuple[str, ...] = ()
    """Templates this use passes through (includers), for messages."""
    extra_bound: frozenset[str] = frozenset()
    """Names set by including templates, visible in included ones."""
    no_context: bool = False
    """Reached through an `import` / `from` without `with context`: no render variable is visible."""


LISTED_USES = 5
"""How many uses (or templates) a message names before "and N more": messages stay short on any graph."""

_UseRoot = tuple[str, str, str | None, str | None]
"""Where a use starts: renderer, label, agent path, owner path (see `TemplateUse`)."""
_UseKey = tuple[_UseRoot, str | None, bool]
"""A distinct use of a template: where it starts, the last includer (None: rendered directly), no context."""


@dataclass(slots=True)
class _Uses:
    entries: dict[_UseKey, frozenset[str]]
    """Each distinct use, with the names every way of reaching it sets (in message order)."""
    summary: dict[tuple[_UseRoot, bool], frozenset[str]]
    """The same with the last includer dropped: what the templates it includes inherit."""


class IncludeGraph(Protocol):
    """What the uses are computed from: the workspace's files and which files name which template."""

    @property
    def files(self) -> Mapping[str, ParsedFile]: ...

    @property
    def host_file(self) -> HostFile | None: ...

    @property
    def template_referrers(self) -> Mapping[str, set[str]]:
        """Template -> the files whose references or `instructions_file` name it."""

    @property
    def references_of(self) -> Mapping[str, set[str]]:
        """File -> the templates it renders or includes directly."""

    def resolve_relative(self, from_path: str, target: str) -> str: ...

    def resolve_template(self, target: str) -> str: ...


class TemplateUses:
    """The uses of the templates of one workspace state, each settled when first asked for."""

    def __init__(self, graph: IncludeGraph) -> None:
        self._graph = graph
        self._memo: dict[str, _Uses] = {}
        self._cycles: dict[str, tuple[str, frozenset[str]]] = {}
        """Template -> (the template that reports its cycle, the templates that include each other)."""
        self._reference_context: dict[str, dict[str, bool]] = {}
        self._host_roots: dict[str, list[_UseRoot]] | None = None
        """The templates of the host configuration and their uses (`_host_roots`), once per workspace state."""

    def fork(self, graph: IncludeGraph) -> TemplateUses:
        """The same settled uses, for a copy of the workspace (`Workspace.fork`), changed apart from these."""
        copy = TemplateUses(graph)
        copy._memo = dict(self._memo)
        copy._cycles = dict(self._cycles)
        copy._reference_context = dict(self._reference_context)
        copy._host_roots = self._host_roots  # replaced, never changed in place
        return copy

    def forget(self, path: str) -> None:
        """After the file at `path` was added or removed: any use may change (an includer anywhere above)."""
        self._reference_context.pop(path, None)
        self._memo.clear()
        self._cycles.clear()
        self._host_roots = None

    def of(self, path: str) -> list[TemplateUse]:
        """Every distinct way the template at `path` is rendered, through includes as well.

        One use per (renderer, the use it comes from, last includer, context): the walks through the
        include graph that end alike are one use, bound by the names every one of them sets.
        """
        uses = self._settled_uses(path)
        return [TemplateUse(root[0], root[1], root[2], root[3], (via,) if via else (), bound, no_context)
                for (root, via, no_context), bound in uses.entries.items()]

    def rendered(self, path: str) -> bool:
        """Whether anything renders the template at `path` (`of` is not empty), without making its uses."""
        return bool(self._settled_uses(path).entries)

    def include_cycle(self, path: str) -> tuple[str, list[str]] | None:
        """For the one template that reports an include cycle (the first path of the templates that include
        each other): the reference target that enters the cycle, and the cycle from `path` back to it."""
        self._settled_uses(path)
        reporter, component = self._cycles.get(path, ("", frozenset()))
        graph = self._graph
        parsed = graph.files.get(path)
        if path != reporter or not isinstance(parsed, TemplateFile) or parsed.facts is None:
            return None
        target = next(t for t in (graph.resolve_template(r.path) for r in parsed.facts.references) if t in component)
        # The shortest way from the target back to `path` inside the cycle, for the message.
        came_from: dict[str, str] = {target: path}
        queue = deque([target])
        while queue and path not in came_from:
            current = queue.popleft()
            for nxt in sorted(graph.references_of.get(current, ())):
                if nxt in component and nxt not in came_from:
                    came_from[nxt] = current
                    queue.append(nxt)
        back = [path]
        while back[-1] != target:
            back.append(came_from[back[-1]])
        cycle = [path, *reversed(back)] if path != target else [path, path]
        return target, cycle

    def _settled_uses(self, path: str) -> _Uses:
        """The uses of `path`, computed once per workspace state for it and every template including it."""
        found = self._memo.get(path)
        if found is not None:
            return found
        # Settled aside and published at the end: a reader never sees a cycle's provisional state.
        fresh: dict[str, _Uses] = {}
        cycles: dict[str, tuple[str, frozenset[str]]] = {}
        for component in self._including_components(path):
            self._settle(component, fresh, cycles)
        self._cycles.update(cycles)
        self._memo.update(fresh)
        return fresh[path]

    def _includers(self, path: str) -> list[str]:
        """The templates whose includes, imports or extends name `path`, sorted."""
        out = []
        for referrer in sorted(self._graph.template_referrers.get(path, ())):
            parsed = self._graph.files.get(referrer)
            if isinstance(parsed, TemplateFile) and parsed.facts is not None:
                out.append(referrer)
        return out

    def _including_components(self, path: str) -> list[list[str]]:
        """The templates not yet settled that include `path` (directly or not), grouped in the components
        that include each other, each after every component that includes it (Tarjan, iteratively)."""
        if all(includer in self._memo for includer in self._includers(path)):
            return [[path]]  # the common case: included by settled templates only, or by none
        index: dict[str, int] = {path: 0}
        low: dict[str, int] = {path: 0}
        stack, on_stack = [path], {path}
        out: list[list[str]] = []
        pending = [(path, iter(self._includers(path)))]
        while pending:
            node, includers = pending[-1]
            for nxt in includers:
                if nxt in self._memo:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    pending.append((nxt, iter(self._includers(nxt))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                pending.pop()
                if pending:
                    parent = pending[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    out.append(sorted(component))
        return out

    def _settle(self, component: list[str], fresh: dict[str, _Uses],
                cycles: dict[str, tuple[str, frozenset[str]]]) -> None:
        """Computes the uses of templates that include each other (or of one template) from their includers'."""
        first = component[0]
        if len(component) == 1 and first not in self._graph.references_of.get(first, ()):
            fresh[first] = self._collect_uses(first, fresh)
            return
        # A cycle: a fixpoint from "not rendered"; use sets only grow and bound names only shrink, so it ends.
        members = frozenset(component)
        for member in component:
            fresh[member] = _Uses({}, {})
            cycles[member] = (first, members)
        queue, queued = deque(component), set(component)
        while queue:
            member = queue.popleft()
            queued.discard(member)
            before = fresh[member]
            after = self._collect_uses(member, fresh)
            fresh[member] = after
            if after.summary != before.summary:
                for nxt in sorted(self._graph.references_of.get(member, ())):
                    if nxt in members and nxt not in queued:
                        queue.append(nxt)
                        queued.add(nxt)

    def _collect_uses(self, path: str, fresh: dict[str, _Uses]) -> _Uses:
        """The uses of `path` from its own (instructions file, host template), its including definitions' and
        its including templates' settled uses, in the order messages list them."""
        entries: dict[_UseKey, frozenset[str]] = {}

        def add(key: _UseKey, bound: frozenset[str]) -> None:
            entries[key] = entries[key] & bound if key in entries else bound

        if self._host_roots is None:
            self._host_roots = _host_roots(self._graph)
        for root in _direct_roots(self._graph, path, self._host_roots):
            add((root, None, False), frozenset())
        for referrer in sorted(self._graph.template_referrers.get(path, ())):
            parsed = self._graph.files.get(referrer)
            if isinstance(parsed, TemplateFile) and parsed.facts is not None:
                with_context = self.reference_targets(parsed, parsed.facts).get(path, False)
                local = parsed.facts.local_names if with_context else frozenset()
                settled = fresh[referrer] if referrer in fresh else self._memo[referrer]
                for (root, no_context), bound in settled.summary.items():
                    add((root, referrer, no_context or not with_context), bound | local)
            elif isinstance(parsed, DefinitionFile) and parsed.inline is not None:
                targets = self.reference_targets(parsed, parsed.inline.facts)
                if path in targets:
                    with_context = targets[path]
                    label = f"agent `{parsed.raw_id or os.path.basename(referrer)}` instructions"
                    add((("personal", label, referrer, referrer), referrer, not with_context),
                        parsed.inline.facts.local_names if with_context else frozenset())
        summary: dict[tuple[_UseRoot, bool], frozenset[str]] = {}
        for (root, _via, no_context), bound in entries.items():
            key = (root, no_context)
            summary[key] = summary[key] & bound if key in summary else bound
        return _Uses(entries, summary)

    def reference_targets(self, parsed: ParsedFile, facts: TemplateFacts) -> dict[str, bool]:
        """Target -> whether some reference of `parsed` to it passes the render context (kept per file)."""
        found = self._reference_context.get(parsed.path)
        if found is None:
            found = {}
            for ref in facts.references:
                target = self._graph.resolve_template(ref.path)
                found[target] = found.get(target, False) or ref.with_context
            self._reference_context[parsed.path] = found
        return found


def direct_uses(graph: IncludeGraph, path: str) -> list[TemplateUse]:
    """The uses that render `path` itself: a definition's `instructions_file`, a template of the host
    configuration (the environment, the memory system prompt, a custom provider's)."""
    return [TemplateUse(*root) for root in _direct_roots(graph, path, _host_roots(graph))]


def _direct_roots(graph: IncludeGraph, path: str, by_host: Mapping[str, list[_UseRoot]]) -> list[_UseRoot]:
    """`direct_uses` as where each use starts, with the host configuration's from `by_host` (`_host_roots`, made
    once for many templates)."""
    roots: list[_UseRoot] = []
    for referrer in sorted(graph.template_referrers.get(path, ())):
        parsed = graph.files.get(referrer)
        if isinstance(parsed, DefinitionFile) and parsed.definition is not None:
            target = parsed.definition.instructions_file
            if target and graph.resolve_relative(referrer, target) == path:
                roots.append(("personal", f"agent `{parsed.definition.id}` instructions", referrer, referrer))
    return roots + by_host.get(path, [])


def _host_roots(graph: IncludeGraph) -> dict[str, list[_UseRoot]]:
    """Template -> where the uses the host configuration declares for it start, in the order of `direct_uses`:
    the environment template, the memory system prompt, each custom provider's template."""
    found: dict[str, list[_UseRoot]] = {}
    host = graph.host_file
    if host is None or host.config is None:
        return found
    config = host.config
    declared = [("environment", "the environment template", config.environment.template),
                ("memory", "the memory system prompt", config.memory.system_prompt)]
    declared += [(name, f"the `{name}` provider's template", provider.template)
                 for name, provider in config.providers.items()]
    for renderer, label, template in declared:
        if template:
            found.setdefault(graph.resolve_template(template), []).append((renderer, label, None, host.path))
    return found
