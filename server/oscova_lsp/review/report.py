"""A review's findings as plain values, and their JSON report (`--format json`, `oscova.review`): the
`wire.reports.ReviewReport` model, version 1 (docs/review.md, "The JSON report").

Paths are relative to the repository's top folder, `/`-separated; a diagnostic is `{path, line, character,
code, severity, message}` with 1-based line and character (as `check`'s text and GitHub output).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..wire import reports as wire
from .git import Base
from .render import REVIEW_FACTS, REVIEW_MOMENT

AgentStatus = Literal["changed", "added", "removed"]
TestStatus = Literal["passed", "drifted", "error", "not replayed"]
FORMAT_VERSION: Literal[1] = 1


@dataclass
class AgentChange:
    agent_id: str
    status: AgentStatus
    path: str
    """The definition (the work tree's; the base's for a removed agent)."""
    causes: list[str] = field(default_factory=list)
    """The changed files the agent's request depends on ("via `templates/partials/persona.j2`")."""
    changes: dict[str, str] = field(default_factory=dict)
    """Part (`instructions`, `messages`, `tools`, `options`) -> its unified diff, base → work tree."""
    request: str | None = None
    """An added or removed agent's whole request, as text."""
    economics: wire.PromptEconomics | None = None
    """Token delta and whether the cacheable prefix moved: `token_delta.token_delta` (None when a side has no
    token counts)."""

    def report(self) -> wire.ReviewAgent:
        return wire.ReviewAgent(id=self.agent_id, status=self.status, path=self.path, causes=self.causes,
                                changes=[wire.ReviewChange(part=part, diff=diff) for part, diff in self.changes.items()],
                                request=self.request, economics=self.economics)


@dataclass(frozen=True)
class Finding:
    """A diagnostic the change introduced or fixed (1-based position)."""

    path: str
    line: int
    character: int
    code: str
    severity: str
    message: str

    def report(self) -> wire.ReviewFinding:
        return wire.ReviewFinding(path=self.path, line=self.line, character=self.character, code=self.code,
                                  severity=self.severity, message=self.message)


@dataclass
class TestOutcome:
    name: str
    path: str
    agent_id: str
    status: TestStatus
    difference: str | None = None
    """A drifted test's first difference (a unified diff, recorded → now)."""
    reason: str | None = None
    """Why it could not run, or why it was not replayed."""

    @property
    def failed(self) -> bool:
        return self.status in ("drifted", "error")

    def report(self) -> wire.ReviewTest:
        return wire.ReviewTest(name=self.name, path=self.path, agent_id=self.agent_id, status=self.status,
                               difference=self.difference, reason=self.reason)


@dataclass
class WorkspaceReview:
    root: str
    """The workspace root, relative to the repository's top (`.` for the top itself)."""
    agents: list[AgentChange] = field(default_factory=list)
    unchanged: int = 0
    introduced: list[Finding] = field(default_factory=list)
    fixed: list[Finding] = field(default_factory=list)
    tests: list[TestOutcome] = field(default_factory=list)
    not_loaded: list[dict[str, Any]] = field(default_factory=list)
    """The workspace's own tools and providers the rendered agents use, not imported without trust."""

    def of(self, status: AgentStatus) -> list[AgentChange]:
        return [a for a in self.agents if a.status == status]

    def report(self) -> wire.ReviewWorkspace:
        return wire.ReviewWorkspace.model_validate({
            "root": self.root, "unchanged": self.unchanged, "notLoaded": self.not_loaded,
            "agents": [a.report() for a in self.agents],
            "diagnostics": wire.ReviewFindings(introduced=[d.report() for d in self.introduced],
                                               fixed=[d.report() for d in self.fixed]),
            "tests": [t.report() for t in self.tests]})


@dataclass
class Review:
    base: Base
    trusted: bool
    workspaces: list[WorkspaceReview] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def count(self, status: AgentStatus) -> int:
        return sum(len(w.of(status)) for w in self.workspaces)

    @property
    def errors_introduced(self) -> list[Finding]:
        return [d for w in self.workspaces for d in w.introduced if d.severity == "error"]

    @property
    def tests(self) -> list[TestOutcome]:
        return [t for w in self.workspaces for t in w.tests]

    @property
    def exit_code(self) -> int:
        """0: no agent test drifted (or could not run) and no error was introduced; 1 otherwise."""
        return 1 if self.errors_introduced or any(t.failed for t in self.tests) else 0

    def summary(self) -> wire.ReviewSummary:
        replayed = [t for t in self.tests if t.status != "not replayed"]
        return wire.ReviewSummary(
            changed=self.count("changed"), added=self.count("added"), removed=self.count("removed"),
            unchanged=sum(w.unchanged for w in self.workspaces),
            diagnostics_introduced=sum(len(w.introduced) for w in self.workspaces),
            errors_introduced=len(self.errors_introduced), diagnostics_fixed=sum(len(w.fixed) for w in self.workspaces),
            tests_replayed=len(replayed), tests_drifted=sum(t.failed for t in replayed))

    def report(self) -> wire.ReviewReport:
        return wire.ReviewReport(
            version=FORMAT_VERSION, base=wire.ReviewBase(ref=self.base.ref, commit=self.base.commit,
                                                         chosen=self.base.label),
            head="the work tree", rendered_at=REVIEW_MOMENT.isoformat(), facts=dict(REVIEW_FACTS),
            trusted=self.trusted, exit_code=self.exit_code, summary=self.summary(),
            workspaces=[w.report() for w in self.workspaces], notes=self.notes)
