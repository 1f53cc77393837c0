"""The `oscova.*` commands: each one's argument object, read strictly (`Arguments`), and what it answers.

`oscova.runAgent` answers a `RunResult` (`events.py`); `oscova.runEval` an `EvalRunResult` and `oscova.review` a
`ReviewReport` (`reports.py`).
"""

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, JsonValue

from .events import ConversationMessage
from .model import Arguments, Expect, WireModel, is_none


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("blank")
    return value


Name = Annotated[str, AfterValidator(_not_blank), Expect("a non-empty string")]
"""An id or a path: a string with more than blanks in it."""
Text = Annotated[str, Expect("a string")]
OptionalText = Annotated[str | None, Expect("a string")]
Flag = Annotated[bool, Expect("true or false")]


class ScopeArguments(Arguments):
    """`oscova.listAgents`, `oscova.listTests`, `oscova.listEvals`, `oscova.invalidateAgents`,
    `oscova.invalidateAll`."""

    uri: OptionalText = Field(default=None, exclude_if=is_none)
    """A file or folder that picks the workspace root; without it, every folder the editor opened."""


class RunAgentArguments(Arguments):
    agent_id: Name
    input: Text
    uri: OptionalText = Field(default=None, exclude_if=is_none)
    session_id: OptionalText = Field(default=None, exclude_if=is_none)
    """A result's `sessionId`, to continue its conversation."""


class PreviewPromptArguments(Arguments):
    agent_id: Name
    input: OptionalText = Field(default=None, exclude_if=is_none)
    uri: OptionalText = Field(default=None, exclude_if=is_none)


class CancelRunArguments(Arguments):
    run_id: Name


class EvictAgentArguments(Arguments):
    agent_id: Name
    uri: OptionalText = Field(default=None, exclude_if=is_none)


class RunTestArguments(Arguments):
    uri: Name
    """The case file."""
    update: Flag = False
    """Re-record a drifted case."""


class SaveTestCaseArguments(Arguments):
    run_id: Name
    name: OptionalText = Field(default=None, exclude_if=is_none)
    uri: OptionalText = Field(default=None, exclude_if=is_none)


class CompareRunsArguments(Arguments):
    transcript: Name
    previous: OptionalText = Field(default=None, exclude_if=is_none)
    """Without it, the run of the same agent before this one."""


class ReviewArguments(Arguments):
    uri: OptionalText = Field(default=None, exclude_if=is_none)
    base: OptionalText = Field(default=None, exclude_if=is_none)
    trust: Flag = False
    """Import the workspace's tools and providers (refused in an untrusted workspace)."""


class RunEvalArguments(Arguments):
    uri: Name
    """The evaluation file."""
    case: OptionalText = Field(default=None, exclude_if=is_none)
    models: Annotated[list[str], Expect("a list of [models.NAME] names")] = Field(default_factory=list)
    repeat: Annotated[int | None, Field(ge=1), Expect("a whole number of at least 1")] = None


# ------------------------------------------------------------------------------------------------ answers


class AgentListing(WireModel):
    """An agent as `oscova.listAgents` lists it."""

    id: str
    name: str
    uri: str
    exposed_as_tool: bool
    example_input: str | None


class CaseListing(WireModel):
    """An agent test as `oscova.listTests` lists it, or one that cannot be read (with `error`)."""

    name: str
    """The case's path below `.oscova/tests/`, without `.jsonl`."""
    path: str
    root: str
    error: str | None = Field(default=None, exclude_if=is_none)
    agent_id: str | None = Field(default=None, exclude_if=is_none)
    input: str | None = Field(default=None, exclude_if=is_none)
    uri: str | None = Field(default=None, exclude_if=is_none)
    """The case file (in the editor's answers)."""


class SavedCase(CaseListing):
    """What `oscova.saveTestCase` answers."""

    gitignore: list[str] | None = Field(default=None, exclude_if=is_none)
    """On the workspace's first case: the `.gitignore` lines that commit the cases and keep the rest out."""


class CaseRunResult(WireModel):
    """One replayed case: `oscova.runTest`'s answer, and an entry of `oscova-lsp test --format json`."""

    name: str
    path: str
    status: Literal["passed", "failed", "updated", "error"]
    agent_id: str | None
    duration_ms: float
    difference: str | None = Field(default=None, exclude_if=is_none)
    """The unified diff between what was recorded and what the agent sends now."""
    error: str | None = Field(default=None, exclude_if=is_none)
    uri: str | None = Field(default=None, exclude_if=is_none)


