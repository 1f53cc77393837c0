"""The workspace: every parsed file, the indexes between them, and incremental updates.

`Workspace.update` re-parses one file and returns exactly the files whose diagnostics may change
(the file, what refers to it, what it refers to), so a server re-checks those and nothing else.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from oscova_runtime.host_config import HostConfig
from oscova_runtime.paths import FileRefused, is_inside, read_bytes

from .files import (
    DefinitionFile,
    FileKind,
    HostFile,
    ParsedFile,
    TemplateFile,
    decode,
    file_kind,
    parse_file,
)

NEVER_SCANNED = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".oscova"})


def find_root(start: str) -> str | None:
    """The nearest folder at or above `start` holding `oscova.toml` or a `pyproject.toml` with `[tool.oscova]`."""
    current = os.path.abspath(start)
    if os.path.isfile(current):
        current = os.path.dirname(current)
    while True:
        if os.path.isfile(os.path.join(current, "oscova.toml")):
            return current
        pyproject = os.path.join(current, "pyproject.toml")
        if os.path.isfile(pyproject):
            text, _ = read_text(pyproject)
            if text is not None and "[tool.oscova" in text:
                return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def read_text(path: str, root: str | None = None) -> tuple[str | None, str | None]:
    """(text, None) or (None, why it was not read): a regular file, inside `root` when given (after symlinks),
    read up to the size limit and no further."""
    try:
        data = read_bytes(path, root=root)
    except FileRefused as refused:
        return None, str(refused)
    return decode(data)


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

    # ----------------------------------------------------------------------------------------- load

    @property
    def host(self) -> HostConfig:
        if self.host_file is not None and self.host_file.config is not None:
            return self.host_file.config
        return _DEFAULT_HOST

    def discover(self) -> list[str]:
        """Every definition, template and host file under the root, minus never-scanned folders."""
        found: list[str] = []
        host_path = self._host_path()
        excluded = self._excluded_dirs(host_path)
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(
                d for d in dirnames
                if d not in NEVER_SCANNED and os.path.join(dirpath, d) not in excluded
                # A folder with its own oscova.toml is a workspace of its own.
                and not os.path.isfile(os.path.join(dirpath, d, "oscova.toml"))
            )
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                kind = file_kind(path)
                if kind is FileKind.DEFINITION or kind is FileKind.TEMPLATE:
                    found.append(path)
        if host_path is not None:
            found.insert(0, host_path)
        return found

    def _host_path(self) -> str | None:
        for name in ("oscova.toml", "pyproject.toml"):
            candidate = os.path.join(self.root, name)
            if os.path.isfile(candidate):
                if name == "pyproject.toml":
                    text, _ = self.read(candidate)
                    if text is None or "[tool.oscova" not in text:
                        continue
                return candidate
        return None

    def _excluded_dirs(self, host_path: str | None) -> set[str]:
        if host_path is None:
            return set()
        parsed = parse_file(host_path, *self.read(host_path))
        assert isinstance(parsed, HostFile)
        if parsed.config is None:
            return set()
        return {os.path.normpath(os.path.join(self.root, p)) for p in parsed.config.host.exclude}

    def read(self, path: str) -> tuple[str | None, str | None]:
        """A file of this workspace from disk: `read_text` within the root (a symlink leaving it is not read)."""
        return read_text(path, self.root)

    def inside(self, path: str) -> bool:
        """Whether `path` (real path) is inside the workspace root: the only files read, rendered or granted."""
        return is_inside(path, self.root)

    def load(self, parsed_files: Iterable[ParsedFile] | None = None) -> None:
        """Reads the whole workspace (or takes files parsed elsewhere, e.g. in worker processes)."""
        if parsed_files is None:
            parsed_files = (parse_file(path, *self.read(path)) for path in self.discover())
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
        if old is not None:
            self._remove(old)
        new: ParsedFile | None = None
        if text is not None or skipped is not None:
            new = parse_file(path, text, skipped)
            self._add(new)
        if kind is FileKind.HOST:
            return set(self.files) | {path}
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
        self.files[parsed.path] = parsed
        if isinstance(parsed, HostFile):
            if parsed.present:
                self.host_file = parsed
            return
        refs = self._outgoing_template_refs(parsed)
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

    def _outgoing_template_refs(self, parsed: ParsedFile) -> set[str]:
        refs: set[str] = set()
        if isinstance(parsed, DefinitionFile):
            if parsed.definition is not None and parsed.definition.instructions_file:
                refs.add(self.resolve_relative(parsed.path, parsed.definition.instructions_file))
            if parsed.inline is not None:
                refs.update(self.resolve_template(r.path) for r in parsed.inline.facts.references)
        elif isinstance(parsed, TemplateFile) and parsed.facts is not None:
            refs.update(self.resolve_template(r.path) for r in parsed.facts.references)
        return refs

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
        return os.path.normpath(os.path.join(os.path.dirname(from_path), target))

    def resolve_template(self, target: str) -> str:
        """Template paths in templates and in the host configuration resolve against the workspace root."""
        return os.path.normpath(os.path.join(self.root, target))

    def definitions(self) -> Iterator[DefinitionFile]:
        for parsed in self.files.values():
            if isinstance(parsed, DefinitionFile):
                yield parsed

    def templates(self) -> Iterator[TemplateFile]:
        for parsed in self.files.values():
            if isinstance(parsed, TemplateFile):
                yield parsed

    def definition_by_id(self, agent_id: str) -> DefinitionFile | None:
        paths = self.defs_by_id.get(agent_id)
        if not paths:
            return None
        parsed = self.files.get(min(paths))
        return parsed if isinstance(parsed, DefinitionFile) else None

    def template_uses(self, path: str) -> list[TemplateUse]:
        """Every way the template at `path` is rendered, through includes as well."""
        return self._uses(path, frozenset())

    def _uses(self, path: str, visiting: frozenset[str]) -> list[TemplateUse]:
        if path in visiting:
            return []
        visiting = visiting | {path}
        uses = self._direct_uses(path)
        for referrer in sorted(self.template_referrers.get(path, ())):
            parsed = self.files.get(referrer)
            if isinstance(parsed, TemplateFile) and parsed.facts is not None:
                refs = [r for r in parsed.facts.references if self.resolve_template(r.path) == path]
                with_context = any(r.with_context for r in refs)
                local = parsed.facts.local_names if with_context else frozenset()
                for use in self._uses(referrer, visiting):
                    uses.append(TemplateUse(use.renderer, use.label, use.agent_path, use.owner_path,
                                            (*use.via, referrer), use.extra_bound | local,
                                            use.no_context or not with_context))
            elif isinstance(parsed, DefinitionFile) and parsed.inline is not None:
                refs = [r for r in parsed.inline.facts.references if self.resolve_template(r.path) == path]
                if refs:
                    with_context = any(r.with_context for r in refs)
                    label = f"agent `{parsed.raw_id or os.path.basename(referrer)}` instructions"
                    uses.append(TemplateUse("personal", label, referrer, referrer, (referrer,),
                                            parsed.inline.facts.local_names if with_context else frozenset(),
                                            not with_context))
        return uses

    def _direct_uses(self, path: str) -> list[TemplateUse]:
        uses: list[TemplateUse] = []
        for referrer in sorted(self.template_referrers.get(path, ())):
            parsed = self.files.get(referrer)
            if isinstance(parsed, DefinitionFile) and parsed.definition is not None:
                target = parsed.definition.instructions_file
                if target and self.resolve_relative(referrer, target) == path:
                    uses.append(TemplateUse("personal", f"agent `{parsed.definition.id}` instructions",
                                            referrer, referrer))
        host = self.host_file
        if host is not None and host.config is not None:
            config = host.config
            if config.environment.template and self.resolve_template(config.environment.template) == path:
                uses.append(TemplateUse("environment", "the environment template", None, host.path))
            if config.memory.system_prompt and self.resolve_template(config.memory.system_prompt) == path:
                uses.append(TemplateUse("memory", "the memory system prompt", None, host.path))
            for name, provider in config.providers.items():
                if provider.template and self.resolve_template(provider.template) == path:
                    uses.append(TemplateUse(name, f"the `{name}` provider's template", None, host.path))
        return uses

    def host_template_paths(self) -> set[str]:
        config = self.host
        paths = {config.environment.template, config.memory.system_prompt}
        paths |= {p.template for p in config.providers.values()}
        return {self.resolve_template(p) for p in paths if p}


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
