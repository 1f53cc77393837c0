"""What `oscova-lsp eval` prints: the matrix (a row per case, a column per model) and the failures, as text;
or the JSON the issue specifies (`{evals: [{file, agent, cases: [...]}], ok, passed, failed}`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..reporting import json_text, printable, printable_line
from .evals import CaseOutcome, EvalReport


def _by_file(outcomes: Sequence[CaseOutcome]) -> dict[str, list[CaseOutcome]]:
    grouped: dict[str, list[CaseOutcome]] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.file, []).append(outcome)
    return grouped


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.1f}s"


def _cell(outcome: CaseOutcome | None) -> str:
    if outcome is None:
        return "—"
    total = max(outcome.expected_runs, len(outcome.runs))
    mark = "✓" if outcome.ok else "✗"
    return f"{mark} {outcome.passed}/{total}  {outcome.tokens} tok  {_seconds(outcome.duration_ms)}"


def _matrix(outcomes: list[CaseOutcome]) -> list[str]:
    models = list(dict.fromkeys(o.model for o in outcomes))
    cases = list(dict.fromkeys(o.case for o in outcomes))
    cells = {(o.case, o.model): o for o in outcomes}
    rows = [["case", *models]] + [[printable_line(case), *(_cell(cells.get((case, m))) for m in models)]
                                   for case in cases]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in rows]


def _failures(outcome: CaseOutcome) -> list[str]:
    total = max(outcome.expected_runs, len(outcome.runs))
    needed = f"needs {outcome.pass_rate:g} of the runs"
    lines = [f"✗ {printable_line(outcome.case)} on {printable_line(outcome.model)}: {outcome.passed}/{total} runs "
             f"passed ({needed})" + ("" if len(outcome.runs) == total else f"; {len(outcome.runs)} of {total} ran")]
    for run, assertion, message in outcome.failures:
        body = printable(message).replace("\n", "\n      ")
        lines.append(f"    run {run}: {printable_line(assertion)}\n      {body}")
    return lines


def format_text(report: EvalReport) -> str:
    out: list[str] = []
    for file, outcomes in _by_file(report.outcomes).items():
        out.append(f"{printable_line(os.path.relpath(file))} (agent {printable_line(outcomes[0].agent)})")
        out += _matrix(outcomes)
        out.append("")
    failing = [o for o in report.outcomes if not o.ok]
    for outcome in failing:
        out += _failures(outcome)
    if failing:
        out.append("")
    passed = len(report.outcomes) - len(failing)
    verdict = "cancelled: " if report.cancelled else ""
    out.append(f"{verdict}{passed} of {len(report.outcomes)} case × model cells met their pass rate"
               + (f"; runs recorded in {printable_line(os.path.relpath(report.folder))}" if report.folder else ""))
    return "\n".join(out)


def to_json(report: EvalReport) -> dict[str, Any]:
    evals = [{"file": os.path.relpath(file), "agent": outcomes[0].agent, "cases": [_case_json(o) for o in outcomes]}
             for file, outcomes in _by_file(report.outcomes).items()]
    passed = sum(1 for o in report.outcomes if o.ok)
    return {"evals": evals, "ok": report.ok, "passed": passed, "failed": len(report.outcomes) - passed}


def _case_json(outcome: CaseOutcome) -> dict[str, Any]:
    total = max(outcome.expected_runs, len(outcome.runs))
    return {"name": outcome.case, "model": outcome.model, "runs": total, "passed": outcome.passed,
            "passRate": round(outcome.passed / total, 4) if total else 0.0, "ok": outcome.ok,
            "failures": [{"assertion": assertion, "message": f"run {run}: {message}"}
                         for run, assertion, message in outcome.failures],
            "tokens": outcome.tokens, "durationMs": outcome.duration_ms}


def format_json(report: EvalReport) -> str:
    return json_text(to_json(report), indent=2)


FORMATS = {"text": format_text, "json": format_json}
"""`--format` choices and their renderers."""


def render(report: EvalReport, format: str) -> str:
    return FORMATS[format](report)
