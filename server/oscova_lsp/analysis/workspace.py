"""The workspace: every parsed file, the indexes between them, and incremental updates.

`Workspace.update` re-parses one file and returns exactly the files whose diagnostics may change
(the file, what refers to it, what it refers to), so a server re-checks those and nothing else. Which files a
workspace holds is `discovery`'s question; how each template is rendered, `template_uses`'; what a broken
file keeps of its last good version, `last_good`'s.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections import defaultdict
from collections.abc import Iterable, Iterator
from copy import copy as _shallow_copy

from oscova_runtime.host_config import HostConfig
from oscova_runtime.paths import Boundary

from .discovery import discover
from .disk import DiskAnswer, ask_disk, read_text
from .files import (
    DefinitionFile,
    EvalFile,
    FileKind,
    HostFile,
    ParsedFile,
    TemplateFile,
    file_kind,
    parse_file,
)
from .jinja_source import TemplateFacts
from .last_good import stand_in
from .template_uses import TemplateUse, TemplateUses


class Workspace:
    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.files: dict[str, ParsedFile] = {}
        self.host_file: HostFile | None = None
        self.defs_by_id: dict[str, set[str]] = defaultdict(set)
        self.agent_tool_referrers: dict[str, set[str]] = defaultdict(set)
        self.template_referrers: dict[str, set[str]] = defaultdict(set)
        self.references_of: dict[str, set[str]] = {}
        self.excluded: tuple[str, ...] = ()
        self.notices: list[str] = []
        self.generation = 0
        """Counts the changes of files: a feature may keep what it derives while the generation stays."""
        self.agent_graph = 0
        """Counts the changes of the agents' ids, exposure and `agent_tools` (what agent cycles derive from)."""
        self._uses = TemplateUses(self)
        """The templates' uses and include cycles, settled per workspace state."""
        self._by_id: dict[str, DefinitionFile | None] = {}
        """`definition_by_id`'s answers for the current workspace state (a check asks for each agent often)."""
        self._boundary: Boundary | None = None
        """The root's `Boundary` during one pass over the workspace (`one_pass`), None otherwise."""
        self.probes: dict[tuple[str, str], DiskAnswer] | None = None
        """While recording (`Analysis.check_all`): every disk question the checks asked (`ask_disk`: `inside`,
        `is_file`, `real_path`, `home_folder`) and its answer, so stored results are reused only while the
        answers stay the same."""
        self.last_good: dict[str, DefinitionFile | HostFile | TemplateFile] = {}
        """Each file's last version without a syntax error: it stands in for what a definition or the host
        configuration, while broken, does not say; a template's tells which lines are being edited
        (`last_good.stand_in`)."""

    def fork(self) -> Workspace:
        """A copy sharing the parsed files (never changed once added) but not the indexes, so that updating
        one leaves the other as it was."""
        copy = _shallow_copy(self)  # attributes not listed here are shared: set once, never updated
        copy.files = dict(self.files)
        copy.defs_by_id = defaultdict(set, {k: set(v) for k, v in self.defs_by_id.items()})
        copy.agent_tool_referrers = defaultdict(set, {k: set(v) for k, v in self.agent_tool_referrers.items()})
        copy.template_referrers = defaultdict(set, {k: set(v) for k, v in self.template_referrers.items()})
        copy.references_of = dict(self.references_of)  # each value is replaced, never changed in place
        copy.notices = list(self.notices)
        copy._uses = self._uses.fork(copy)
        copy._by_id = dict(self._by_id)
        copy.last_good = dict(self.last_good)
        copy.probes = None
        return copy

    # ----------------------------------------------------------------------------------------- load

    @property
    def host(self) -> HostConfig:
        if self.host_file is not None and self.host_file.config is not None:
            return self.host_file.config
        return _DEFAULT_HOST

    def read(self, path: str) -> tuple[str | None, str | None]:
        """A file of this workspace from disk: `read_text` within the root (a symlink leaving it is not read)."""
        return read_text(path, self._boundary or self.root)

    def _ask(self, kind: str, path: str) -> DiskAnswer:
        found = ask_disk(kind, path, self.root, self._boundary)
        if self.probes is not None:
            self.probes[(kind, path)] = found
        return found

    def inside(self, path: str) -> bool:
        """Whether `path` (real path) is inside the workspace root: the only files read, rendered or granted."""
        return self._ask("inside", path) is True

    def is_file(self, path: str) -> bool:
        """`os.path.isfile`, for the checks: one of the disk questions the stored results re-ask."""
        return self._ask("file", path) is True

    def real_path(self, path: str) -> str:
        """`os.path.realpath`, for the checks (a granted folder swapped for a symlink is a new answer)."""
        return str(self._ask("real", path))

    def home_folder(self) -> str:
        """The home folder's real path, for the checks (a changed `HOME` is a new answer)."""
        return str(self._ask("home", "~"))

    @contextlib.contextmanager
    def one_pass(self) -> Iterator[None]:
        """One pass over many files (a load, a check of every file): folders' real paths are resolved once
        for the pass (`Boundary`), not once per file."""
        if self._boundary is not None:
            yield
            return
        self._boundary = Boundary(self.root)
        try:
            yield
        finally:
            self._boundary = None

    def load(self, parsed_files: Iterable[ParsedFile] | None = None) -> None:
        """Reads the whole workspace (or takes files parsed elsewhere, e.g. in worker processes)."""
        if parsed_files is None:
            parsed_files = (parse_file(path, *self.read(path)) for path in discover(self.root))
        for parsed in parsed_files:
            self._add(parsed)
            if parsed.skipped:
                self.notices.append(f"{parsed.path}: {parsed.skipped}")

    def is_host_path(self, path: str) -> bool:
        path = os.path.abspath(path)
        return os.path.dirname(path) == self.root and os.path.basename(path) in ("oscova.toml", "pyproject.toml")

    # -------------------------------------------------------------------------------------- updates

    def update_from_disk(self, path: str) -> set[str]:
        """`update` with the file as it is on disk: gone, read, or kept with the reason it was not read."""
        if not os.path.lexists(path):
            return self.update(path, None)
        return self.update(path, *self.read(path))

    def update(self, path: str, text: str | None, skipped: str | None = None) -> set[str]:
        """Replaces one file's text (None: deleted, or not read for the reason `skipped`) and returns every file
        whose diagnostics may change."""
        path = os.path.abspath(path)
        kind = file_kind(path)
        if kind is None:
            return set()
        if kind is FileKind.HOST and not self.is_host_path(path):
            return set()
        old = self.files.get(path)
        before = self._dependents(old) if old is not None else set()
        graph = self.agent_graph
        if old is not None:
            self._remove(old)
        new: ParsedFile | None = None
        if text is not None or skipped is not None:
            parsed = parse_file(path, text, skipped)
            new = stand_in(parsed, self.last_good.get(path)) if text is not None else parsed
            self._add(new)
        else:
            self.last_good.pop(path, None)
        if isinstance(old, DefinitionFile) and isinstance(new, DefinitionFile) and \
                _agent_graph_facts(old) == _agent_graph_facts(new):
            self.agent_graph = graph  # an edit that leaves the agent_tools graph as it was (most keystrokes)
        if kind is FileKind.HOST:
            return set(self.files) | {path}
        if kind is FileKind.DEFINITION:  # the evaluations of the agent read its id and tools
            ids = {p.raw_id for p in (old, new) if isinstance(p, DefinitionFile) and p.raw_id}
            return self._affected(path, old, new, before) | self.evaluations(ids)
        return self._affected(path, old, new, before)

    def _affected(self, path: str, old: ParsedFile | None, new: ParsedFile | None, before: set[str]) -> set[str]:
        """The files whose diagnostics may change when `old` became `new`; `before`: `old`'s dependents."""
        if isinstance(old, DefinitionFile) and isinstance(new, DefinitionFile) and \
                _cross_file_facts(old) == _cross_file_facts(new):
            # An edit other files cannot see (instructions text, model, tools, ...): this file, plus the
            # definitions whose related information and fixes point at a line that moved.
            if _cross_file_positions(old) == _cross_file_positions(new) or not new.raw_id:
                return {path}
            near = self.agent_tool_referrers.get(new.raw_id, set()) | self.defs_by_id.get(new.raw_id, set())
            return {p for p in near if p in self.files} | {path}
        after = self._dependents(new) if new is not None else set()
        affected = before | after | {path}
        if new is None:
            affected.discard(path)
        return {p for p in affected if p in self.files} | ({path} if new is None else set())

    def _add(self, parsed: ParsedFile) -> None:
        self._forget_uses(parsed.path)
        if isinstance(parsed, DefinitionFile):
            self.agent_graph += 1
        self.files[parsed.path] = parsed
        if isinstance(parsed, DefinitionFile | HostFile) and parsed.doc is not None and parsed.doc.ok or \
                isinstance(parsed, TemplateFile) and parsed.facts is not None and not parsed.facts.syntax_errors:
            self.last_good[parsed.path] = parsed
        if isinstance(parsed, HostFile):
            if parsed.present:
                self.host_file = parsed
            return
        refs = self.template_refs(parsed)
        self.references_of[parsed.path] = refs
        for target in refs:
            self.template_referrers[target].add(parsed.path)
        if isinstance(parsed, DefinitionFile):
            if parsed.raw_id:
                self.defs_by_id[parsed.raw_id].add(parsed.path)
            if parsed.definition is not None:
                for agent_id in parsed.definition.agent_tools:
                    self.agent_tool_referrers[agent_id].add(parsed.path)

    def _remove(self, parsed: ParsedFile) -> None:
        self._forget_uses(parsed.path)
        if isinstance(parsed, DefinitionFile):
            self.agent_graph += 1
        self.files.pop(parsed.path, None)
        if isinstance(parsed, HostFile):
            if self.host_file is parsed:
                self.host_file = None
            return
        for target in self.references_of.pop(parsed.path, ()):
            self.template_referrers[target].discard(parsed.path)
        if isinstance(parsed, DefinitionFile):
            if parsed.raw_id:
                self.defs_by_id[parsed.raw_id].discard(parsed.path)
                if not self.defs_by_id[parsed.raw_id]:
                    del self.defs_by_id[parsed.raw_id]
            if parsed.definition is not None:
                for agent_id in parsed.definition.agent_tools:
                    self.agent_tool_referrers[agent_id].discard(parsed.path)

    def _forget_uses(self, path: str) -> None:
        self.generation += 1
        self._uses.forget(path)
        self._by_id.clear()

    def template_refs(self, parsed: ParsedFile) -> set[str]:
        """The templates `parsed` renders or includes directly: its `instructions_file`, its references."""
        refs: set[str] = set()
        if isinstance(parsed, DefinitionFile):
            if parsed.definition is not None and parsed.definition.instructions_file:
                refs.add(self.resolve_relative(parsed.path, parsed.definition.instructions_file))
            if parsed.inline is not None:
                refs.update(self.resolve_template(r.path) for r in parsed.inline.facts.references)
        elif isinstance(parsed, TemplateFile) and parsed.facts is not None:
            refs.update(self.resolve_template(r.path) for r in parsed.facts.references)
        return refs

    def dependents(self, path: str) -> set[str]:
        """The file at `path` and every file whose diagnostics depend on it as it is now (what an `update` of
        it re-checks); the host configuration: every file."""
        parsed = self.files.get(path)
        if parsed is None:
            return set()
        if isinstance(parsed, HostFile):
            return set(self.files)
        return {p for p in self._dependents(parsed) if p in self.files} | {path}

    def _dependents(self, parsed: ParsedFile) -> set[str]:
        """Files whose diagnostics depend on `parsed` as it is now."""
        out: set[str] = set(self.template_referrers.get(parsed.path, ()))
        out |= self._template_closure(self.references_of.get(parsed.path, ()))
        if isinstance(parsed, TemplateFile):
            out |= self._template_closure([parsed.path])
        if isinstance(parsed, DefinitionFile) and parsed.raw_id:
            agent_id = parsed.raw_id
            out |= self.defs_by_id.get(agent_id, set())
            out |= self._reverse_agent_closure(agent_id)
            if parsed.definition is not None:
                for target in parsed.definition.agent_tools:
                    out |= self.defs_by_id.get(target, set())
        return out

    def template_closure(self, starts: Iterable[str]) -> set[str]:
        """`starts` and every template they include, directly or not."""
        return self._template_closure(starts)

    def reverse_agent_closure(self, agent_id: str) -> set[str]:
        """Definitions that reach `agent_id` through `agent_tools`."""
        return self._reverse_agent_closure(agent_id)

    def _template_closure(self, starts: Iterable[str]) -> set[str]:
        seen: set[str] = set()
        stack = list(starts)
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            stack.extend(self.references_of.get(current, ()))
        return seen

    def _reverse_agent_closure(self, agent_id: str) -> set[str]:
        """Definitions that reach `agent_id` through `agent_tools` (their cycle and lookup checks)."""
        seen_ids: set[str] = set()
        out: set[str] = set()
        stack = [agent_id]
        while stack:
            current = stack.pop()
            if current in seen_ids:
                continue
            seen_ids.add(current)
            for referrer in self.agent_tool_referrers.get(current, ()):
                out.add(referrer)
                ref = self.files.get(referrer)
                if isinstance(ref, DefinitionFile) and ref.raw_id:
                    stack.append(ref.raw_id)
        return out

    # -------------------------------------------------------------------------------------- queries

    def resolve_relative(self, from_path: str, target: str) -> str:
        return _resolved(from_path, target, True)

    def resolve_template(self, target: str) -> str:
        """Template paths in templates and in the host configuration resolve against the workspace root."""
        return _resolved(self.root, target, False)

    def definitions(self) -> Iterator[DefinitionFile]:
        for parsed in self.files.values():
            if isinstance(parsed, DefinitionFile):
                yield parsed

    def evaluations(self, agents: set[str]) -> set[str]:
        """The paths of the evaluation files of these agents (the few files of their kind: no index kept)."""
        return {path for path, parsed in self.files.items() if isinstance(parsed, EvalFile)
                and parsed.evaluation is not None and parsed.evaluation.agent in agents}

    def templates(self) -> Iterator[TemplateFile]:
        for parsed in self.files.values():
            if isinstance(parsed, TemplateFile):
                yield parsed

    def definition_by_id(self, agent_id: str) -> DefinitionFile | None:
        """The definition with the id `agent_id` (of several, the first by path), or None."""
        if agent_id in self._by_id:
            return self._by_id[agent_id]
        paths = self.defs_by_id.get(agent_id)
        parsed = self.files.get(min(paths)) if paths else None
        found = self._by_id[agent_id] = parsed if isinstance(parsed, DefinitionFile) else None
        return found

    def template_uses(self, path: str) -> list[TemplateUse]:
        """Every distinct way the template at `path` is rendered, through includes as well
        (`TemplateUses.of`)."""
        return self._uses.of(path)

    def is_rendered(self, path: str) -> bool:
        """Whether any use renders the template at `path` (`template_uses` is not empty)."""
        return self._uses.rendered(path)

    def include_cycle(self, path: str) -> tuple[str, list[str]] | None:
        """For the one template that reports an include cycle: the reference target that enters the cycle, and
        the cycle from `path` back to it (`TemplateUses.include_cycle`)."""
        return self._uses.include_cycle(path)

    def reference_targets(self, parsed: ParsedFile, facts: TemplateFacts) -> dict[str, bool]:
        """Target -> whether some reference of `parsed` to it passes the render context (kept per file)."""
        return self._uses.reference_targets(parsed, facts)

    def host_template_paths(self) -> set[str]:
        config = self.host
        paths = {config.environment.template, config.memory.system_prompt}
        paths |= {p.template for p in config.providers.values()}
        return {self.resolve_template(p) for p in paths if p}


