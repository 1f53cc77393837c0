"""`AgentOrchestrator` and `AgentBuildRequest` (seed *Agent Runtime*): build, cache and refresh agents."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

from .agent import ChatClientAgent, ChatClientAgentOptions
from .chat import ChatClient, ChatClientBuilder
from .context import AIContextProvider, InvalidOperationError
from .definition import AgentDefinition
from .function_invocation import (
    FunctionInvocationSettings,
    FunctionInvokingChatClient,
    RepeatedCallGuard,
    WorkspaceValidation,
)
from .governance import ALLOW_ALL, ToolPolicy
from .messages import ChatOptions
from .recording import tapped_tool
from .reducer import SummarizingChatReducer
from .session import ChatReducer, InMemoryChatHistoryProvider
from .tools import AIFunction


@dataclass(frozen=True, slots=True)
class BuildContext:
    """What a factory learns about the build it serves."""

    orchestrator: AgentOrchestrator
    requested_definition: AgentDefinition
    requested: bool
    """True for the requested agent, False for an exposed agent-tool dependency built for it."""
    dependencies: Mapping[str, ChatClientAgent]
    """The built exposed dependencies of the definition being built, by id, in `agent_tools` order."""


MaybeAwaitable = Any
ChatClientFactoryFn = Callable[[AgentDefinition, BuildContext], MaybeAwaitable]
ContextProviderFactoryFn = Callable[[AgentDefinition, BuildContext], MaybeAwaitable]
WorkspaceResolverFn = Callable[[AgentDefinition], Sequence[str]]
ChatReducerFactoryFn = Callable[[AgentDefinition, ChatClient], MaybeAwaitable]


class IAgentRunScopeFactory(Protocol):
    """The optional run scope (seed step 7): `create_scope` is called once per run of a built agent, and
    the run (provider assembly, every model call and tool round, post-run hooks) happens inside it."""

    def create_scope(self, definition: AgentDefinition) -> AbstractAsyncContextManager[Any]: ...


@dataclass(slots=True)
class AgentBuildRequest:
    """The complete host-to-runtime contract. Factories may be sync or async."""

    chat_client_factory: ChatClientFactoryFn
    agent_definition: AgentDefinition
    available_agent_definitions: Sequence[AgentDefinition]
    context_provider_factory: ContextProviderFactoryFn
    workspace_resolver: WorkspaceResolverFn
    configure_builder: Callable[[ChatClientBuilder], ChatClientBuilder | None] | None = None
    configure_options: Callable[[ChatClientAgentOptions], ChatClientAgentOptions | None] | None = None
    bypass_requested_agent_cache: bool = False
    chat_reducer_factory: ChatReducerFactoryFn | None = None
    configure_agent_builder: Callable[[ChatClientBuilder, AgentDefinition], ChatClientBuilder | None] | None = None
    chat_options_resolver: Callable[[AgentDefinition], ChatOptions | None] | None = None
    run_scope_factory: IAgentRunScopeFactory | None = None
    """The optional `IAgentRunScopeFactory`: every built agent enters one scope per run."""
    workspace_root: str | None = None
    """The folder relative tool paths resolve against (the configured host: its workspace root); without one,
    the first workspace directory of the agent (a port addition: the seed says nothing of relative paths)."""
    tool_policy: ToolPolicy = ALLOW_ALL
    """The host's tool policy, checked by the governed function-invocation loop before every call (a port
    addition: the seed's host supplies it to that client)."""

    @property
    def requested_agent_cacheable(self) -> bool:
        """A requested agent is reused by id only when every condition of the seed holds."""
        return (
            not self.agent_definition.exposed_as_tool
            and self.configure_builder is None
            and self.configure_options is None
            and self.configure_agent_builder is None
            and not self.bypass_requested_agent_cache
        )


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _required(request: AgentBuildRequest, name: str, definition: AgentDefinition) -> Callable[..., Any]:
    """A required callback of the request; a null one fails here, when it is invoked (seed: "The required
    callbacks have non-nullable contracts. A null callback fails when invoked")."""
    callback = getattr(request, name)
    if callback is None:
        raise InvalidOperationError(f"The build request's {name} is None; it is required to build {definition.id!r}")
    return cast(Callable[..., Any], callback)


