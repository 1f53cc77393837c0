"""What the rule families' checks share: the workspace being checked, and where findings point."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from oscova_runtime.catalogue import ProviderPlan, plan_providers
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.host_config import HostConfig

from ..files import DefinitionFile, HostFile, ParsedFile
from ..template_uses import LISTED_USES
from ..text import LineIndex, Range
from ..toml_source import TomlDocument
from ..workspace import Workspace
from ..yaml_source import Path, YamlDocument

T = TypeVar("T")


class Document(Protocol):
    """A YAML or TOML document with the span of every key and value."""

    def value_range(self, path: Path) -> Range | None: ...

    def best_range(self, path: Path) -> Range: ...


def value_place(doc: Document, path: Path, around: Path | None = None) -> Range:
    """Where a finding about the value at `path` points: that value, else the best range of `around` (by
    default `path` itself: the nearest enclosing value that exists)."""
    return doc.value_range(path) or doc.best_range(path if around is None else around)


def first_line(lines: LineIndex) -> Range:
    """The first line with text: where a finding about a whole file points."""
    for n in range(lines.line_count):
        if lines.line_text(n).strip():
            return lines.line_range(n)
    return Range.of(0, 0, 0, 0)


def listed(items: list[str], total: int | None = None) -> str:
    """`a, b, c` — or the first `LISTED_USES` and how many more of `total` (repeats named once)."""
    unique = list(dict.fromkeys(items))
    total = len(unique) if total is None else total
    shown = unique[:LISTED_USES]
    return ", ".join(shown) + (f" and {total - len(shown)} more" if total > len(shown) else "")


@dataclass(frozen=True, slots=True)
class Agent:
    """A definition that parsed and validated, as the checks of its rules read it."""

    doc: YamlDocument
    definition: AgentDefinition
    plan: ProviderPlan
    """The providers the configured host builds for it (`plan_providers`), which the checks judge."""


Check = Callable[["Context", Any], list[Any]]
"""The one signature of every check: `(ctx, parsed) -> diagnostics` (`checks.CHECKS` lists them by file kind)."""


class Context:
    """The workspace one checker checks against, and what its checks compute once for many files."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self._memo: dict[str, tuple[Hashable, Any]] = {}
        self._by_host: dict[str, tuple[HostConfig, Any]] = {}
        self._agent: tuple[ParsedFile, Agent | None] | None = None

    def begin(self) -> None:
        """A new file's checks start: what was computed for the last one is dropped (the host may have changed)."""
        self._agent = None

    def agent(self, parsed: DefinitionFile) -> Agent | None:
        """The definition as its checks read it, computed once for the file being checked; None while it does not
        parse or validate, or while others see its last good facts (`borrows_all`)."""
        if self._agent is not None and self._agent[0] is parsed:
            return self._agent[1]
        doc, definition = parsed.doc, parsed.definition
        found = None
        if doc is not None and definition is not None and not parsed.borrows_all:
            found = Agent(doc, definition, plan_providers(definition, self.ws.host, requested=True))
        self._agent = (parsed, found)
        return found

    def host_configuration(self, parsed: HostFile) -> tuple[HostConfig | None, TomlDocument | None]:
        """The host configuration and its document, or Nones while it does not parse (or others see its last
        good facts)."""
        if parsed.borrows_all:
            return None, None
        return parsed.config, parsed.doc

    def rel(self, path: str) -> str:
        """A path as messages show it: relative to the workspace root."""
        return _relative(path, self.ws.root) if os.path.isabs(path) else os.path.relpath(path, self.ws.root)

    def id_range(self, path: str) -> Range:
        """Where the definition at `path` writes its id (related information points there)."""
        parsed = self.ws.files.get(path)
        if isinstance(parsed, DefinitionFile) and parsed.doc is not None:
            return value_place(parsed.doc, ("id",), ())
        return Range.of(0, 0, 0, 0)

    def memo(self, key: str, version: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, kept under `key` until `version` changes (a fork of the analysis starts afresh)."""
        found = self._memo.get(key)
        if found is None or found[0] != version:
            found = self._memo[key] = (version, compute())
        return cast(T, found[1])

    def for_host(self, key: str, compute: Callable[[HostConfig], T]) -> T:
        """`compute(host)` for the workspace's host configuration, kept under `key` while it is the same object (a
        changed configuration is a new object; it is held here, so its identity is not reused meanwhile)."""
        host = self.ws.host
        found = self._by_host.get(key)
        if found is None or found[0] is not host:
            found = self._by_host[key] = (host, compute(host))
        return cast(T, found[1])


@functools.lru_cache(maxsize=4096)
def _relative(path: str, root: str) -> str:
    """`os.path.relpath` of an absolute path, which depends on nothing else: messages name the same files again
    and again (an agent tool's definition, an includer)."""
    return os.path.relpath(path, root)
