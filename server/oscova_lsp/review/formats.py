"""A review as text (a terminal), Markdown (one pull-request comment), GitHub (the step summary and
annotations) and JSON (`report.py` documents its shape)."""

from __future__ import annotations

import html
import json
import re

from ..reporting import github_annotation
from .render import NEUTRAL_INPUT, REVIEW_FACTS, REVIEW_MOMENT
from .report import AgentChange, Finding, Review, TestOutcome, WorkspaceReview

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MARKS = {"error": "❌", "warning": "⚠️", "information": "ℹ️", "hint": "💡"}
_TEST_MARKS = {"passed": "✅ passed", "drifted": "❌ drifted", "error": "❌ could not run",
               "not replayed": "➖ not replayed"}
_LEVELS = {"error": "error", "warning": "warning", "information": "notice", "hint": "notice"}


def terminal_text(text: str) -> str:
    """File content made safe to print to a terminal: control characters other than newline and tab are
    shown as `\\xNN` escapes, so a template cannot move the cursor or retitle the window."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _base(review: Review) -> str:
    return f"{review.base.commit[:12]} ({review.base.label})"


def _inputs() -> str:
    facts = REVIEW_FACTS
    return (f"{REVIEW_MOMENT.strftime('%Y-%m-%d %H:%M UTC')}, each agent's `example_input` (else "
            f"\"{NEUTRAL_INPUT}\"), a stated machine ({facts['os']} {facts['architecture']}, {facts['shell']}, home "
            f"{facts['home_directory']})")


def _not_loaded(workspace: WorkspaceReview) -> str:
    return ", ".join(f"{n['kind']} `{n['name']}` (`{n['source']}`)" for n in workspace.not_loaded)


def _what(agent: AgentChange) -> str:
    return ", ".join(agent.changes) + (" — via " + ", ".join(f"`{c}`" for c in agent.causes) if agent.causes else "")


def _economics(agent: AgentChange) -> str | None:
    """`tokens 1,240 → 1,310 (+70, o200k_base); cacheable prefix 1,020 → 300 (moved)`, or None without counts."""
    e = agent.economics
    if not e:
        return None
    mark = "" if e.exact else "≈ "
    prefix = "moved" if e.prefix_moved else "unchanged"
    return (f"tokens {mark}{e.tokens_before:,} → {mark}{e.tokens_after:,} ({e.delta:+,}, {e.tokenizer}); "
            f"cacheable prefix {mark}{e.cacheable_before:,} → {mark}{e.cacheable_after:,} ({prefix})")


def _finding_text(d: Finding) -> str:
    return f"{d.path}:{d.line}:{d.character}: {d.code} {d.severity}: {d.message}"


def _summary_rows(review: Review) -> list[tuple[str, str]]:
    s = review.summary()
    introduced = f"{s.diagnostics_introduced}" + (f" ({_plural(s.errors_introduced, 'error')})"
                                                   if s.errors_introduced else "")
    tests = f"{s.tests_drifted} of {s.tests_replayed} replayed"
    return [("agents changed", str(s.changed)), ("agents added", str(s.added)),
            ("agents removed", str(s.removed)), ("agents unchanged", str(s.unchanged)),
            ("diagnostics introduced", introduced), ("diagnostics fixed", str(s.diagnostics_fixed)),
            ("agent tests drifted", tests)]


# ------------------------------------------------------------------------------------------------ text


def format_text(review: Review) -> str:
    lines = [f"review: {_base(review)} → the work tree; rendered offline at {_inputs()}"]
    for workspace in review.workspaces:
        lines += _workspace_text(workspace, review.trusted)
    lines += [f"note: {n}" for n in review.notes]
    s = review.summary()
    lines.append(f"{_plural(s.changed, 'agent')} changed, {s.added} added, {s.removed} removed, "
                 f"{s.unchanged} unchanged; {_plural(s.diagnostics_introduced, 'diagnostic')} introduced "
                 f"({_plural(s.errors_introduced, 'error')}), {s.diagnostics_fixed} fixed; "
                 f"{s.tests_drifted} of {_plural(s.tests_replayed, 'agent test')} drifted")
    return terminal_text("\n".join(lines))


def _workspace_text(workspace: WorkspaceReview, trusted: bool) -> list[str]:
    lines = [f"workspace {workspace.root}:"]
    if workspace.not_loaded and not trusted:
        lines.append(f"  not loaded (the workspace's own code; --trust imports it): {_not_loaded(workspace)}")
    for agent in workspace.of("changed"):
        lines.append(f"~ {agent.agent_id}: {_what(agent)}")
        if (economics := _economics(agent)) is not None:
            lines.append(f"  {economics}")
        lines += ["  " + line for diff in agent.changes.values() for line in diff.splitlines()]
    lines += [f"+ {a.agent_id} ({a.path})" for a in workspace.of("added")]
    lines += [f"- {a.agent_id} ({a.path})" for a in workspace.of("removed")]
    lines.append(f"  {_plural(workspace.unchanged, 'agent')} unchanged")
    lines += [f"  introduced {_finding_text(d)}" for d in workspace.introduced]
    lines += [f"  fixed {_finding_text(d)}" for d in workspace.fixed]
    for test in workspace.tests:
        word = {"passed": "PASS", "drifted": "DRIFTED", "error": "ERROR", "not replayed": "NOT REPLAYED"}[test.status]
        lines.append(f"  {word} agent test {test.name} ({test.agent_id})" + (f": {test.reason}" if test.reason else ""))
        lines += ["    " + line for line in (test.difference or "").splitlines()]
    return lines


# -------------------------------------------------------------------------------------------- markdown


def _fence(text: str, language: str = "") -> str:
    longest = max([2, *(len(m) for m in re.findall(r"`+", text))])
    ticks = "`" * (longest + 1)
    return f"{ticks}{language}\n{text}\n{ticks}"


def _code(text: str) -> str:
    """Inline code in Markdown (and in a table cell: a `|` would end the cell)."""
    longest = max([0, *(len(m) for m in re.findall(r"`+", text))])
    ticks = "`" * (longest + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return f"{ticks}{padded.replace('|', '&#124;')}{ticks}"


def _html_code(text: str) -> str:
    return f"<code>{html.escape(text)}</code>"


def _details(summary: str, body: str) -> list[str]:
    return ["<details>", f"<summary>{summary}</summary>", "", body, "", "</details>", ""]


def format_markdown(review: Review) -> str:
    """One pull-request comment: a summary table, then each workspace with a collapsed section per agent."""
    lines = ["## Oscova prompt review", "",
             f"Base {_code(review.base.commit[:12])} ({html.escape(review.base.label)}) → the work tree. "
             f"Rendered offline with fixed inputs: {html.escape(_inputs(), quote=False)}.", "",
             "| change | count |", "|---|---:|", *(f"| {name} | {value} |" for name, value in _summary_rows(review)), ""]
    for workspace in review.workspaces:
        lines += _workspace_markdown(workspace, review.trusted)
    if review.notes:
        lines += ["**Notes**", "", *(f"- {html.escape(n, quote=False)}" for n in review.notes), ""]
    return "\n".join(lines).rstrip() + "\n"


def _workspace_markdown(workspace: WorkspaceReview, trusted: bool) -> list[str]:
    lines = [f"### Workspace {_code(workspace.root)}", ""]
    if workspace.not_loaded and not trusted:
        lines += [f"Not loaded (the workspace's own code; `--trust` imports it): {_not_loaded(workspace)}.", ""]
    changed = workspace.of("changed")
    if changed:
        lines += [f"**Changed** ({len(changed)})", ""]
    for agent in changed:
        via = ", ".join(_html_code(c) for c in agent.causes)
        summary = f"{_html_code(agent.agent_id)}: {html.escape(', '.join(agent.changes))}" + (f" — via {via}" if via else "")
        figures = [html.escape(e, quote=False)] if (e := _economics(agent)) is not None else []
        lines += _details(summary, "\n\n".join([*figures, *(_fence(diff, "diff") for diff in agent.changes.values())]))
    for status, title in (("added", "Added"), ("removed", "Removed")):
        agents = workspace.of(status)  # type: ignore[arg-type]
        if agents:
            lines += [f"**{title}** ({len(agents)})", ""]
        for agent in agents:
            lines += _details(f"{_html_code(agent.agent_id)} ({_html_code(agent.path)})", _fence(agent.request or ""))
    lines += [f"{_plural(workspace.unchanged, 'agent')} unchanged.", ""]
    for findings, title in ((workspace.introduced, "Diagnostics introduced"), (workspace.fixed, "Diagnostics fixed")):
        if findings:
            lines += [f"**{title}** ({len(findings)})", ""]
            lines += [f"- {_MARKS.get(d.severity, '')} {_code(f'{d.path}:{d.line}:{d.character}')} {d.code}: "
                      f"{html.escape(d.message, quote=False)}" for d in findings]
            lines.append("")
    lines += _tests_markdown(workspace.tests)
    return lines


def _tests_markdown(tests: list[TestOutcome]) -> list[str]:
    if not tests:
        return []
    lines = ["**Agent tests** of the agents that changed", "", "| test | agent | result |", "|---|---|---|"]
    lines += [f"| {_code(t.name)} | {_code(t.agent_id)} | {_TEST_MARKS[t.status]} |" for t in tests]
    lines.append("")
    for test in tests:
        if test.difference or test.reason:
            body = "\n\n".join(x for x in (html.escape(test.reason or "", quote=False),
                                           _fence(test.difference, "diff") if test.difference else "") if x)
            lines += _details(f"{_html_code(test.name)}: {'first difference' if test.difference else 'why'}", body)
    return lines


# ---------------------------------------------------------------------------------------------- github


def format_github(review: Review) -> str:
    """Annotations: errors and warnings introduced, agent tests that drifted or could not run, and a notice
    on the definition of each agent whose request changed."""
    lines = []
    for workspace in review.workspaces:
        for d in workspace.introduced:
            lines.append(github_annotation(_LEVELS.get(d.severity, "notice"),
                                           {"file": d.path, "line": d.line, "col": d.character, "title": d.code},
                                           f"{d.code} {d.message} (introduced by this change)"))
        for test in workspace.tests:
            if test.failed:
                what = "drifted" if test.status == "drifted" else "could not run"
                lines.append(github_annotation("error", {"file": test.path, "line": 1,
                                                         "title": f"Agent test {test.name} {what}"},
                                               "\n".join(x for x in (test.reason, test.difference) if x)))
        for agent in workspace.of("changed"):
            lines.append(github_annotation("notice", {"file": agent.path, "line": 1,
                                                      "title": f"The request of {agent.agent_id} changed"},
                                           _what(agent)))
    return "\n".join(lines)


def format_json(review: Review) -> str:
    return json.dumps(review.report().wire(), indent=2, ensure_ascii=False)
