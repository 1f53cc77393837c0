"""The provider and tool catalogue, defined once.

The analyzer, the configured host (runtime) and hover/completion all read these tables, and
`plan_providers` is the one function that decides which providers an agent gets, in which order and
with which state keys: the analyzer checks exactly the list the host will build at run time.
Importing this module must stay cheap (no `openai`, no provider implementations).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .definition import AgentDefinition, ProviderEntry
from .host_config import Contribution, CustomProviderSettings, HostConfig

CHAT_HISTORY_STATE_KEY = "InMemoryChatHistoryProvider"
"""The chat-history provider is always attached; no context provider may share its state key."""

RUN_PROVIDER_POSITION = 10


@dataclass(frozen=True, slots=True)
class VariableSpec:
    name: str
    meaning: str
    offered: bool = True
    """False: bound, but the editor does not offer it in completion."""
    changes: str | None = None
    """How often its value changes (`daily`, `per minute`, `per user`, `per run`); None: fixed for the
    deployment. A value that changes ends the prompt's cacheable prefix where it is rendered."""


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    """A built-in provider type: what the runtime class is and what it contributes."""

    type: str
    class_name: str
    position: int
    contributes: tuple[Contribution, ...]
    applies_when: str
    summary: str
    variables: tuple[VariableSpec, ...] = ()
    requested_only: bool = False
    tools: tuple[str, ...] = ()

    @property
    def default_state_keys(self) -> tuple[str, ...]:
        return (self.class_name,)

    @property
    def variable_names(self) -> frozenset[str]:
        return frozenset(v.name for v in self.variables)


ENVIRONMENT_VARIABLES = (
    VariableSpec("working_directory", "The working directory; the default host does not derive it (renders empty)."),
    VariableSpec("os", "The operating system name."),
    VariableSpec("architecture", "The machine architecture."),
    VariableSpec("shell", "The user's shell."),
    VariableSpec("path_separator", "The platform's path separator."),
    VariableSpec("home_directory", "The user's home directory."),
    VariableSpec("temp_directory", "The temporary directory."),
    VariableSpec(
        "workspace_directories",
        "The current workspace grants, resolved once per render; `- none configured` when there are none.",
    ),
)

PERSONAL_VARIABLES = (
    VariableSpec("agent_name", "The agent's display name (`name`, default its id)."),
    VariableSpec("current_date", "Today's date in the user's time zone.", changes="daily"),
    # "The agent editor intentionally does not offer current_time." (seed *Context Providers*)
    VariableSpec("current_time", "The current time: changes every minute, which breaks prompt-cache prefixes.",
                 offered=False, changes="per minute"),
    VariableSpec("user_name", "`[user] name`.", changes="per user"),
    VariableSpec("user_username", "`[user] username`.", changes="per user"),
    VariableSpec("user_email", "`[user] email`.", changes="per user"),
    VariableSpec("user_timezone", "`[user] timezone`.", changes="per user"),
    VariableSpec(
        "user_context",
        "File-backed personal context; only for a `shared` definition (renders empty otherwise). Untrusted data.",
        changes="per user",
    ),
)

MEMORY_VARIABLES = (
    VariableSpec("agent_memory", "Long-term, current-day and previous-day memory within the token budget. Untrusted data.",
                 changes="per run"),
)

UNTRUSTED_BUILTIN_VARIABLES = frozenset({"user_context", "agent_memory"})
VARIABLE_CHANGES = {v.name: v.changes for v in (*PERSONAL_VARIABLES, *MEMORY_VARIABLES) if v.changes}
"""Each built-in variable whose value changes, and how often."""
PROVIDER_CHANGES = {"private_notes": "per user", "skills": "per user", "memory": "per run", "library": "per user",
                    "todo": "per run"}
"""How often what a built-in provider contributes changes (the others' is fixed for the deployment; a custom
provider's is taken to change per run)."""

