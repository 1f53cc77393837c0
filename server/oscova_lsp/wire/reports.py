"""The JSON reports: `oscova-lsp test --format json`, `oscova-lsp eval --format json` (and `oscova.runEval`), and
`oscova-lsp review --format json` (and `oscova.review`)."""

from typing import Literal

from pydantic import Field

from .commands import CaseRunResult, NotLoaded
from .model import WireModel, is_none


class CasesReport(WireModel):
    """`oscova-lsp test --format json`: each case replayed, and how many ended each way."""

    cases: list[CaseRunResult]
    passed: int
    failed: int
    updated: int
    error: int


class EvalFailure(WireModel):
    assertion: str
    """The assertion as written, on one line (`contains: "eu-west"`)."""
    message: str
    expected: str | None = Field(default=None, exclude_if=is_none)
    """What a drifted output was to be, for a diff view (with `actual`)."""
    actual: str | None = Field(default=None, exclude_if=is_none)


class EvalCaseResult(WireModel):
    """One case on one model."""

    name: str
    model: str
    runs: int
    passed: int
    pass_rate: float
    ok: bool
    """Whether the runs met the case's pass rate."""
    failures: list[EvalFailure]
    tokens: int
    duration_ms: float


class EvalFileResult(WireModel):
    file: str
    agent: str
    cases: list[EvalCaseResult]


class EvalReport(WireModel):
    """`oscova-lsp eval --format json`."""

    evals: list[EvalFileResult]
    ok: bool
    passed: int
    """Case × model cells that met their pass rate."""
    failed: int


class EvalRunResult(EvalReport):
    """What `oscova.runEval` answers: the report, where the runs are recorded, and whether it was cancelled."""

    folder: str | None
    cancelled: bool


class ReviewBase(WireModel):
    ref: str
    commit: str
    chosen: str
    """How the commit was chosen, in words."""


class ReviewSummary(WireModel):
    changed: int
    added: int
    removed: int
    unchanged: int
    diagnostics_introduced: int
    errors_introduced: int
    diagnostics_fixed: int
    tests_replayed: int
    tests_drifted: int


class ReviewChange(WireModel):
    part: str
    """`instructions`, `messages`, `tools` or `options`."""
    diff: str
    """Unified, base → work tree."""


class PromptEconomics(WireModel):
    """An agent's request before and after the change, in its model's tokens."""

    tokens_before: int
    tokens_after: int
    delta: int
    cacheable_before: int
    cacheable_after: int
    prefix_moved: bool
    """Whether the cacheable prefix changed size."""
    exact: bool
    """False when either side's count is an estimate."""
    tokenizer: str | None


class ReviewAgent(WireModel):
    id: str
    status: Literal["changed", "added", "removed"]
    path: str
    causes: list[str]
    """The changed files the agent's request depends on."""
    changes: list[ReviewChange]
    request: str | None
    """An added or removed agent's whole request, as text."""
    economics: PromptEconomics | None
    """Null when either side's request could not be assembled."""


class ReviewFinding(WireModel):
    """A diagnostic the change introduced or fixed; 1-based line and character."""

    path: str
    line: int
    character: int
    code: str
    severity: str
    message: str


class ReviewFindings(WireModel):
    introduced: list[ReviewFinding]
    fixed: list[ReviewFinding]


class ReviewTest(WireModel):
    name: str
    path: str
    agent_id: str
    status: Literal["passed", "drifted", "error", "not replayed"]
    difference: str | None = Field(default=None, exclude_if=is_none)
    reason: str | None = Field(default=None, exclude_if=is_none)


class ReviewWorkspace(WireModel):
    root: str
    unchanged: int
    not_loaded: list[NotLoaded]
    agents: list[ReviewAgent]
    diagnostics: ReviewFindings
    tests: list[ReviewTest]


class ReviewReport(WireModel):
    """`oscova-lsp review --format json` (docs/review.md, "The JSON report")."""

    version: Literal[1]
    base: ReviewBase
    head: str
    rendered_at: str
    facts: dict[str, str]
    """The machine every template sees in a review, on both sides."""
    trusted: bool
    exit_code: int
    summary: ReviewSummary
    workspaces: list[ReviewWorkspace]
    notes: list[str]
