"""Host configuration (docs/configuration.md): `oscova.toml`, or `[tool.oscova]` in `pyproject.toml`.

The configured host and the analyzer read the same model. Keys are never stored here: a model names
the environment variable that holds its key.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .definition import ToolMode

Severity = Literal["error", "warning", "information", "hint"]
DEFAULT_PERSONAL_CONTEXT_MAX_BYTES = 16 * 1024
Contribution = Literal["instructions", "messages", "tools"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HostSettings(_Section):
    user_id: str | None = Field(default=None, description="Skills, memory, library and private notes need a user id.")
    tool_mode: ToolMode = "direct"
    todo: bool = Field(default=False, description="Todo support enabled in this host.")
    library: bool = Field(default=False, description="The read-only Library grant resolved.")
    exclude: list[str] = Field(default_factory=list, description="Folders never scanned.")
    allow_outside_workspaces: bool = Field(
        default=False, description="Workspace grants may name folders outside the workspace root.")
    deny_tools: list[str] = Field(
        default_factory=list,
        description="Tools no agent of this host may use: never offered, and refused when the model calls one anyway.")
    allow_egress: bool = Field(
        default=True, description="false: tools marked `egress` (they send data off this machine) are never offered "
                                  "and are refused at call time.")
    personal_context_max_bytes: int = Field(
        default=DEFAULT_PERSONAL_CONTEXT_MAX_BYTES, ge=1,
        description="The largest personal context of a shared agent, in bytes of UTF-8: saving more is refused, and "
                    "a larger file is read up to this size (seed: the host supplies the maximum UTF-8 text size).")


class UserSettings(_Section):
    name: str | None = None
    username: str | None = None
    email: str | None = None
    timezone: str | None = None


class EnvironmentSettings(_Section):
    template: str | None = Field(default=None, description="The environment provider's template; built-in when absent.")
    workspace_directories: list[str] = Field(default_factory=list, description="Workspace grants.")


class MemorySettings(_Section):
    root: str = ".oscova/memory"
    token_budget: int = Field(default=2000, ge=1)
    system_prompt: str | None = None


class ModelSettings(_Section):
    model: str
    kind: Literal["openai", "offline"] = Field(
        default="openai", description="`openai`: an OpenAI-compatible endpoint at `base_url`. `offline`: the offline "
                                      "model inside oscova-lsp, for trying runs without an endpoint.")
    script: str | None = Field(
        default=None, description="For `kind = \"offline\"`: a YAML file (relative to the root) of scripted "
                                  "replies, tool calls and delays.")
    base_url: str | None = None
    api_key_env: str | None = Field(default=None, description="The environment variable holding the key.")
    timeout: float = Field(default=60.0, gt=0)
    tokenizer: str | None = Field(
        default=None, description="How the model counts tokens: `o200k_base`, `cl100k_base`, or the path of its "
                                  "Hugging Face `tokenizer.json` or GGUF model file (relative to the root). Default: "
                                  "from an OpenAI model name, else from a GGUF `chat_template`; otherwise counts are "
                                  "estimates (≈).")
    chat_template: str | None = Field(
        default=None, description="The chat template the endpoint applies (llama.cpp, vLLM, Ollama): the path of a "
                                  "Jinja file, a Hugging Face `tokenizer_config.json` or a GGUF model file, relative "
                                  "to the root. A request is then counted as that server counts it, tools included: "
                                  "rendered through the template, then tokenized.")
    context_window: int | None = Field(
        default=None, ge=1, description="The model's context window in tokens: a preview warns and a run refuses "
                                        "before sending a request with more prompt tokens.")
    cache_min_tokens: int | None = Field(
        default=None, ge=0, description="The shortest prompt prefix the endpoint caches, in tokens (OSC108). "
                                        "Default: what the endpoint documents (OpenAI 1,024; a local server 0).")


class ToolSettings(_Section):
    callable: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", description="`module:function`.")
    approval: Literal["never", "required"] = "never"
    description: str | None = None
    egress: bool = Field(default=False, description="The tool sends data off this machine; `[host] allow_egress` governs it.")


class CustomProviderSettings(_Section):
    class_: str = Field(alias="class", pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$", description="`module:Class`.")
    state_keys: list[str] | None = Field(default=None, description="Default: the class name.")
    contributes: list[Contribution] = Field(default_factory=lambda: list[Contribution](["instructions"]))
    template: str | None = None
    variables: list[str] = Field(default_factory=list)
    trusted: bool = Field(default=False, description="false: its values are data, not instruction authority.")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @property
    def class_name(self) -> str:
        return self.class_.rpartition(":")[2]

    @property
    def effective_state_keys(self) -> list[str]:
        return list(self.state_keys) if self.state_keys else [self.class_name]


class LintSettings(_Section):
    ignore: list[str] = Field(default_factory=list)
    select: list[str] | None = None
    severity: dict[str, Severity] = Field(default_factory=dict)


class TelemetrySettings(_Section):
    otlp_endpoint: str | None = Field(
        default=None,
        description="The OTLP/HTTP base URL of a trace collector (`http://127.0.0.1:4318`, or Phoenix's "
                    "`http://127.0.0.1:6006`): every run exports OpenTelemetry spans there (needs "
                    "`oscova-lsp[otel]`). A collector the environment names (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, "
                    "OTEL_EXPORTER_OTLP_ENDPOINT) wins; this one is sent no credentials from the environment.")
    capture_content: bool = Field(
        default=False, description="Spans carry the messages, instructions, tool arguments and tool results "
                                   "(keys redacted); off by default: only names, models, token counts, timings.")


class HostConfig(_Section):
    """The whole host configuration; every section has its default, so `HostConfig()` is a bare host."""

    host: HostSettings = Field(default_factory=HostSettings)
    user: UserSettings = Field(default_factory=UserSettings)
    variables: dict[str, Any] = Field(default_factory=dict)
    environment: EnvironmentSettings = Field(default_factory=EnvironmentSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    models: dict[str, ModelSettings] = Field(default_factory=dict)
    tools: dict[str, ToolSettings] = Field(default_factory=dict)
    providers: dict[str, CustomProviderSettings] = Field(default_factory=dict)
    lint: LintSettings = Field(default_factory=LintSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
