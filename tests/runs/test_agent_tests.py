"""`oscova-lsp test`: recorded runs saved as cases under `.oscova/tests/`, replayed without a model.

Runs are recorded through the real `openai` client against the local server of `tests/support/fake_openai.py`;
every replay must leave that server untouched (no request reaches it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml

from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall

from .test_cli import oscova


def record(workspace: Path, fake: FakeOpenAI, agent: str, text: str, *replies: Reply) -> str:
    """Runs an agent once against the local server; returns the run id."""
    fake.enqueue(*replies)
    result = oscova("run", agent, "--input", text, "--json", cwd=workspace)
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout.splitlines()[0])["runId"])


@pytest.fixture
def cases(workspace: Path, fake_openai: FakeOpenAI) -> Path:
    """Two saved cases: `helper` (a tool call, then the answer) and `greeting` (echo, one answer)."""
    helper = record(workspace, fake_openai, "helper", "When is the launch?",
                    Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "c1")]),
                    Reply(text="The launch is on Tuesday."))
    echo = record(workspace, fake_openai, "echo", "Say hello", Reply(text="hello"))
    saved = oscova("test", "--save", helper, cwd=workspace)
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout.splitlines()[0] == "saved the case helper: .oscova/tests/helper.jsonl"  # then .gitignore lines
    saved = oscova("test", "--save", echo[:6], "--name", "greeting", cwd=workspace)  # the start of a run id will do
    assert saved.returncode == 0, saved.stderr
    fake_openai.reset()
    return workspace


def edit_helper_template(workspace: Path) -> None:
    definition = workspace / "agents" / "helper.agent.yaml"
    text = definition.read_text()
    assert "You help {{ user_name }}." in text
    definition.write_text(text.replace("You help {{ user_name }}.", "You help {{ user_name }} kindly."))


def test_every_saved_case_passes_without_reaching_the_model(cases: Path, fake_openai: FakeOpenAI):
    assert sorted(p.name for p in (cases / ".oscova" / "tests").iterdir()) == ["greeting.jsonl", "helper.jsonl"]
    result = oscova("test", cwd=cases / "agents")  # the workspace is found upwards
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == ["PASS greeting (echo)", "PASS helper (helper)", "2 cases: 2 passed"]
    assert fake_openai.requests == []


def test_a_template_edit_fails_its_case_with_a_diff_and_update_makes_it_pass(cases: Path, fake_openai: FakeOpenAI):
    edit_helper_template(cases)
    result = oscova("test", cwd=cases)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "PASS greeting (echo)"
    assert lines[1] == "FAIL helper (helper)"
    diff = "\n".join(lines[2:-1])
    removed = [line for line in lines if line.startswith("  -") and not line.startswith("  ---")]
    added = [line for line in lines if line.startswith("  +") and not line.startswith("  +++")]
    assert any("You help" in line and "kindly" not in line for line in removed), diff
    assert any("You help" in line and "kindly" in line for line in added), diff
    assert lines[-1] == "2 cases: 1 passed, 1 failed"
    assert "Traceback" not in result.stderr

    recorded = (cases / ".oscova" / "tests" / "helper.jsonl").read_text()
    updated = oscova("test", "--update", cwd=cases)
    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert updated.stdout.splitlines()[:2] == ["PASS greeting (echo)", "UPDATED helper (helper)"]
    after = (cases / ".oscova" / "tests" / "helper.jsonl").read_text()
    assert after != recorded and "kindly" in after and "kindly" not in recorded
    assert "The launch is on Tuesday." in after  # the recorded answer is kept

    again = oscova("test", cwd=cases)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines()[-1] == "2 cases: 2 passed"
    assert fake_openai.requests == []


def test_paths_pick_cases(cases: Path):
    one = oscova("test", ".oscova/tests/greeting.jsonl", cwd=cases)
    assert one.returncode == 0, one.stdout + one.stderr
    assert one.stdout.splitlines() == ["PASS greeting (echo)", "1 case: 1 passed"]
    folder = oscova("test", str(cases / ".oscova" / "tests"), cwd=cases.parent)
    assert folder.stdout.splitlines()[-1] == "2 cases: 2 passed"


def test_json_github_and_junit_reports(cases: Path, tmp_path: Path):
    edit_helper_template(cases)
    as_json = oscova("test", "--format", "json", cwd=cases)
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert (report["passed"], report["failed"], report["error"]) == (1, 1, 0)
    failed = next(c for c in report["cases"] if c["name"] == "helper")
    assert failed["status"] == "failed" and failed["agentId"] == "helper" and "kindly" in failed["difference"]

    github = oscova("test", "--format", "github", cwd=cases)
    assert github.returncode == 1
    errors = [line for line in github.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 1
    match = re.match(r"::error file=([^,]+),line=1,title=([^:]+)::(.*)$", errors[0])
    assert match, errors[0]
    assert match[1] == ".oscova/tests/helper.jsonl" and match[2] == "Agent test helper drifted"
    assert "%0A" in match[3] and "kindly" in match[3] and "\n" not in match[3]

    junit = oscova("test", "--format", "junit", cwd=cases)
    assert junit.returncode == 1
    path = tmp_path / "report.xml"
    path.write_text(junit.stdout)
    xml = JUnitXml.fromfile(str(path))
    suites = list(xml)
    assert len(suites) == 1 and suites[0].tests == 2 and suites[0].failures == 1 and suites[0].errors == 0
    by_name = {case.name: case for case in suites[0]}
    assert set(by_name) == {"helper", "greeting"}
    assert by_name["greeting"].is_passed
    failure = by_name["helper"].result[0]
    assert isinstance(failure, Failure) and "kindly" in (failure.text or "")


def test_a_case_whose_agent_is_gone_is_an_error_not_a_crash(cases: Path):
    (cases / "agents" / "echo.agent.yaml").unlink()
    result = oscova("test", "--format", "junit", cwd=cases)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    path = cases / "report.xml"
    path.write_text(result.stdout)
    suite = next(iter(JUnitXml.fromfile(str(path))))
    greeting = next(case for case in suite if case.name == "greeting")
    error = greeting.result[0]
    assert isinstance(error, Error) and "echo" in (error.message or "")


def test_usage_errors_exit_2_with_a_sentence(workspace: Path, fake_openai: FakeOpenAI, tmp_path: Path):
    nothing = oscova("test", cwd=workspace)
    assert nothing.returncode == 2 and "no agent tests" in nothing.stderr and "--save" in nothing.stderr
    assert oscova("test", "missing.jsonl", cwd=workspace).returncode == 2
    outside = oscova("test", cwd=tmp_path)
    assert outside.returncode == 2 and "no oscova.toml" in outside.stderr
    unknown = oscova("test", "--save", "0000nope", cwd=workspace)
    assert unknown.returncode == 2 and "no run '0000nope'" in unknown.stderr
    fake_openai.enqueue(Reply(status=500))
    failed = oscova("run", "echo", "--input", "x", "--json", cwd=workspace)
    run_id = json.loads(failed.stdout.splitlines()[0])["runId"]
    refused = oscova("test", "--save", run_id, cwd=workspace)
    assert refused.returncode == 2 and "only a completed run can become a case" in refused.stderr
    fake_openai.enqueue(Reply(text="ok"))
    good = record(workspace, fake_openai, "echo", "hi")
    assert oscova("test", "--save", good, "--name", "../escape", cwd=workspace).returncode == 2
    assert oscova("test", "--save", good, "--name", "ok", cwd=workspace).returncode == 0
    taken = oscova("test", "--save", good, "--name", "ok", cwd=workspace)
    assert taken.returncode == 2 and "exists" in taken.stderr
    assert not (workspace.parent / "escape.jsonl").exists()
    for output in (nothing, unknown, refused, taken):
        assert "Traceback" not in output.stderr