PROVIDERS: tuple[ProviderSpec, ...] = (
    ProviderSpec(
        "environment", "EnvironmentContextProvider", 1, ("instructions",), "always",
        "Renders runtime facts and the current workspace grants into the instructions.",
        variables=ENVIRONMENT_VARIABLES,
    ),
    ProviderSpec(
        "tools", "AgentToolProvider", 2, ("tools",), "always (direct tool mode)",
        "Resolves the allowed selected tools on each invocation; wraps approval-required tools.",
    ),
    ProviderSpec(
        "tool_search", "ToolSearchProvider", 2, ("tools", "instructions"), "always (search tool mode)",
        "Contributes its instructions, `search_tools`, pinned tools and tools unlocked by searches.",
        tools=("search_tools",),
    ),
    ProviderSpec(
        "personal", "AgentPersonalContextProvider", 3, ("instructions",),
        "always; a blank instruction contributes nothing",
        "Renders the agent's instruction template with personal variables.",
        variables=PERSONAL_VARIABLES,
    ),
    ProviderSpec(
        "private_notes", "PrivateNotesContextProvider", 4, ("instructions",),
        "requested agent only, never for a shared definition",
        "Adds the user's private notes for this agent.", requested_only=True,
    ),
    ProviderSpec(
        "agent_tools", "AgentAsToolProvider", 5, ("tools",), "the definition has `agent_tools`",
        "Contributes each exposed child agent as a tool, snapshotted when the provider is built.",
    ),
    ProviderSpec(
        "skills", "SkillsContextProvider", 6, ("instructions", "tools"),
        "requested agent only, with a user id and at least one skill",
        "Describes the assigned skills and offers a tool to load one.", requested_only=True,
        tools=("load_skill",),
    ),
    ProviderSpec(
        "memory", "MemoryContextProvider", 7, ("instructions", "tools"),
        "requested agent only, with a user id and memory enabled",
        "Reads long-term, current-day and previous-day memory (2,000-token budget) and offers memory tools.",
        variables=MEMORY_VARIABLES, requested_only=True, tools=("memory_save", "memory_search"),
    ),
    ProviderSpec(
        "library", "LibraryContextProvider", 8, ("instructions", "tools"),
        "requested agent only, with a user id and the Library grant",
        "Describes the read-only Library and offers tools to search and read it.", requested_only=True,
        tools=("library_search", "library_read"),
    ),
    ProviderSpec(
        "todo", "TodoListContextProvider", 9, ("instructions", "messages", "tools"),
        "requested agent only, todo enabled (host and definition)",
        "Keeps a todo list: instructions, a synthetic user message with the list, and todo tools.",
        requested_only=True, tools=("todo_read", "todo_write"),
    ),
    ProviderSpec(
        "vision", "VisionToolProvider", RUN_PROVIDER_POSITION, ("tools",), "requested agent only",
        "Contributes one `analyze_image` tool.", requested_only=True, tools=("analyze_image",),
    ),
)

PROVIDERS_BY_TYPE: Mapping[str, ProviderSpec] = {spec.type: spec for spec in PROVIDERS}

JINJA_GLOBALS = frozenset({"range", "dict", "lipsum", "cycler", "joiner", "namespace"})


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    approval_required: bool = False
    provider: str | None = None
    """The provider type that contributes this tool, or None for a selectable built-in tool."""


BUILTIN_TOOLS: Mapping[str, ToolSpec] = {
    t.name: t
    for t in (
        ToolSpec("current_datetime", "The current date and time in the user's time zone."),
        ToolSpec("read_file", "Reads a text file inside the agent's workspaces."),
        ToolSpec("list_directory", "Lists a directory inside the agent's workspaces."),
        ToolSpec("write_file", "Writes a text file inside the agent's workspaces.", approval_required=True),
        ToolSpec("search_tools", "Searches the tool catalogue and unlocks matching tools.", provider="tool_search"),
        ToolSpec("analyze_image", "Describes an image file.", provider="vision"),
        ToolSpec("memory_save", "Saves a note to the agent's memory.", provider="memory"),
        ToolSpec("memory_search", "Searches the agent's memory files.", provider="memory"),
        ToolSpec("todo_read", "Reads the todo list.", provider="todo"),
        ToolSpec("todo_write", "Replaces the todo list.", provider="todo"),
        ToolSpec("library_search", "Searches the Library.", provider="library"),
        ToolSpec("library_read", "Reads a Library document.", provider="library"),
        ToolSpec("load_skill", "Loads an assigned skill's instructions.", provider="skills"),
    )
}

