"""What `oscova-lsp eval` prints: the matrix (a row per case, a column per model) and the failures, as text;
the JSON of docs/evaluations.md (`{evals: [{file, agent, cases: [...]}], ok, passed, failed}`); JUnit XML (a test case
per case × model); GitHub annotations on each failing case's line; one self-contained HTML page."""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import replace

from ..reporting import display_path, github_data, github_property, json_text, printable, printable_line
from ..wire import reports as wire
from .eval_runner import CaseOutcome, EvalReport, Failure, transcript_text
from .junit import JUnitCase, JUnitSuite, junit_xml


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
    rows = [["case", *map(printable_line, models)]] + [
        [printable_line(case), *(_cell(cells.get((case, m))) for m in models)] for case in cases]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in rows]


def _failures(outcome: CaseOutcome) -> list[str]:
    total = outcome.total
    needed = f"needs {outcome.needed} of {total} runs"
    lines = [f"✗ {printable_line(outcome.case)} on {printable_line(outcome.model)}: {outcome.passed}/{total} runs "
             f"passed ({needed})" + ("" if len(outcome.runs) == total else f"; {len(outcome.runs)} of {total} ran")]
    for failure in outcome.failures:
        body = printable(failure.message).replace("\n", "\n      ")
        lines.append(f"    run {failure.run}: {printable_line(failure.assertion)}\n      {body}")
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


def eval_report(report: EvalReport) -> wire.EvalReport:
    """The JSON report: per evaluation file, each case × model cell."""
    evals = [wire.EvalFileResult(file=os.path.relpath(file), agent=outcomes[0].agent,
                                 cases=[_case_result(o) for o in outcomes])
             for file, outcomes in _by_file(report.outcomes).items()]
    passed = sum(1 for o in report.outcomes if o.ok)
    return wire.EvalReport(evals=evals, ok=report.ok, passed=passed, failed=len(report.outcomes) - passed)


def _case_result(outcome: CaseOutcome) -> wire.EvalCaseResult:
    total = max(outcome.expected_runs, len(outcome.runs))
    return wire.EvalCaseResult(name=outcome.case, model=outcome.model, runs=total, passed=outcome.passed,
                               pass_rate=round(outcome.passed / total, 4) if total else 0.0, ok=outcome.ok,
                               failures=[_failure(f) for f in outcome.failures], tokens=outcome.tokens,
                               duration_ms=outcome.duration_ms)


def _failure(failure: Failure) -> wire.EvalFailure:
    """With `expected` and `actual` when the output drifted (for a diff view)."""
    drifted = failure.expected is not None and failure.actual is not None
    return wire.EvalFailure(assertion=failure.assertion, message=f"run {failure.run}: {failure.message}",
                            expected=failure.expected if drifted else None, actual=failure.actual if drifted else None)


def format_json(report: EvalReport) -> str:
    return json_text(eval_report(report).wire(), indent=2)


def _failure_text(outcome: CaseOutcome) -> str:
    return printable("\n".join(f"run {f.run}: {f.assertion}\n  {f.message}" for f in outcome.failures))


def _summary(outcome: CaseOutcome) -> str:
    total = outcome.total
    ran = "" if len(outcome.runs) == total else f"; {len(outcome.runs)} of {total} ran"
    return f"{outcome.passed}/{total} runs passed, needs {outcome.needed} of {total} runs{ran}"


def format_junit(report: EvalReport) -> str:
    """JUnit XML: a test suite per evaluation file, a test case per case × model (`case [model]`); a case
    below its pass rate is a `failure` whose text lists the failed assertions of each run."""
    suites = []
    for file, outcomes in _by_file(report.outcomes).items():
        cases = []
        for outcome in outcomes:
            case = JUnitCase(f"{outcome.case} [{outcome.model}]", f"oscova.eval.{outcome.agent}", display_path(file),
                             outcome.duration_ms / 1000, line=outcome.line,
                             output=f"{_summary(outcome)}; {outcome.tokens} tokens")
            cases.append(case if outcome.ok else replace(case, outcome="failure", kind="eval",
                                                         message=_summary(outcome), text=_failure_text(outcome)))
        suites.append(JUnitSuite(display_path(file), cases))
    return junit_xml("oscova evaluations", suites)


