"""Run events (`oscova/runEvent`, the transcript's event lines, `oscova-lsp run --json`), a run's result and the
approval question a run asks.

An event is `{runId, seq, kind, time, …}`: `RunEventBase` holds those four, which the run fills in as it emits the
event (`runs/service.py`); each kind is a model of its own, and `RunEvent` is their union, told apart by `kind`.
"""

from typing import Annotated, Literal, get_args

from pydantic import ConfigDict, Field, JsonValue, RootModel

from .model import WireModel, is_false, is_none, is_true

RunStatus = Literal["completed", "failed", "cancelled"]
"""How a run ended: the kind of its final event."""


class Usage(WireModel):
    """Tokens of a model call (or of every model call of a run), as the endpoint reported them."""

    input_tokens: int
    output_tokens: int
    total_tokens: int
    cached_input_tokens: int | None = Field(default=None, exclude_if=is_none)
    """Input tokens the endpoint read from its prompt cache, where it reports them."""
    reasoning_tokens: int | None = Field(default=None, exclude_if=is_none)
    """Output tokens spent on reasoning: the endpoint's figure, else counted with the model's tokenizer."""


class Incomplete(WireModel):
    """Why a completed run's answer is not the model's whole answer."""

    reason: str
    """`cutOff`, `contentFilter` or `repeatedCall`, as in the `warning` event that said so."""
    message: str


class MessageToolCall(WireModel):
    call_id: str | None
    name: str
    arguments: JsonValue


class MessageToolResult(WireModel):
    call_id: str | None
    result: JsonValue


class ConversationMessage(WireModel):
    """A message of the conversation: in `message` events, a result's `messages` and a preview's."""

    role: str
    source: str
    """Where the message came from: `external` (the input), a provider's type, `chatHistory`, …"""
    text: str
    reasoning: str | None = Field(default=None, exclude_if=is_none)
    """A reasoning model's thinking, when the message carries it."""
    source_id: str | None = Field(default=None, exclude_if=is_none)
    author_name: str | None = Field(default=None, exclude_if=is_none)
    tool_calls: list[MessageToolCall] | None = Field(default=None, exclude_if=is_none)
    tool_results: list[MessageToolResult] | None = Field(default=None, exclude_if=is_none)


class RunEventBase(WireModel):
    run_id: str = ""
    seq: int = 0
    """Counts up from 1 within each run."""
    kind: str
    time: str = ""
    """ISO 8601, UTC, in milliseconds."""


class StartedEvent(RunEventBase):
    kind: Literal["started"] = "started"
    agent_id: str
    agent_name: str
    input: str
    session_id: str
    transcript: str | None
    """The transcript's path; null when the run writes none."""


class MessageEvent(RunEventBase):
    """A message as it joins the conversation: the fields of `ConversationMessage`."""

    kind: Literal["message"] = "message"
    role: str
    source: str
    text: str
    reasoning: str | None = Field(default=None, exclude_if=is_none)
    source_id: str | None = Field(default=None, exclude_if=is_none)
    author_name: str | None = Field(default=None, exclude_if=is_none)
    tool_calls: list[MessageToolCall] | None = Field(default=None, exclude_if=is_none)
    tool_results: list[MessageToolResult] | None = Field(default=None, exclude_if=is_none)


class DeltaEvent(RunEventBase):
    """Streamed answer text."""

    kind: Literal["delta"] = "delta"
    text: str


class ReasoningEvent(RunEventBase):
    """A reasoning model's streamed thinking, apart from the answer."""

    kind: Literal["reasoning"] = "reasoning"
    text: str


class ToolCallEvent(RunEventBase):
    kind: Literal["toolCall"] = "toolCall"
    call_id: str | None
    name: str
    arguments: JsonValue
    agent_id: str | None = Field(default=None, exclude_if=is_none)
    """The agent that called the tool, for a call of an agent called as a tool."""
    within: str | None = Field(default=None, exclude_if=is_none)
    """The tool call the calling agent was called in, for a call of an agent called as a tool."""


class ToolResultEvent(RunEventBase):
    kind: Literal["toolResult"] = "toolResult"
    call_id: str | None
    name: str
    result: JsonValue = Field(default=None, exclude_if=is_none)
    denied: bool = Field(default=False, exclude_if=is_false)
    """True when the user or the host's policy denied the call (it did not run)."""
    reason: str | None = Field(default=None, exclude_if=is_none)
    """The setting that denied it, for a denial by the host's policy."""
    error: str | None = Field(default=None, exclude_if=is_none)
    duration_ms: float | None = Field(default=None, exclude_if=is_none)
    agent_id: str | None = Field(default=None, exclude_if=is_none)
    """As in `toolCall`."""
    within: str | None = Field(default=None, exclude_if=is_none)
    """As in `toolCall`."""


