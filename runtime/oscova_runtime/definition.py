"""The agent definition model (docs/configuration.md, "Agent definitions"): the one source of truth for
validation, schema and completion.

`*.agent.yaml` files are validated against `AgentDefinition`; `oscova-lsp schema` is generated from it;
the runtime builds agents from it. Importing this module must stay cheap (no `openai`).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

AGENT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
_AGENT_ID_RE = re.compile(AGENT_ID_PATTERN)

ToolMode = Literal["direct", "search"]


class CompactionSettings(BaseModel):
    """History compaction with the summarizing reducer."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    keep_last: int = Field(default=8, ge=1, description="Messages kept verbatim after a summary.")


class ProviderEntry(BaseModel):
    """One `context_providers` entry written as a mapping: `{type, state_key?, ...options}`."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(description="A built-in provider type or a `[providers.NAME]` of the host configuration.")
    state_key: str | None = Field(
        default=None, description="Overrides the provider's default state key (its class name)."
    )

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


ProviderRef = str | ProviderEntry


class AgentDefinition(BaseModel):
    """An agent as authored in `*.agent.yaml` (seed: `AgentDefinition`)."""

    model_config = ConfigDict(extra="forbid", title="Oscova agent definition")

    id: str = Field(pattern=AGENT_ID_PATTERN, description="Cache key and reference name (`AgentDefinition.Id`).")
    name: str | None = Field(default=None, description="Display name; the variable `agent_name`. Defaults to id.")
    description: str | None = Field(default=None, description="The tool description when exposed as a tool.")
    instructions: str | None = Field(
        default=None, description="The standing instruction template (Jinja2) (`SystemInstruction`)."
    )
    instructions_file: str | None = Field(
        default=None, description="The standing instruction template, from a file relative to this definition."
    )
    model: str = Field(default="default", description="A `[models.NAME]` of the host configuration.")
    chat_options: dict[str, Any] = Field(
        default_factory=dict,
        description="Default chat options (temperature, top_p, max_tokens, seed, stop, ...), cloned per build.",
    )
    shared: bool = Field(default=False, description="A shared definition: `user_context` available; no private notes.")
    exposed_as_tool: bool = Field(default=False, description="Other agents may call it as a tool (`IsExposedAsTool`).")
    agent_tools: list[str] = Field(default_factory=list, description="Agents it may call (`AgentToolIds`).")
    tools: list[str] = Field(default_factory=list, description="Selected tools (built-in catalogue or `[tools.*]`).")
    tool_mode: ToolMode | None = Field(
        default=None, description="`direct` exposure, or `search_tools` plus `pinned_tools`. Host default when absent."
    )
    pinned_tools: list[str] = Field(default_factory=list, description="Tools always exposed in search mode.")
    skills: list[str] = Field(default_factory=list, description="Assigned skills.")
    memory: bool = Field(default=False, description="Memory enabled.")
    todo: bool = Field(default=False, description="Todo-list support.")
    vision: bool = Field(default=False, description="Adds the vision provider (`analyze_image`) as a run provider.")
    compaction: bool | CompactionSettings = Field(
        default=False, description="History compaction with the summarizing reducer."
    )
    workspaces: list[str] = Field(
        default_factory=list, description="Folders, relative to the workspace root, the agent's tools may touch."
    )
    default_providers: bool = Field(
        default=True,
        description=(
            "true: the host assembles the default order and appends `context_providers` at position 10; "
            "false: `context_providers` is the complete ordered list."
        ),
    )
    context_providers: list[ProviderRef] = Field(
        default_factory=list, description="Each entry a provider type name, or `{type, state_key?, ...options}`."
    )
    example_input: str | None = Field(
        default=None, description="The input a `Run agent` code lens sends where the editor cannot ask for one."
    )
    max_prompt_tokens: int | None = Field(
        default=None, ge=1, description="The most prompt tokens one request of this agent may send: a preview "
                                        "warns and a run refuses before sending more.")

    @model_validator(mode="after")
    def _one_instruction_source(self) -> AgentDefinition:
        if self.instructions is not None and self.instructions_file is not None:
            raise ValueError("`instructions` and `instructions_file` cannot both be set; keep one")
        return self

    @field_validator("agent_tools")
    @classmethod
    def _agent_ids(cls, value: list[str]) -> list[str]:
        for item in value:
            if not _AGENT_ID_RE.match(item):
                raise ValueError(f"{item!r} is not a valid agent id")
        return value

    @property
    def display_name(self) -> str:
        return self.name or self.id

    @property
    def compaction_settings(self) -> CompactionSettings | None:
        if self.compaction is True:
            return CompactionSettings()
        if isinstance(self.compaction, CompactionSettings) and self.compaction.enabled:
            return self.compaction
        return None


def definition_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of agent definitions, as `oscova-lsp schema` prints it."""
    schema = AgentDefinition.model_json_schema()
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    schema.setdefault("$id", "https://oscova.dev/schema/agent-definition.json")
    return schema