SELECTABLE_TOOLS = frozenset(name for name, t in BUILTIN_TOOLS.items() if t.provider is None)


# --------------------------------------------------------------------------------------------------
# Assembly


@dataclass(frozen=True, slots=True)
class PlannedProvider:
    """One provider of an agent's assembled list."""

    type: str
    class_name: str
    state_keys: tuple[str, ...]
    position: int
    origin: Literal["default", "listed"]
    entry_index: int | None = None
    """Index in `context_providers` for a listed provider."""
    options: Mapping[str, Any] = field(default_factory=dict)
    custom: CustomProviderSettings | None = None
    inactive_reason: str | None = None
    """Why a listed provider contributes nothing under the host's conditions, or None."""

    @property
    def contributes(self) -> tuple[str, ...]:
        if self.custom is not None:
            return tuple(self.custom.contributes)
        return PROVIDERS_BY_TYPE[self.type].contributes


@dataclass(frozen=True, slots=True)
class UnknownProvider:
    entry_index: int
    type: str


_DEFAULT_PLANNED: Mapping[str, PlannedProvider] = {
    spec.type: PlannedProvider(spec.type, spec.class_name, spec.default_state_keys, spec.position, "default")
    for spec in PROVIDERS
}
"""Each built-in provider as the default order plans it: the same for every definition, so made once and shared
by the plans (a plan is read, never changed; the checker plans every definition of the workspace)."""


@dataclass(frozen=True, slots=True)
class ProviderPlan:
    providers: tuple[PlannedProvider, ...]
    unknown: tuple[UnknownProvider, ...] = ()


def effective_tool_mode(definition: AgentDefinition, host: HostConfig) -> str:
    return definition.tool_mode or host.host.tool_mode


def todo_enabled(definition: AgentDefinition, host: HostConfig) -> bool:
    return definition.todo and host.host.todo


def provider_types(host: HostConfig) -> list[str]:
    """Every type name a `context_providers` entry may use: built-ins, then the host's custom providers."""
    return [spec.type for spec in PROVIDERS] + [name for name in host.providers if name not in PROVIDERS_BY_TYPE]


def _inactive_reason(provider_type: str, definition: AgentDefinition, host: HostConfig) -> str | None:
    """Why a provider of this type contributes nothing for this definition and host, or None."""
    user_id = host.host.user_id
    if provider_type == "memory" and not user_id:
        return "memory needs `[host] user_id`"
    if provider_type == "skills":
        if not user_id:
            return "skills need `[host] user_id`"
        if not definition.skills:
            return "the definition assigns no `skills`"
    if provider_type == "library":
        if not user_id:
            return "the Library needs `[host] user_id`"
        if not host.host.library:
            return "the Library grant is not resolved (`[host] library = false`)"
    if provider_type == "private_notes":
        if definition.shared:
            return "private notes never apply to a shared definition"
        if not user_id:
            return "private notes need `[host] user_id`"
    if provider_type == "todo" and not host.host.todo:
        return "todo support is not enabled in this host (`[host] todo = false`)"
    if provider_type == "agent_tools" and not definition.agent_tools:
        return "the definition has no `agent_tools`"
    return None


def _default_order(definition: AgentDefinition, host: HostConfig, requested: bool) -> list[ProviderSpec]:
    user_id = host.host.user_id
    order = [PROVIDERS_BY_TYPE["environment"]]
    order.append(PROVIDERS_BY_TYPE["tool_search" if effective_tool_mode(definition, host) == "search" else "tools"])
    order.append(PROVIDERS_BY_TYPE["personal"])
    if requested and not definition.shared:
        order.append(PROVIDERS_BY_TYPE["private_notes"])
    if definition.agent_tools:
        order.append(PROVIDERS_BY_TYPE["agent_tools"])
    if requested and user_id and definition.skills:
        order.append(PROVIDERS_BY_TYPE["skills"])
    if requested and user_id and definition.memory:
        order.append(PROVIDERS_BY_TYPE["memory"])
    if requested and user_id and host.host.library:
        order.append(PROVIDERS_BY_TYPE["library"])
    if requested and todo_enabled(definition, host):
        order.append(PROVIDERS_BY_TYPE["todo"])
    if requested and definition.vision:
        order.append(PROVIDERS_BY_TYPE["vision"])
    return order


