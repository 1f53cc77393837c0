"""The agents built for one workspace root, kept across runs, and what a saved file makes stale.

One `ConfiguredHost` (definitions + host configuration → agents) over the latest view's definitions and one
`AgentOrchestrator` serve every run and preview, so the agents a run calls as tools stay built between runs. The
requested agent of a run is built with the task-run observer (`configure_builder`), which bypasses the cache as the
seed says. A saved file evicts the agents whose build reads it: the workspace's index says which
(`Workspace.dependents`, `agents_reading`). Trusted roots only: the workspace's `[tools.*]` and `[providers.*]`
modules are imported from the root (`make_importable`).
"""

from __future__ import annotations

import contextlib
import os
import sys

from oscova_runtime.function_invocation import FunctionInvocationSettings
from oscova_runtime.host import ConfiguredHost
from oscova_runtime.host_config import HostConfig
from oscova_runtime.orchestrator import AgentOrchestrator
from oscova_runtime.paths import is_inside

from ..analysis.files import DefinitionFile, FileKind, file_kind
from ..analysis.workspace import Workspace
from .workspace_view import WorkspaceView


class AgentsCache:
    """The configured host and the agents built for one root; a changed host configuration replaces the host."""

    def __init__(self, root: str, *, trusted: bool = True,
                 function_invocation: FunctionInvocationSettings | None = None) -> None:
        self.root = root
        self.trusted = trusted
        """False (an untrusted workspace): the workspace's tool and provider code stays unimported."""
        self.orchestrator = AgentOrchestrator(function_invocation)
        self._host: ConfiguredHost | None = None
        self._configured_from: HostConfig | None = None
        """The host configuration `_host` was built from (a changed one replaces it)."""
        self._retired: list[ConfiguredHost] = []
        """Configured hosts replaced by a changed configuration: their chat clients are closed at `aclose`."""

    def host_for(self, view: WorkspaceView) -> ConfiguredHost:
        """The configured host over the view's definitions; a changed host configuration (or trust) replaces it
        and drops every cached agent and chat client."""
        config = view.config
        definitions = [f.definition for f in view.agents.values() if f.definition is not None]
        paths = {agent_id: f.path for agent_id, f in view.agents.items()}
        host = self._host
        if host is None or config != self._configured_from or host.trusted != self.trusted:
            if host is not None:
                self._retired.append(host)
                self.orchestrator.invalidate_all()
            host = self._host = ConfiguredHost(self.root, config, definitions, definition_paths=paths,
                                               orchestrator=self.orchestrator, trusted=self.trusted)
            self._configured_from = config.model_copy(deep=True)
        else:
            host.definitions = definitions
            host.definition_paths = paths
        if self.trusted:  # an untrusted root never goes on sys.path: every later import could come from it
            make_importable(self.root, config)
        return host

    def approval_tools(self, view: WorkspaceView, agent_id: str) -> list[str]:
        """The tools `agent_id` selects that need approval (and the host's policy allows)."""
        host = self.host_for(view)
        definition = view.definition(agent_id)
        host.ensure_tools()
        catalogue = host.orchestrator.tools
        names = dict.fromkeys([*definition.tools, *definition.pinned_tools])
        return [n for n in names if n in catalogue and catalogue[n].approval_required
                and host.tool_policy.allows(catalogue[n])]

    def evict(self, agent_id: str) -> bool:
        return self.orchestrator.evict_agent(agent_id)

    def invalidate_agents(self) -> None:
        """Drops every cached agent; the tool catalogue is kept."""
        self.orchestrator.invalidate_all_agents()

    def invalidate_all(self) -> None:
        """Drops every cached agent and the tool catalogue. The workspace's modules stay imported: a process
        imports them once (the language server's run host is restarted when they change)."""
        self.orchestrator.invalidate_all()
        if self._host is not None:
            self._host.forget_tools()

    def evict_stale(self, *stale: set[str] | None) -> list[str]:
        """Evicts the agents `agents_reading` named (of the workspace before a save and after it); every agent when
        one of them is None. Returns the evicted ids, `["*"]` for every agent."""
        if any(ids is None for ids in stale):
            self.invalidate_agents()
            return ["*"]
        named = set().union(*(ids for ids in stale if ids is not None))
        return sorted(agent_id for agent_id in named if self.evict(agent_id))

    async def aclose(self) -> None:
        """Closes the chat clients the configured hosts created."""
        for host in [*self._retired, *([self._host] if self._host else [])]:
            with contextlib.suppress(Exception):
                await host.aclose()
        self._retired.clear()


def agents_reading(workspace: Workspace, path: str) -> set[str] | None:
    """The ids of the agents whose build reads the definition or template at `path`, as `workspace` has them: the
    definitions among the file's dependents (`Workspace.dependents`: the agent itself, those that call it as a tool,
    directly or not, and those it calls, whose checks read it), a template's through the agents that render it;
    None for every agent (a template the host configuration names, which every agent renders); none for another
    kind of file (the host configuration makes every agent stale, and its tools: `AgentsCache.invalidate_all`)."""
    kind = file_kind(path)
    if kind not in (FileKind.DEFINITION, FileKind.TEMPLATE):
        return set()
    starts = {path}
    if kind is FileKind.TEMPLATE:
        uses = workspace.template_uses(path)
        if any(use.agent_path is None for use in uses):
            return None
        starts = {use.agent_path for use in uses if use.agent_path is not None}
    ids: set[str] = set()
    for start in starts:
        for dependent in workspace.dependents(start):
            parsed = workspace.files.get(dependent)
            if isinstance(parsed, DefinitionFile) and parsed.raw_id:
                ids.add(parsed.raw_id)
    return ids


def make_importable(root: str, config: HostConfig) -> None:
    """Puts `root` on `sys.path` for `[tools.*]` and `[providers.*]` code, and forgets a same-named module
    imported from elsewhere (another workspace) so this workspace's own file is used. Trusted roots only."""
    if root not in sys.path:
        sys.path.insert(0, root)
    specs = [t.callable for t in config.tools.values()] + [p.class_ for p in config.providers.values()]
    for top in {spec.partition(":")[0].split(".")[0] for spec in specs}:
        local = os.path.join(root, top)
        if not (os.path.isdir(local) or os.path.isfile(local + ".py")):
            continue
        module = sys.modules.get(top)
        origin = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", []) or []), None)
        if module is not None and (origin is None or not is_inside(origin, root)):
            for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
                del sys.modules[name]


def forget_modules_inside(root: str) -> None:
    """Drops the modules loaded from files inside `root`."""
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if origin and is_inside(origin, root):
            del sys.modules[name]
