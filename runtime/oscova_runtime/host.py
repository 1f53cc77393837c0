"""The configured host: from an AgentDefinition, the HostConfig and the workspace root, an AgentBuildRequest.

The provider list comes from `catalogue.plan_providers` (the same plan the analyzer checks), in its
order and with its state keys. File locations, relative to the workspace root:
- personal context of shared agents: `.oscova/personal/<user id>/<slug>/context.md`
- private notes: `.oscova/notes/<user id>/<agent id>.md`
- skills: `skills/<name>/SKILL.md`; the Library: `library/`; memory: `[memory] root`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, cast

from .catalogue import PlannedProvider, plan_providers
from .chat import ChatClient
from .context import AIContext, AIContextProvider, InvokingContext
from .definition import AgentDefinition
from .governance import ToolPolicy
from .grants import granted_directories
from .host_config import HostConfig
from .orchestrator import AgentBuildRequest, AgentOrchestrator, BuildContext, IAgentOrchestrator
from .paths import FileRefused, is_inside, refusal_note
from .prompt_budget import PromptBudgetClient, PromptLimit
from .providers import (
    AgentAsToolProvider,
    AgentPersonalContextProvider,
    AgentToolProvider,
    DeclaredTemplateProvider,
    EnvironmentContextProvider,
    ISharedAgentPersonalContextRepository,
    LibraryContextProvider,
    MemoryContextProvider,
    MemoryStore,
    PrivateNotesContextProvider,
    SharedAgentPersonalContextRepository,
    SkillsContextProvider,
    TodoListContextProvider,
    ToolSearchProvider,
    VisionToolProvider,
    load_custom_provider,
    memory_tools,
)
from .recording import now as run_clock
from .telemetry import AgentInvocationScopes, observed_model_client
from .templates import TemplateError, TemplateRenderer
from .tokens import ESTIMATE, Tokenizer, tokenizer_for
from .tools import AIFunction, BuiltinToolContext, builtin_tools, load_custom_tool, user_now

AGENT_INVOCATIONS = AgentInvocationScopes()
RUN_VARIABLES: ContextVar[Mapping[str, Any] | None] = ContextVar("oscova_run_variables", default=None)
"""Values over `[variables]` for the runs started in this context (an evaluation case's `variables`)."""
"""Every agent a host builds runs as an observed invocation (nothing happens unless a run observes calls)."""


class HostConfigurationError(Exception):
    """The host configuration cannot serve this run; the message says what to change."""


NOT_TRUSTED = "not loaded: workspace not trusted"
"""Why a custom tool or provider is left out of an untrusted host."""


class InactiveProvider(AIContextProvider):
    """A listed provider that contributes nothing under the host's conditions; it keeps its state keys
    so construction-time checks still apply."""

    def __init__(self, type_name: str, state_keys: Sequence[str], reason: str) -> None:
        self.type_name = type_name
        self.state_keys = tuple(state_keys)
        self.reason = reason

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        return AIContext()


ProviderBuilder = Callable[["ConfiguredHost", AgentDefinition, BuildContext], AIContextProvider]
PROVIDER_BUILDERS: dict[str, ProviderBuilder] = {}
"""How the host builds each built-in provider type of the catalogue (`catalogue.PROVIDERS`), by type: one
builder each (`builds` refuses a second; tests/test_facts.py checks every type has one)."""


def builds(provider_type: str) -> Callable[[ProviderBuilder], ProviderBuilder]:
    """Registers the builder of a catalogue provider type."""
    def register(builder: ProviderBuilder) -> ProviderBuilder:
        if provider_type in PROVIDER_BUILDERS:
            raise RuntimeError(f"a second builder for the provider type {provider_type!r}")
        PROVIDER_BUILDERS[provider_type] = builder
        return builder

    return register


class ConfiguredHost:
    """Builds agents of one workspace. Chat clients are host-managed: one per `[models.NAME]`.

    `orchestrator` and `personal_repository` may be any implementation of `IAgentOrchestrator` and
    `ISharedAgentPersonalContextRepository`; by default an `AgentOrchestrator` and the file repository
    under `.oscova/personal/<user id>`. `[host] deny_tools` and `allow_egress` form the tool policy,
    read at call time.
    """

    def __init__(
        self, root: str | os.PathLike[str], config: HostConfig | None = None,
        definitions: Sequence[AgentDefinition] = (), *, definition_paths: Mapping[str, str] | None = None,
        orchestrator: IAgentOrchestrator | None = None, chat_clients: Mapping[str, ChatClient] | None = None,
        personal_repository: ISharedAgentPersonalContextRepository | None = None, trusted: bool = True,
    ) -> None:
        self.root = os.path.realpath(os.fspath(root))
        self.config = config or HostConfig()
        self.definitions = list(definitions)
        self.definition_paths = dict(definition_paths or {})
        self.orchestrator: IAgentOrchestrator = orchestrator or AgentOrchestrator()
        self.trusted = trusted
        """False: the workspace's `[tools.*]` and `[providers.*]` code is never imported (nor run)."""
        self.renderer = TemplateRenderer(self.root)
        self._chat_clients: dict[str, ChatClient] = {  # observed like the clients the host makes
            name: observed_model_client(client, *self._endpoint_of(name)) for name, client in (chat_clients or {}).items()}
        self._owned_clients: list[ChatClient] = []
        """The clients this host created, which it closes; clients passed in belong to the caller."""
        self._tools_synced = False
        user_id = self.config.host.user_id
        self.personal_repository = personal_repository or SharedAgentPersonalContextRepository(
            os.path.join(self.root, ".oscova", "personal", user_id or "_anonymous"),
            self.config.host.personal_context_max_bytes, boundary=self.root)
        self.tool_policy = ToolPolicy(lambda: self.config.host.deny_tools, lambda: self.config.host.allow_egress,
                                      lambda: self.orchestrator.tools)

    # -- catalogue, workspaces, clients ------------------------------------------------------------

    def tool_catalogue(self) -> dict[str, AIFunction]:
        """Built-in tools plus `[tools.*]` (imported here: only a run loads user code, and only when trusted)."""
        tools: dict[str, AIFunction] = dict(builtin_tools(BuiltinToolContext(timezone=self.config.user.timezone,
                                                                           root=self.root)))
        if not self.trusted:
            return tools
        for name, settings in self.config.tools.items():
            tools[name] = load_custom_tool(name, settings.callable, approval_required=settings.approval == "required",
                                           description=settings.description, egress=settings.egress)
        return tools

    def ensure_tools(self) -> None:
        if not self._tools_synced or not self.orchestrator.tools:
            self.orchestrator.sync_tools(self.tool_catalogue())
            self._tools_synced = True

    def forget_tools(self) -> None:
        """The tool catalogue is read again (`[tools.*]` imported again) before the next build."""
        self._tools_synced = False

    def workspace_directories(self, definition: AgentDefinition) -> list[str]:
        """The definition's `workspaces` and the host's grants, as real paths that exist; grants outside the
        root only with `[host] allow_outside_workspaces` (the checker reports them: OSC043, OSC044)."""
        return granted_directories(self.root, [*definition.workspaces, *self.config.environment.workspace_directories],
                                   allow_outside=self.config.host.allow_outside_workspaces)

    def _endpoint_of(self, name: str) -> tuple[str, str | None]:
        """The model and base URL `[models.NAME]` configures (the name alone for a client passed in)."""
        settings = self.config.models.get(name)
        return (settings.model, settings.base_url) if settings is not None else (name, None)

    def tokenizer_for(self, definition: AgentDefinition) -> Tokenizer:
        """How the definition's model counts tokens (`[models.NAME] tokenizer`, else from its model name, else the
        estimate); a model the host does not configure counts by the estimate, and so does a `tokenizer.json` of an
        untrusted workspace (never loaded: its patterns are the workspace's)."""
        settings = self.config.models.get(definition.model)
        if settings is None:
            return Tokenizer(ESTIMATE)
        return tokenizer_for(settings.model, settings.tokenizer, root=self.root, chat_template=settings.chat_template,
                             trusted=self.trusted)

    def chat_client_for(self, definition: AgentDefinition, requested: AgentDefinition | None = None) -> ChatClient:
        """The host-managed client of the definition's model. `requested`: the agent whose build reached this
        one through `agent_tools`, so an error can name the chain."""
        name = definition.model
        client = self._chat_clients.get(name)
        if client is not None:
            return client
        settings = self.config.models.get(name)
        if settings is None:
            chain = self.agent_chain(requested.id, definition.id) if requested is not None else []
            # The agent that was run first, then the one (deeper in its agent_tools) that needs the model.
            uses = (f"agent {chain[0]!r} cannot run: {definition.id!r}, which it calls ({' → '.join(chain)}), uses "
                    f"the model {name!r}" if len(chain) > 1 else f"agent {definition.id!r} uses the model {name!r}")
            if not self.config.models:
                raise HostConfigurationError(
                    f"No model endpoint is configured, so the {uses}; add a [models.{name}] section with `model` "
                    "and `base_url` to oscova.toml" if len(chain) > 1 else
                    f"No model endpoint is configured: the {uses}; add a [models.{name}] section with `model` and "
                    "`base_url` to oscova.toml")
            raise HostConfigurationError(
                f"The {uses}, which oscova.toml does not configure; add [models.{name}] or pick one of: "
                f"{', '.join(sorted(self.config.models))}")
        from .chat_client import client_for

        raw = client_for(settings, name, self.root)
        self._owned_clients.append(raw)
        client = observed_model_client(raw, settings.model, settings.base_url,
                                       lambda: tokenizer_for(settings.model, settings.tokenizer, root=self.root,
                                                             chat_template=settings.chat_template, trusted=self.trusted))
        self._chat_clients[name] = client
        return client

    def instruction_template(self, definition: AgentDefinition) -> str | None:
        if definition.instructions is not None:
            return definition.instructions
        if definition.instructions_file is None:
            return None
        base = os.path.dirname(self.definition_paths.get(definition.id, os.path.join(self.root, "_")))
        try:  # through the renderer: the workspace boundary and the size limit of every template read
            return self.renderer.read_source(definition.instructions_file, base=base)
        except TemplateError as error:
            raise HostConfigurationError(f"The instructions file of {definition.id!r}: {error}") from None

    def personal_model_factory(self, definition: AgentDefinition):  # type: ignore[no-untyped-def]
        config = self.config

        async def model(context: InvokingContext) -> dict[str, Any]:
            # The user's time zone, at the run's frozen clock: a replay renders the recorded time.
            now = run_clock(user_now(config.user.timezone).tzinfo)
            user_context = ""
            if definition.shared and config.host.user_id:
                try:
                    user_context = await self.personal_repository.get(definition.id) or ""
                except FileRefused as refused:  # the reason stands where the context would be
                    user_context = refusal_note("context.md", refused)
            return {
                **config.variables,
                **(RUN_VARIABLES.get() or {}),
                "agent_name": definition.display_name,
                "current_date": now.date().isoformat(),
                "current_time": now.strftime("%H:%M"),
                "user_name": config.user.name or "",
                "user_username": config.user.username or "",
                "user_email": config.user.email or "",
                "user_timezone": config.user.timezone or "",
                "user_context": user_context,
            }

        return model

    # -- providers ---------------------------------------------------------------------------------

    def storage_folder(self, relative: str, what: str) -> str:
        """The folder a provider reads (and memory writes), relative to the root; HostConfigurationError when it
        leads outside the root (an absolute path, `..`, a symlink): nothing outside is read or written."""
        path = os.path.normpath(os.path.join(self.root, relative))
        if not is_inside(path, self.root):
            raise HostConfigurationError(
                f"The {what} folder `{relative}` leads outside the workspace root: {what} files are read and "
                "written only inside it")
        return path

    def _provider(self, planned: PlannedProvider, definition: AgentDefinition, ctx: BuildContext) -> AIContextProvider:
        if planned.inactive_reason is not None:
            return InactiveProvider(planned.type, planned.state_keys, planned.inactive_reason)
        provider: AIContextProvider
        if planned.custom is not None:
            if not self.trusted:
                return InactiveProvider(planned.type, planned.state_keys, NOT_TRUSTED)
            instance = load_custom_provider(planned.type, planned.custom)
            if planned.custom.template:
                return DeclaredTemplateProvider(instance, planned.custom.template, self.renderer, planned.state_keys)
            provider = instance
        else:
            build = PROVIDER_BUILDERS.get(planned.type)
            if build is None:  # pragma: no cover - the plan only holds the catalogue's types (tests/test_facts.py)
                raise HostConfigurationError(f"Unknown provider type {planned.type!r}")
            provider = build(self, definition, ctx)
        if tuple(provider.state_keys) != tuple(planned.state_keys):
            provider.state_keys = planned.state_keys
        return provider

    async def provider_factory(self, definition: AgentDefinition, ctx: BuildContext) -> list[AIContextProvider]:
        plan = plan_providers(definition, self.config, requested=ctx.requested)
        if plan.unknown:
            names = ", ".join(repr(u.type) for u in plan.unknown)
            raise HostConfigurationError(f"The agent {definition.id!r} lists unknown provider types: {names}")
        return [self._provider(p, definition, ctx) for p in plan.providers]

    async def chat_client_factory(self, definition: AgentDefinition, ctx: BuildContext) -> ChatClient:
        client = self.chat_client_for(definition, ctx.requested_definition)
        limits = self.prompt_limits(definition)
        if not limits:
            return client
        tokenizer = await asyncio.to_thread(self.tokenizer_for, definition)  # an encoding loads once, off the loop
        return PromptBudgetClient(client, tokenizer, limits)

    def prompt_limits(self, definition: AgentDefinition) -> list[PromptLimit]:
        """The ceilings on one request of the definition: its model's `context_window`, its `max_prompt_tokens`."""
        settings = self.config.models.get(definition.model)
        limits = []
        if settings is not None and settings.context_window is not None:
            limits.append(PromptLimit(settings.context_window, f"the context window of [models.{definition.model}]"))
        if definition.max_prompt_tokens is not None:
            limits.append(PromptLimit(definition.max_prompt_tokens, f"`max_prompt_tokens` of agent {definition.id!r}"))
        return limits

    def agent_chain(self, start: str, target: str) -> list[str]:
        """The shortest `agent_tools` path from `start` to `target` through exposed agents (ids), or []."""
        by_id = {d.id: d for d in self.definitions}
        paths: dict[str, list[str]] = {start: [start]}
        queue = [start]
        for current in queue:  # breadth first: the queue grows while it is walked, each id once
            if current == target:
                return paths[current]
            definition = by_id.get(current)
            for child in definition.agent_tools if definition is not None else ():
                if child not in paths and child in by_id and by_id[child].exposed_as_tool:
                    paths[child] = [*paths[current], child]
                    queue.append(child)
        return []

    async def aclose(self) -> None:
        """Closes the chat clients this host created."""
        for client in self._owned_clients:
            close = getattr(client, "aclose", None)
            if close is not None:
                await close()

    # -- requests ----------------------------------------------------------------------------------

    def definition(self, agent_id: str) -> AgentDefinition:
        for definition in self.definitions:
            if definition.id == agent_id:
                return definition
        raise HostConfigurationError(f"No agent definition has the id {agent_id!r}")

    def build_request(self, definition: AgentDefinition | str, **overrides: Any) -> AgentBuildRequest:
        if isinstance(definition, str):
            definition = self.definition(definition)
        return AgentBuildRequest(
            chat_client_factory=self.chat_client_factory,
            agent_definition=definition,
            available_agent_definitions=self.definitions,
            context_provider_factory=self.provider_factory,
            workspace_resolver=self.workspace_directories,
            workspace_root=self.root,
            **{"tool_policy": self.tool_policy, "run_scope_factory": AGENT_INVOCATIONS, **overrides},
        )

    async def get_agent(self, definition: AgentDefinition | str, **overrides: Any):  # type: ignore[no-untyped-def]
        self.ensure_tools()
        return await self.orchestrator.get_or_create_agent(self.build_request(definition, **overrides))


# -- the built-in providers, one builder per catalogue type -------------------------------------------


@builds("environment")
def _environment(host: ConfiguredHost, definition: AgentDefinition, ctx: BuildContext) -> AIContextProvider:
    return EnvironmentContextProvider.from_workspace_resolver(
        host.renderer, lambda: host.workspace_directories(definition), template_path=host.config.environment.template)


@builds("tools")
def _tools(host: ConfiguredHost, definition: AgentDefinition, ctx: BuildContext) -> AIContextProvider:
    return AgentToolProvider(lambda: definition.tools, lambda: host.orchestrator.tools, policy=host.tool_policy)


@builds("tool_search")
def _tool_search(host: ConfiguredHost, definition: AgentDefinition, ctx: BuildContext) -> AIContextProvider:
    return ToolSearchProvider(definition.tools, definition.pinned_tools, lambda: host.orchestrator.tools,
                              policy=host.tool_policy)


@builds("personal")
def _personal(host: ConfiguredHost, definition: AgentDefinition, ctx: BuildContext) -> AIContextProvider:
    return AgentPersonalContextProvider(host.instruction_template(definition), host.personal_model_factory(definition),
                                        host.renderer)


@builds("private_notes")
def _private_notes(host: ConfiguredHost, definition: AgentDefinition, ctx: BuildContext) -> AIContextProvider:
    # Not `storage_folder`: a notes folder leading out is refused notes, which contribute nothing and say why
    # when a run reads them (the provider checks it), not a host that cannot build the agent.
    return PrivateNotesContextProvider(os.path.join(host.root, ".oscova", "notes"), host.config.host.user_id,
                                       definition.id, boundary=host.root)


@builds("agent_tools")
def _agent_tools(host: ConfiguredHost, definition: AgentDefinition, ctx: BuildContext) -> AIContextProvider:
    return AgentAsToolProvider(definition.agent_tools, ctx.dependencies)


@builds("skills")
def _skills(host: ConfiguredHost, definition: AgentDefinition, ctx: BuildContext) -> AIContextProvider:
    return SkillsContextProvider(host.storage_folder("skills", "skills"), definition.skills, boundary=host.root)


@builds("memory")
def _memory(host: ConfiguredHost, definition: AgentDefinition, ctx: BuildContext) -> AIContextProvider:
    config = host.config
    # the plan marks memory inactive without `[host] user_id` (catalogue._inactive_reason)
    store = MemoryStore(host.storage_folder(config.memory.root, "memory"), cast(str, config.host.user_id),
                        definition.id, boundary=host.root)
    prompt = host.renderer.read_source(config.memory.system_prompt) if config.memory.system_prompt else None
    return MemoryContextProvider(store, memory_tools(store), host.renderer, system_prompt=prompt,
                                 token_budget=config.memory.token_budget, tokenizer=host.tokenizer_for(definition))


@builds("library")
def _library(host: ConfiguredHost, definition: AgentDefinition, ctx: BuildContext) -> AIContextProvider:
    return LibraryContextProvider(host.storage_folder("library", "library"), boundary=host.root)


@builds("todo")
def _todo(host: ConfiguredHost, definition: AgentDefinition, ctx: BuildContext) -> AIContextProvider:
    return TodoListContextProvider()


@builds("vision")
def _vision(host: ConfiguredHost, definition: AgentDefinition, ctx: BuildContext) -> AIContextProvider:
    return VisionToolProvider(host.chat_client_for(definition, ctx.requested_definition),
                              lambda: host.workspace_directories(definition))