class RunRequests(WireModel):
    transcript: str
    run_id: str
    requests: str
    """Each model request as text (`oscova-lsp diff`'s form)."""


class Comparison(WireModel):
    """What `oscova.compareRuns` answers: both runs' model requests, for a diff view."""

    agent_id: str
    previous: RunRequests
    current: RunRequests


class EvalCaseListing(WireModel):
    name: str
    line: int
    """0-based."""


class EvalListing(WireModel):
    """An evaluation file as `oscova.listEvals` lists it, or one that does not validate (with `error`)."""

    file: str
    uri: str
    root: str
    error: str | None = Field(default=None, exclude_if=is_none)
    agent: str | None = Field(default=None, exclude_if=is_none)
    models: list[str] | None = Field(default=None, exclude_if=is_none)
    repeat: int | None = Field(default=None, exclude_if=is_none)
    pass_rate: float | None = Field(default=None, exclude_if=is_none)
    cases: list[EvalCaseListing] | None = Field(default=None, exclude_if=is_none)


class EvalProgress(WireModel):
    """`oscova/evalEvent`: one run of `oscova.runEval` ended."""

    uri: str
    case: str
    model: str
    done: int
    """Runs ended, of every case."""
    total: int
    passed: int
    """Runs of this case on this model that passed so far."""
    runs: int
    """Runs of this case on this model so far."""


# ------------------------------------------------------------------------------------------------ preview


class PreviewTool(WireModel):
    name: str
    description: str | None
    parameters: JsonValue = Field(default=None, exclude_if=is_none)
    """The JSON Schema of a function tool's arguments."""
    approval_required: bool | None = Field(default=None, exclude_if=is_none)
    tokens: int | None = Field(default=None, exclude_if=is_none)
    """What the tool adds to the request."""


class PartTokens(WireModel):
    instructions: int
    messages: int
    tools: int


class ProviderTokens(WireModel):
    """What one provider's contribution costs."""

    type: str
    instructions: int
    messages: int
    tools: int


class Cacheable(WireModel):
    tokens: int
    """The tokens of the request's prefix that stays the same from run to run."""
    ends_at: str
    """Where that prefix ends, in words."""


class CachingAdvice(WireModel):
    """What the checker says of where the agent's requests stop sharing a cacheable prefix (OSC102, OSC108)."""

    code: str
    path: str
    """Relative to the workspace root."""
    line: int
    """1-based."""
    message: str


class PromptTokens(WireModel):
    """What the request costs in the model's tokens."""

    total: int
    instructions: int
    messages: int
    tools: int
    by_provider: list[ProviderTokens]
    exact: bool
    """False when the counts are estimates."""
    tokenizer: str
    cacheable: Cacheable | None = Field(default=None, exclude_if=is_none)
    note: str | None = Field(default=None, exclude_if=is_none)
    warnings: list[str] | None = Field(default=None, exclude_if=is_none)
    caching: list[CachingAdvice] | None = Field(default=None, exclude_if=is_none)


class PreviewProvider(WireModel):
    """One context provider of the agent and what it contributed."""

    type: str
    class_: str = Field(alias="class")
    state_keys: list[str]
    position: int | None
    origin: str
    active: bool
    inactive_reason: str | None = Field(default=None, exclude_if=is_none)
    instructions: str | None
    messages: list[ConversationMessage]
    tools: list[str]
    tokens: PartTokens | None = Field(default=None, exclude_if=is_none)
    notices: list[str] | None = Field(default=None, exclude_if=is_none)


class NotLoaded(WireModel):
    """A tool or provider of the workspace whose code was not imported (an untrusted workspace)."""

    kind: Literal["tool", "provider"]
    name: str
    source: str
    reason: str


class PreviewResult(WireModel):
    """What `oscova.previewPrompt` answers: the provider pipeline without a model."""

    agent_id: str
    instructions: str
    messages: list[ConversationMessage]
    tools: list[PreviewTool]
    providers: list[PreviewProvider]
    tokens: PromptTokens | None = Field(default=None, exclude_if=is_none)
    trusted: bool
    not_loaded: list[NotLoaded]
    notes: list[str]
    """A sentence for each agent it calls as a tool that asks for what only a run's requested agent gets (memory)."""