def memory_off_as_tools(start: AgentDefinition, definitions: Iterable[AgentDefinition]) -> list[str]:
    """The agents `start` calls as tools (through `agent_tools`, exposed ones, at any depth, breadth first, each
    once) whose definition sets `memory: true`: their memory is off there, since the memory provider is for the
    requested agent only."""
    by_id = {d.id: d for d in definitions}
    seen, queue, found = {start.id}, [start], []
    for current in queue:  # the queue grows while it is walked
        for child_id in current.agent_tools:
            child = by_id.get(child_id)
            if child is None or child_id in seen or not child.exposed_as_tool:
                continue
            seen.add(child_id)
            queue.append(child)
            if child.memory:
                found.append(child_id)
    return found


def plan_providers(definition: AgentDefinition, host: HostConfig, *, requested: bool = True) -> ProviderPlan:
    """The ordered provider list the configured host builds for `definition`.

    `requested` is True for the agent being run and False for an exposed agent-tool dependency built for
    it (requested-only providers and run providers are then left out).
    """
    planned: list[PlannedProvider] = []
    unknown: list[UnknownProvider] = []
    if definition.default_providers:
        planned += [_DEFAULT_PLANNED[spec.type] for spec in _default_order(definition, host, requested)]
        if not requested:
            return ProviderPlan(tuple(planned))
    for index, entry in enumerate(definition.context_providers):
        item = _plan_entry(index, entry, definition, host)
        if isinstance(item, UnknownProvider):
            unknown.append(item)
        else:
            planned.append(item)
    return ProviderPlan(tuple(planned), tuple(unknown))


def _plan_entry(
    index: int, entry: str | ProviderEntry, definition: AgentDefinition, host: HostConfig
) -> PlannedProvider | UnknownProvider:
    provider_type = entry if isinstance(entry, str) else entry.type
    state_key = None if isinstance(entry, str) else entry.state_key
    options: Mapping[str, Any] = {} if isinstance(entry, str) else entry.options
    position = RUN_PROVIDER_POSITION if definition.default_providers else index + 1
    spec = PROVIDERS_BY_TYPE.get(provider_type)
    if spec is not None:
        keys = (state_key,) if state_key else spec.default_state_keys
        return PlannedProvider(
            spec.type, spec.class_name, keys, position, "listed", index, options,
            inactive_reason=_inactive_reason(spec.type, definition, host),
        )
    custom = host.providers.get(provider_type)
    if custom is not None:
        keys = (state_key,) if state_key else tuple(custom.effective_state_keys)
        return PlannedProvider(provider_type, custom.class_name, keys, position, "listed", index, options, custom)
    return UnknownProvider(index, provider_type)


# --------------------------------------------------------------------------------------------------
# Template renderers: which provider renders a template, and with which variables


def personal_variables(host: HostConfig) -> dict[str, str]:
    """Variables the personal provider binds in agent instructions: built-ins plus `[variables]` keys."""
    bound = {v.name: v.meaning for v in PERSONAL_VARIABLES}
    for key in host.variables:
        bound.setdefault(key, "A personal variable declared in `[variables]`.")
    return bound


def environment_variables() -> dict[str, str]:
    return {v.name: v.meaning for v in ENVIRONMENT_VARIABLES}


def memory_variables() -> dict[str, str]:
    return {v.name: v.meaning for v in MEMORY_VARIABLES}


def custom_provider_variables(name: str, settings: CustomProviderSettings) -> dict[str, str]:
    return {v: f"Declared by the custom provider `{name}` ({settings.class_name})." for v in settings.variables}


def agent_tool_names(definition: AgentDefinition, host: HostConfig) -> list[str]:
    """The names of the tools the agent is given, as the model sees them (the checker and completion)."""
    plan = plan_providers(definition, host, requested=True)
    active = {p.type for p in plan.providers if not p.inactive_reason}
    from_providers = [name for name, spec in BUILTIN_TOOLS.items() if spec.provider in active]
    return list(dict.fromkeys([*definition.tools, *definition.pinned_tools, *definition.agent_tools,
                               *from_providers]))