class AIAgentCollection:
    """The agent cache. `get_or_add` makes concurrent misses converge on the first instance added."""

    def __init__(self) -> None:
        self._agents: dict[str, ChatClientAgent] = {}

    def get(self, agent_id: str) -> ChatClientAgent | None:
        return self._agents.get(agent_id)

    def get_or_add(self, agent_id: str, agent: ChatClientAgent) -> ChatClientAgent:
        return self._agents.setdefault(agent_id, agent)

    def set(self, agent_id: str, agent: ChatClientAgent) -> None:
        self._agents[agent_id] = agent

    def remove(self, agent_id: str) -> bool:
        return self._agents.pop(agent_id, None) is not None

    def clear(self) -> None:
        self._agents.clear()

    def __contains__(self, agent_id: object) -> bool:
        return agent_id in self._agents

    def __len__(self) -> int:
        return len(self._agents)

    def ids(self) -> list[str]:
        return list(self._agents)


@runtime_checkable
class IAgentOrchestrator(Protocol):
    """The orchestrator's interface (seed: "The supported entry points are IAgentOrchestrator, its default
    AgentOrchestrator, and AgentBuildRequest"). A host depends on this, so it can be given another."""

    @property
    def tools(self) -> Mapping[str, AIFunction]: ...

    def sync_tools(self, tools: Mapping[str, AIFunction] | Sequence[AIFunction]) -> None: ...

    def evict_agent(self, agent_id: str) -> bool: ...

    def invalidate_all_agents(self) -> None: ...

    def invalidate_all(self) -> None: ...

    async def get_or_create_agent(self, request: AgentBuildRequest) -> ChatClientAgent: ...