def format_github(report: EvalReport) -> str:
    """GitHub workflow commands: an `::error` on the line of each case below its pass rate, then the summary."""
    lines = []
    for outcome in report.outcomes:
        if outcome.ok:
            continue
        where = github_property(printable_line(display_path(outcome.file)))
        title = github_property(printable_line(f"Evaluation {outcome.case} on {outcome.model}: {_summary(outcome)}"))
        lines.append(f"::error file={where},line={outcome.line},title={title}::{github_data(_failure_text(outcome))}")
    lines.append(format_text(report).rsplit("\n", 1)[-1])
    return "\n".join(lines)


_STYLE = """body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #bbb;padding:.4em .8em;text-align:left}pre{white-space:pre-wrap;background:#f6f6f6;padding:.6em;
max-height:40em;overflow:auto}details{margin:.3em 0}.fail{color:#a00}"""


def _html_cell(outcome: CaseOutcome | None) -> str:
    if outcome is None:
        return "<td>—</td>"
    total = max(outcome.expected_runs, len(outcome.runs))
    rate = outcome.passed / total if total else 0.0
    return (f'<td style="background:hsl({round(120 * rate)},65%,82%)">{"✓" if outcome.ok else "✗"} '
            f"{outcome.passed}/{total}<br><small>{outcome.tokens} tok · {_seconds(outcome.duration_ms)}</small></td>")


def _html_matrix(file: str, outcomes: list[CaseOutcome]) -> list[str]:
    models = list(dict.fromkeys(o.model for o in outcomes))
    cells = {(o.case, o.model): o for o in outcomes}
    out = [f"<h2>{html.escape(display_path(file))} <small>(agent {html.escape(outcomes[0].agent)})</small></h2>",
           "<table><tr><th>case</th>" + "".join(f"<th>{html.escape(m)}</th>" for m in models) + "</tr>"]
    for case in dict.fromkeys(o.case for o in outcomes):
        out.append(f"<tr><th>{html.escape(case)}</th>" + "".join(_html_cell(cells.get((case, m))) for m in models)
                   + "</tr>")
    return [*out, "</table>"]


def _html_runs(report: EvalReport, outcome: CaseOutcome) -> list[str]:
    out = [f"<h3>{html.escape(outcome.case)} on {html.escape(outcome.model)}: {html.escape(_summary(outcome))}</h3>"]
    failed: dict[int, list[str]] = {}
    for f in outcome.failures:
        failed.setdefault(f.run, []).append(f"{f.assertion}\n  {f.message}")
    for facts in outcome.runs:
        mark = "✗" if facts.repeat in failed else "✓"
        out.append(f"<details><summary>{mark} run {facts.repeat}: {html.escape(facts.status)}, {facts.tokens} tok, "
                   f"{_seconds(facts.duration_ms)}</summary>")
        if facts.repeat in failed:
            out.append(f'<pre class="fail">{html.escape(chr(10).join(failed[facts.repeat]))}</pre>')
        out.append(f"<p>Answer:</p><pre>{html.escape(facts.text)}</pre>")
        out.append(f"<p>Transcript:</p><pre>{html.escape(transcript_text(report, facts))}</pre></details>")
    return out


def format_html(report: EvalReport) -> str:
    """One self-contained page (no script, nothing fetched): the matrix coloured by pass rate, then each run
    with its failures, answer and transcript, for a CI artifact."""
    body = [f"<h1>Oscova evaluation</h1><p>{html.escape(format_text(report).rsplit(chr(10), 1)[-1])}</p>"]
    for file, outcomes in _by_file(report.outcomes).items():
        body += _html_matrix(file, outcomes)
    body.append("<h2>Runs</h2>")
    for outcome in report.outcomes:
        body += _html_runs(report, outcome)
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">'
            f"<title>Oscova evaluation</title><style>{_STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


FORMATS = {"text": format_text, "json": format_json, "junit": format_junit, "github": format_github,
           "html": format_html}
"""`--format` choices and their renderers."""


def render(report: EvalReport, format: str) -> str:
    return FORMATS[format](report)