@functools.lru_cache(maxsize=1 << 14)
def _resolved(base: str, target: str, relative: bool) -> str:
    """`target` joined to `base` (to its folder when `relative`) and normalized: string work only, no disk. The
    index, the uses and the checks resolve each reference several times a check, so the answers are kept."""
    folder = os.path.dirname(base) if relative else base
    return os.path.normpath(os.path.join(folder, target))


def _cross_file_facts(parsed: DefinitionFile) -> tuple[object, ...]:
    """What other files' diagnostics read from a definition: its id, whether it is exposed or shared, which
    agents it calls, which templates it renders and the names its inline instructions set for them."""
    definition = parsed.definition
    inline = parsed.inline.facts if parsed.inline is not None else None
    return (
        parsed.raw_id, definition is None,
        definition.exposed_as_tool if definition else None, definition.shared if definition else None,
        tuple(definition.agent_tools) if definition else (), definition.instructions_file if definition else None,
        tuple(r.path for r in inline.references) if inline else (), inline.local_names if inline else None,
    )


def _agent_graph_facts(parsed: DefinitionFile) -> tuple[object, ...]:
    """What the graph of `agent_tools` edges reads from a definition."""
    definition = parsed.definition
    return (parsed.raw_id, definition is None, definition.exposed_as_tool if definition else None,
            tuple(definition.agent_tools) if definition else ())


def _cross_file_positions(parsed: DefinitionFile) -> tuple[object, ...]:
    """Where other files' related information and quick fixes point in a definition."""
    doc = parsed.doc
    if doc is None:
        return ()
    id_span, exposed = doc.span(("id",)), doc.span(("exposed_as_tool",))
    id_is_last_line = id_span is not None and id_span.value.end.line + 1 >= parsed.lines.line_count
    return (id_span.key if id_span else None, id_span.value if id_span else None,
            exposed.value if exposed else None, id_is_last_line)


_DEFAULT_HOST = HostConfig()
