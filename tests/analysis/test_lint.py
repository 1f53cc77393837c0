"""Inline suppression, `[lint]` settings and the command line's --select/--ignore."""

from __future__ import annotations

from pathlib import Path

from oscova_lsp.analysis.diagnostics import Severity
from oscova_lsp.analysis.engine import Analysis
from oscova_lsp.analysis.lint import LintOptions

from .support import BASE_HOST, make_workspace


def test_yaml_comment_suppresses_one_code_on_its_line(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": (
            "id: a\n"
            "agent_tools: [ghost]  # oscova: ignore[OSC020]\n"
            "tools: [nope]  # oscova: ignore[OSC020]\n"
        ),
    })
    assert ws.codes("a.agent.yaml") == ["OSC031"]  # the other line's code is not the one suppressed


def test_yaml_comment_alone_suppresses_the_next_line(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\n# oscova: ignore[OSC031, OSC020]\ntools: [nope]\nagent_tools: [ghost]\n",
    })
    assert ws.codes("a.agent.yaml") == ["OSC020"]


def test_bare_ignore_suppresses_every_code_on_the_line(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ntools: [nope, read_file, read_file]  # oscova: ignore\n"})
    assert ws.codes("a.agent.yaml") == []


def test_jinja_comment_suppresses_in_template_files(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ninstructions_file: t.j2\n",
        "t.j2": "{{ x }} {# oscova: ignore[OSC101] #}\n{# oscova: ignore[OSC102] #}\n{{ current_time }} {{ y }}\n",
    })
    diags = ws.diagnostics("t.j2")
    assert [(d.code, d.range.start.line) for d in diags] == [("OSC101", 2)]


def test_jinja_comment_suppresses_in_inline_instructions(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": (
            "id: a\ninstructions: |\n"
            "  Hi {{ nobody }} {# oscova: ignore[OSC101] #}\n"
            "  Bye {{ someone }}\n"
        ),
    })
    assert [(d.code, d.range.start.line) for d in ws.diagnostics("a.agent.yaml")] == [("OSC101", 3)]


def test_lint_ignore_and_severity_from_host(tmp_path: Path) -> None:
    host = BASE_HOST + '\n[lint]\nignore = ["OSC031"]\n[lint.severity]\nOSC020 = "error"\n'
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ntools: [nope]\nagent_tools: [ghost]\n"}, host=host)
    diags = ws.diagnostics("a.agent.yaml")
    assert [(d.code, d.severity) for d in diags] == [("OSC020", Severity.ERROR)]


def test_lint_select_keeps_only_selected_prefixes(tmp_path: Path) -> None:
    host = BASE_HOST + '\n[lint]\nselect = ["OSC02"]\n'
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ntools: [nope]\nagent_tools: [ghost]\n"}, host=host)
    assert ws.codes("a.agent.yaml") == ["OSC020"]


def test_editor_or_cli_options_override_host(tmp_path: Path) -> None:
    make_workspace(tmp_path, {"a.agent.yaml": "id: a\ntools: [nope]\nagent_tools: [ghost]\n"})
    analysis = Analysis(str(tmp_path), LintOptions(ignore=frozenset({"OSC020"}), severity={"OSC031": "hint"}))
    analysis.load(jobs=1)
    diags = analysis.diagnostics(str(tmp_path / "a.agent.yaml"))
    assert [(d.code, d.severity) for d in diags] == [("OSC031", Severity.HINT)]
