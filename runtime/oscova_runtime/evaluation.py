"""The evaluation model (`*.eval.yaml`): one source for the checker, the runner and `oscova-lsp schema --eval`.

An evaluation names an agent, the `[models.*]` it runs on, how often, and cases: an input and the
assertions its runs must meet. Importing this module stays cheap (no `openai`, no `jsonschema`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .definition import AGENT_ID_PATTERN

ToolsMode = Literal["exact", "in_order", "any_order"]
RunOutcome = Literal["completed", "failed", "cancelled"]


class ToolSequence(BaseModel):
    """The tool calls of a run, in one of three modes."""

    model_config = ConfigDict(extra="forbid")

    mode: ToolsMode = Field(
        default="exact",
        description="`exact`: these calls and no others, in this order; `in_order`: these calls in this order, "
                    "others allowed between them; `any_order`: each of these calls, in any order.")
    calls: list[str] = Field(description="Tool names, in the order the run should call them.")


class ToolCall(BaseModel):
    """One call the run must make: a tool name and arguments the call includes."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The tool the run calls.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="Arguments the call has with these values (others may be there too).")


ASSERTION_DOCS: dict[str, str] = {
    "status": "The run ends with this status: `completed`, `failed` or `cancelled`.",
    "contains": "The final answer contains this text.",
    "not_contains": "The final answer does not contain this text.",
    "equals": "The final answer is this text (surrounding whitespace ignored).",
    "regex": "The final answer matches this regular expression (Python syntax, searched anywhere).",
    "json_schema": "The final answer is JSON that validates against this JSON Schema.",
    "tools": "The run's tool calls, by name, in a mode: `exact`, `in_order` or `any_order`.",
    "tool_called": "The run calls this tool at least once with these arguments (a subset of the call's).",
    "no_tool": "The run calls none of these tools.",
    "judge": "A judge model reads the input and the answer and says whether the answer meets this rubric; "
             "its reason is kept with the run.",
    "max_tokens": "The run's model calls use at most this many tokens in all (input and output).",
    "max_model_calls": "The run makes at most this many model calls.",
    "max_duration_ms": "The run takes at most this many milliseconds.",
    "instructions_contain": "The assembled instructions (the prompt before the input) contain this text; "
                            "checked without a model call.",
}
"""What each assertion checks, in one place: the schema's descriptions and hover say it."""


class Expectation(BaseModel):
    """One assertion: a mapping with exactly one of the assertion keys."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"minProperties": 1, "maxProperties": 1})

    status: RunOutcome | None = Field(default=None, description=ASSERTION_DOCS["status"])
    contains: str | None = Field(default=None, description=ASSERTION_DOCS["contains"])
    not_contains: str | None = Field(default=None, description=ASSERTION_DOCS["not_contains"])
    equals: str | None = Field(default=None, description=ASSERTION_DOCS["equals"])
    regex: str | None = Field(default=None, description=ASSERTION_DOCS["regex"])
    json_schema: dict[str, Any] | bool | None = Field(default=None, description=ASSERTION_DOCS["json_schema"])
    tools: ToolSequence | None = Field(default=None, description=ASSERTION_DOCS["tools"])
    tool_called: ToolCall | None = Field(default=None, description=ASSERTION_DOCS["tool_called"])
    no_tool: list[str] | None = Field(default=None, description=ASSERTION_DOCS["no_tool"])
    judge: str | None = Field(default=None, description=ASSERTION_DOCS["judge"])
    max_tokens: int | None = Field(default=None, ge=0, description=ASSERTION_DOCS["max_tokens"])
    max_model_calls: int | None = Field(default=None, ge=0, description=ASSERTION_DOCS["max_model_calls"])
    max_duration_ms: int | None = Field(default=None, ge=0, description=ASSERTION_DOCS["max_duration_ms"])
    instructions_contain: str | None = Field(default=None, description=ASSERTION_DOCS["instructions_contain"])

    @model_validator(mode="after")
    def _exactly_one(self) -> Expectation:
        given = [key for key in self.model_fields_set if getattr(self, key) is not None]
        if len(given) != 1:
            raise ValueError(f"an assertion has exactly one key ({', '.join(ASSERTION_DOCS)})"
                             + (f"; this one has {len(given)}: {', '.join(sorted(given))}" if given else ""))
        return self

    @property
    def kind(self) -> str:
        return next(key for key in ASSERTION_DOCS if getattr(self, key) is not None)

    @property
    def value(self) -> Any:
        return getattr(self, self.kind)


class EvalCase(BaseModel):
    """One input to the agent and what its runs must do."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="The case's name, unique in its file (`--case NAME`).")
    input: str = Field(description="The user message the run starts with.")
    variables: dict[str, Any] = Field(
        default_factory=dict, description="Overrides of the host configuration's `[variables]` for this case.")
    expect: list[Expectation] = Field(default_factory=list, description="The assertions every run must meet.")


class Evaluation(BaseModel):
    """An evaluation as authored in `*.eval.yaml`."""

    model_config = ConfigDict(extra="forbid", title="Oscova evaluation")

    agent: str = Field(pattern=AGENT_ID_PATTERN, description="The id of an agent of this workspace.")
    models: list[str] = Field(
        default_factory=list, description="`[models.NAME]` entries to run on; default: the agent's own model.")
    repeat: int = Field(default=1, ge=1, le=1000, description="Runs per case and model.")
    pass_rate: float = Field(
        default=1.0, ge=0.0, le=1.0,
        description="A case passes when at least this share of its runs pass (1.0: every run, pass^k).")
    judge: str = Field(default="default", description="The `[models.NAME]` entry that grades `judge` assertions.")
    cases: list[EvalCase] = Field(min_length=1, description="The cases, each run `repeat` times on each model.")


def eval_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of evaluation files, as `oscova-lsp schema --eval` prints it."""
    schema = Evaluation.model_json_schema()
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    schema.setdefault("$id", "https://oscova.dev/schema/evaluation.json")
    return schema


# ------------------------------------------------------------------------------------------ what an evaluation means

MAX_EVAL_RUNS = 10_000
"""The most runs one `oscova-lsp eval` (or `oscova.runEval`) makes: cases × models × repeat, over every file given."""

def run_count(cases: int, models: int, repeat: int) -> int:
    """How many runs an evaluation makes (no `models`: one, the agent's own)."""
    return cases * max(models, 1) * repeat


def too_many_runs(cases: int, models: int, repeat: int) -> str | None:
    """The sentence for a matrix over `MAX_EVAL_RUNS`, or None."""
    runs = run_count(cases, models, repeat)
    if runs <= MAX_EVAL_RUNS:
        return None
    return (f"{cases:,} case{'s' * (cases != 1)} × {max(models, 1):,} model{'s' * (max(models, 1) != 1)} × "
            f"{repeat:,} repeat{'s' * (repeat != 1)} make {runs:,} runs, over the {MAX_EVAL_RUNS:,} one evaluation "
            "may make; lower `repeat`, run on fewer models or split the cases")


def schema_problem(schema: Any) -> str | None:
    """Why `schema` is not a JSON Schema, or None (the runner and the checker read the same answer)."""
    import jsonschema  # only for files with a `json_schema` assertion
    import regex

    checker = jsonschema.FormatChecker()
    checker.checks("regex", raises=regex.error)(regex.compile)  # a `pattern` as grading compiles it
    try:
        validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator(validator.META_SCHEMA, format_checker=checker).validate(schema)
    except jsonschema.ValidationError as error:
        where = "/".join(str(p) for p in error.absolute_path)
        return (f"at `{where}`: " if where else "") + error.message
    return None