class AgentOrchestrator(IAgentOrchestrator):
    """Builds and caches agents; it does not run them (call `run` / `run_streaming` on the result).

    Eviction and invalidation drop references only; they close nothing (seed: "Cache eviction removes
    references. It does not call Dispose on chat clients or context providers."). Resources belong to
    whoever created them: `ConfiguredHost.aclose` closes the chat clients the host made.
    """

    def __init__(self, settings: FunctionInvocationSettings | None = None) -> None:
        self.agents = AIAgentCollection()
        self._tools: Mapping[str, AIFunction] = {}
        self.function_invocation_settings = settings or FunctionInvocationSettings()

    # -- tools -------------------------------------------------------------------------------------

    @property
    def tools(self) -> Mapping[str, AIFunction]:
        """The synchronized tool catalogue (read on each invocation by tool providers)."""
        return self._tools

    def sync_tools(self, tools: Mapping[str, AIFunction] | Sequence[AIFunction]) -> None:
        """Atomically replaces the tool catalogue; the agent cache is kept."""
        if isinstance(tools, Mapping):
            self._tools = dict(tools)
        else:
            self._tools = {t.name: t for t in tools}

    # -- invalidation --------------------------------------------------------------------------------

    def evict_agent(self, agent_id: str) -> bool:
        return self.agents.remove(agent_id)

    def invalidate_all_agents(self) -> None:
        self.agents.clear()

    def invalidate_all(self) -> None:
        self.agents.clear()
        self._tools = {}

    # -- build ---------------------------------------------------------------------------------------

    async def get_or_create_agent(self, request: AgentBuildRequest) -> ChatClientAgent:
        definition = request.agent_definition
        cacheable = request.requested_agent_cacheable
        if cacheable:
            cached = self.agents.get(definition.id)
            if cached is not None:
                return cached
        agent = await self._build(request, definition, requested=True, path={definition.id}, built={})
        if cacheable:
            return self.agents.get_or_add(definition.id, agent)
        return agent

    def _visible_dependencies(self, request: AgentBuildRequest, definition: AgentDefinition) -> list[AgentDefinition]:
        available = {d.id: d for d in request.available_agent_definitions if d is not None}
        found = []
        for agent_id in definition.agent_tools:
            child = available.get(agent_id)
            if child is not None and child.exposed_as_tool:
                found.append(child)
        return found

    async def _dependency(
        self, request: AgentBuildRequest, child: AgentDefinition, path: set[str], built: dict[str, ChatClientAgent]
    ) -> ChatClientAgent:
        """A cached dependency is reused unless `configure_agent_builder` asks to rebuild and replace it."""
        if child.id in built:
            return built[child.id]
        if request.configure_agent_builder is None:
            cached = self.agents.get(child.id)
            if cached is not None:
                return cached
            agent = await self._build(request, child, requested=False, path=path, built=built)
            agent = self.agents.get_or_add(child.id, agent)
        else:
            agent = await self._build(request, child, requested=False, path=path, built=built)
            self.agents.set(child.id, agent)
        built[child.id] = agent
        return agent

    async def _build(
        self, request: AgentBuildRequest, definition: AgentDefinition, *, requested: bool,
        path: set[str], built: dict[str, ChatClientAgent],
    ) -> ChatClientAgent:
        # 1-2. exposed dependencies first, depth-first; the per-build guard stops cycles.
        dependencies: dict[str, ChatClientAgent] = {}
        for child in self._visible_dependencies(request, definition):
            if child.id in path:
                continue
            path.add(child.id)
            try:
                dependencies[child.id] = await self._dependency(request, child, path, built)
            finally:
                path.discard(child.id)
        context = BuildContext(self, request.agent_definition, requested, dependencies)

        # 3. providers, then the chat client.
        providers = await _maybe_await(_required(request, "context_provider_factory", definition)(definition, context))
        if providers is None:
            raise InvalidOperationError(
                f"The context provider factory returned None for {definition.id!r}; return [] when none apply"
            )
        providers = list(providers)
        for index, provider in enumerate(providers):
            if not isinstance(provider, AIContextProvider):
                raise InvalidOperationError(
                    f"Context provider {index + 1} for {definition.id!r} is "
                    f"{'null' if provider is None else type(provider).__name__}, not an AIContextProvider"
                )
        chat_client = await _maybe_await(_required(request, "chat_client_factory", definition)(definition, context))
        if chat_client is None:
            raise InvalidOperationError(f"The chat client factory returned None for {definition.id!r}")

        # 4. options with the definition's id, name, description, providers and cloned default options.
        defaults = request.chat_options_resolver(definition) if request.chat_options_resolver else None
        chat_options = (defaults or ChatOptions.from_mapping(definition.chat_options)).clone()
        options = ChatClientAgentOptions(
            definition.id, definition.display_name, definition.description, chat_options, providers
        )

        # 5. history provider with a reducer when compaction is enabled and the reducer exists.
        reducer: ChatReducer | None = None
        compaction = definition.compaction_settings
        if compaction is not None:
            if request.chat_reducer_factory is None:
                reducer = SummarizingChatReducer(chat_client, keep_last=compaction.keep_last)
            else:
                reducer = await _maybe_await(request.chat_reducer_factory(definition, chat_client))
        options.chat_history_provider = InMemoryChatHistoryProvider(reducer)

        # 6. requested-agent option customization.
        if requested and request.configure_options is not None:
            options = request.configure_options(options) or options

        # 7. one governed function-invocation client, then the middleware in the seed's order.
        builder = ChatClientBuilder(chat_client)
        builder.use(lambda inner: FunctionInvokingChatClient(
            inner, self.function_invocation_settings, builder.function_middleware, request.tool_policy))
        builder.use_function_middleware(WorkspaceValidation(lambda: request.workspace_resolver(definition),
                                                         request.workspace_root))
        if request.configure_agent_builder is not None:
            builder = request.configure_agent_builder(builder, definition) or builder
        if requested and request.configure_builder is not None:
            builder = request.configure_builder(builder) or builder
        builder.use_function_middleware(tapped_tool)  # a recorded or replayed run sees every agent's tool calls
        builder.use_function_middleware(RepeatedCallGuard())
        scope_factory = request.run_scope_factory
        run_scope = (lambda: scope_factory.create_scope(definition)) if scope_factory is not None else None

        # 8. the agent (construction validates provider state keys).
        return ChatClientAgent(builder.build(), options, run_scope=run_scope)


async def build_minimal_agent(
    orchestrator: IAgentOrchestrator, chat_client: ChatClient, definition: AgentDefinition,
) -> ChatClientAgent:
    """The seed's minimal helper: one definition with its standing instruction (rendered with an empty
    model) and no tools or workspaces. A real host resolves a chat client, providers and workspaces per
    definition."""
    from .providers.personal import AgentPersonalContextProvider

    request = AgentBuildRequest(
        chat_client_factory=lambda _definition, _context: chat_client,
        agent_definition=definition,
        available_agent_definitions=[definition],
        context_provider_factory=lambda current, _context: [
            AgentPersonalContextProvider(current.instructions, lambda _invoking: {})],
        workspace_resolver=lambda _definition: [],
    )
    return await orchestrator.get_or_create_agent(request)