class ModelCallEvent(RunEventBase):
    """One model call as it ends, an agent called as a tool's too."""

    kind: Literal["modelCall"] = "modelCall"
    agent_id: str | None
    model: str
    """The `[models.NAME]` the agent uses."""
    duration_ms: float
    response_model: str | None = Field(default=None, exclude_if=is_none)
    """The model the endpoint says answered."""
    usage: Usage | None = Field(default=None, exclude_if=is_none)
    finish_reason: str | None = Field(default=None, exclude_if=is_none)
    """`stop`, `tool_calls`, `length`, …"""
    predicted_input_tokens: int | None = Field(default=None, exclude_if=is_none)
    """The request's input tokens as counted before it was sent, beside the endpoint's `inputTokens`."""
    prediction_exact: bool = Field(default=True, exclude_if=is_true)
    """False when `predictedInputTokens` is an estimate."""
    failed: bool = Field(default=False, exclude_if=is_false)


class NoticeEvent(RunEventBase):
    """What a provider left out of the run and why (private notes that were refused, for example)."""

    kind: Literal["notice"] = "notice"
    source: str
    """The provider's full type name."""
    provider: str
    """Its class name."""
    message: str


class WarningEvent(RunEventBase):
    """Where it happens, what makes an answer other than the model's whole answer."""

    kind: Literal["warning"] = "warning"
    reason: str
    """`cutOff`, `contentFilter`, `repeatedCall` or `toolChoiceIgnored`."""
    agent_id: str | None = Field(default=None, exclude_if=is_none)
    message: str


class CompletedEvent(RunEventBase):
    kind: Literal["completed"] = "completed"
    text: str
    reasoning: str | None = Field(default=None, exclude_if=is_none)
    incomplete: Incomplete | None = Field(default=None, exclude_if=is_none)
    usage: Usage
    """Every model call of the run, agents called as tools included."""


class FailedEvent(RunEventBase):
    kind: Literal["failed"] = "failed"
    text: str
    reasoning: str | None = Field(default=None, exclude_if=is_none)
    error: str | None = Field(default=None, exclude_if=is_none)


class CancelledEvent(RunEventBase):
    kind: Literal["cancelled"] = "cancelled"
    text: str
    reasoning: str | None = Field(default=None, exclude_if=is_none)


AnyRunEvent = (StartedEvent | MessageEvent | DeltaEvent | ReasoningEvent | ModelCallEvent | ToolCallEvent
               | ToolResultEvent | NoticeEvent | WarningEvent | CompletedEvent | FailedEvent | CancelledEvent)


class RunEvent(RootModel[Annotated[AnyRunEvent, Field(discriminator="kind")]]):
    """An `oscova/runEvent` notification: one of the event kinds, told apart by `kind`."""

    model_config = ConfigDict(defer_build=True)


def read_event(data: object) -> AnyRunEvent:
    """An event read from its JSON; `ValidationError` when it is not one."""
    return RunEvent.model_validate(data).root

EVENT_KINDS: tuple[str, ...] = tuple(get_args(kind.model_fields["kind"].annotation)[0] for kind in get_args(AnyRunEvent))
FINAL_KINDS: frozenset[str] = frozenset(get_args(RunStatus))


class RunResult(WireModel):
    """What a run ends with: the `oscova.runAgent` result, and `oscova-lsp run --json`'s last line."""

    run_id: str
    agent_id: str
    session_id: str | None = Field(default=None, exclude_if=is_none)
    """Pass it again to continue the conversation; absent when the run never started (its run host stopped)."""
    status: RunStatus
    text: str
    messages: list[ConversationMessage]
    transcript: str | None
    reasoning: str | None = Field(default=None, exclude_if=is_none)
    incomplete: Incomplete | None = Field(default=None, exclude_if=is_none)
    """The run completed, but its answer is not the model's whole answer."""
    error: str | None = Field(default=None, exclude_if=is_none)
    transcript_error: str | None = Field(default=None, exclude_if=is_none)
    """Why the transcript could not be written, or was cut short."""


class ApprovalPrompt(WireModel):
    """What a run asks before an approval-required tool runs."""

    run_id: str
    agent_id: str
    tool: str
    arguments: JsonValue
