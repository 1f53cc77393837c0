"""`oscova-lsp eval` as a subprocess against the local OpenAI-compatible server, with scripted answers (the
judge's too): every assertion kind passing and failing, the three `tools` modes over a parallel round, pass
rates over repeats, the model matrix, `--rescore` without HTTP, Ctrl-C, a failing endpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_zygote import module_command
from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall

from .conftest import CANARY_KEY, host_toml
from .test_cli import cli_env

TRIAGE = """\
id: triage
instructions: You help the {{ team }} team.
tools: [current_datetime, read_file, write_file]
workspaces: [data]
"""

JUDGE_OPENING = "You grade one answer of an AI agent"
ASSERTION_KINDS = ["status", "contains", "not_contains", "equals", "regex", "json_schema", "tools", "tool_called",
                   "no_tool", "judge", "max_tokens", "max_model_calls", "max_duration_ms", "instructions_contain"]


@pytest.fixture
def second_server() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def make_ws(root: Path, fake: FakeOpenAI, evals: dict[str, str], *, local: str | None = None) -> Path:
    extra = '\n[variables]\nteam = "Platform"\n'
    if local is not None:
        extra += f'\n[models.local]\nmodel = "local-model"\nbase_url = "{local}"\n'
    (root / "agents").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "data" / "notes.txt").write_text("Region eu-west is down.\n")
    (root / "oscova.toml").write_text(host_toml(fake.base_url, extra=extra))
    (root / "agents" / "triage.agent.yaml").write_text(TRIAGE)
    for name, text in evals.items():
        (root / name).write_text(textwrap.dedent(text))
    return root


def oscova_eval(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(module_command("eval", *args), cwd=cwd, env=cli_env(),
                          capture_output=True, text=True, timeout=120)


def as_json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout)


def user_input(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def has_tool_results(body: dict[str, Any]) -> bool:
    return any(m["role"] == "tool" for m in body["messages"])


def judge_reply(body: dict[str, Any]) -> Reply:
    prompt = body["messages"][-1]["content"]
    answer = prompt.split("Agent's answer:\n", 1)[1]
    if "eu-west" in answer:
        return Reply(text='{"verdict": "pass", "reason": "It names eu-west."}')
    return Reply(text='{"verdict": "fail", "reason": "It names no region."}')


def scripted(body: dict[str, Any]) -> Reply:
    """The judge, or the agent: `good` reads the notes and the time in one parallel round, then answers JSON;
    `bad` reads the notes only, then answers without a region."""
    if body["messages"][-1]["content"].startswith(JUDGE_OPENING):
        return judge_reply(body)
    good = user_input(body) == "good"
    if not has_tool_results(body):
        calls = [ToolCall("read_file", {"path": "data/notes.txt"}, "c1")]
        return Reply(tool_calls=calls + [ToolCall("current_datetime", {}, "c2")] if good else calls)
    return Reply(text='{"region": "eu-west"}' if good else "nothing here")


EVERY_KIND = """\
agent: triage
cases:
  - name: {name}
    input: {input}
    variables: {{ team: payments }}
    expect:
      - status: {status}
      - contains: "eu-west"
      - not_contains: "nothing"
      - equals: '{{"region": "eu-west"}}'
      - regex: "eu-(west|east)"
      - json_schema: {{ type: object, required: [region] }}
      - tools: {{ mode: exact, calls: [read_file, current_datetime] }}
      - tools: {{ mode: in_order, calls: [read_file, current_datetime] }}
      - tools: {{ mode: any_order, calls: [current_datetime, read_file] }}
      - tool_called: {{ name: read_file, arguments: {{ path: data/notes.txt }} }}
      - no_tool: [{no_tool}]
      - judge: "Names the affected region."
      - max_tokens: {max_tokens}
      - max_model_calls: {max_calls}
      - max_duration_ms: {max_ms}
      - instructions_contain: "payments team"
"""


def test_every_assertion_passes_on_a_good_run_and_fails_on_a_bad_one(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = scripted
    good = EVERY_KIND.format(name="good-run", input="good", status="completed", no_tool="write_file",
                             max_tokens=36, max_calls=2, max_ms=60000)
    bad = EVERY_KIND.format(name="bad-run", input="bad", status="cancelled", no_tool="read_file",
                            max_tokens=35, max_calls=1, max_ms=0).replace(
        "instructions_contain: \"payments team\"", "instructions_contain: \"Platform team\"").replace(
        "path: data/notes.txt", "path: data/other.txt")
    ws = make_ws(tmp_path / "ws", fake_openai, {"good.eval.yaml": good, "bad.eval.yaml": bad})
    result = oscova_eval("--format", "json", cwd=ws)
    report = as_json(result)
    assert result.returncode == 1
    cases = {c["name"]: c for e in report["evals"] for c in e["cases"]}
    assert cases["good-run"]["ok"] and cases["good-run"]["failures"] == [], cases["good-run"]["failures"]
    failed = [f["assertion"].split(":")[0] for f in cases["bad-run"]["failures"]]
    assert failed == [k for k in ASSERTION_KINDS for _ in range(3 if k == "tools" else 1)]
    messages = {f["assertion"].split(":")[0]: f["message"] for f in cases["bad-run"]["failures"]}
    assert messages["judge"] == "run 1: the judge says it does not meet the rubric: It names no region."
    assert messages["max_model_calls"] == "run 1: expected at most 1 model calls; the run used 2"
    assert report["ok"] is False and report["passed"] == 1 and report["failed"] == 1
    assert cases["good-run"]["tokens"] == 36 and cases["good-run"]["runs"] == 1
    agent_requests = [r for r in fake_openai.requests if not r.messages[-1]["content"].startswith(JUDGE_OPENING)]
    assert all("You help the payments team." in r.messages[0]["content"] for r in agent_requests)


def test_the_tools_modes_show_both_sequences(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = scripted
    evaluation = """\
        agent: triage
        cases:
          - name: order
            input: good
            expect:
              - tools: { mode: exact, calls: [read_file] }
              - tools: { mode: in_order, calls: [current_datetime, read_file] }
              - tools: { mode: in_order, calls: [current_datetime] }
              - tools: { mode: any_order, calls: [read_file, read_file] }
        """
    ws = make_ws(tmp_path / "ws", fake_openai, {"t.eval.yaml": evaluation})
    result = oscova_eval(cwd=ws)
    assert result.returncode == 1, result.stderr
    assert "run 1: tools: {\"mode\": \"exact\", \"calls\": [\"read_file\"]}" in result.stdout
    assert "expected: read_file\n        actual:   read_file → current_datetime" in result.stdout
    assert "expected: current_datetime → read_file\n        actual:   read_file → current_datetime" in result.stdout
    assert "expected: read_file → read_file\n" in result.stdout
    assert "[\"current_datetime\"]}" not in result.stdout  # in_order with a call between: passes
    assert "0 of 1 case × model cells met their pass rate" in result.stdout


def test_a_drifted_output_carries_what_was_expected_and_what_came_for_a_diff_view(tmp_path: Path,
                                                                                  fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = scripted
    evaluation = """\
        agent: triage
        cases:
          - name: drift
            input: good
            expect:
              - equals: '{"region": "eu-east"}'
              - contains: eu-east
              - tools: { mode: exact, calls: [read_file] }
              - tool_called: { name: read_file, arguments: { path: data/other.txt } }
              - regex: "eu-east"
              - status: completed
        """
    ws = make_ws(tmp_path / "ws", fake_openai, {"d.eval.yaml": evaluation})
    result = oscova_eval("--format", "json", cwd=ws)
    assert result.returncode == 1, result.stderr
    failures = {f["assertion"].split(":")[0]: f for f in as_json(result)["evals"][0]["cases"][0]["failures"]}
    assert set(failures) == {"equals", "contains", "tools", "tool_called", "regex"}
    answer = '{"region": "eu-west"}'
    assert (failures["equals"]["expected"], failures["equals"]["actual"]) == ('{"region": "eu-east"}', answer)
    assert (failures["contains"]["expected"], failures["contains"]["actual"]) == ("eu-east", answer)
    assert (failures["tools"]["expected"], failures["tools"]["actual"]) == ("read_file", "read_file\ncurrent_datetime")
    assert failures["tool_called"]["expected"] == 'read_file {"path": "data/other.txt"}'
    assert failures["tool_called"]["actual"] == 'read_file {"path": "data/notes.txt"}'
    assert set(failures["regex"]) == {"assertion", "message"}  # no second text to set beside the answer
    assert failures["equals"]["message"].startswith("run 1: expected the answer")


def test_a_huge_drifted_answer_is_cut_in_its_diff_side() -> None:
    from oscova_lsp.runs.grading import MAX_SIDE_CHARS, RunFacts, sides
    from oscova_runtime.evaluation import Expectation

    facts = RunFacts("c", "default", 1, text="x" * (3 * MAX_SIDE_CHARS))
    expected, actual = sides(Expectation(equals="y"), facts) or ("", "")
    assert expected == "y" and len(actual) < MAX_SIDE_CHARS + 100
    assert actual.endswith(f"… cut: {3 * MAX_SIDE_CHARS} characters in all")
    assert sides(Expectation(max_tokens=1), facts) is None


FLAKY = """\
agent: triage
repeat: 4
pass_rate: {rate}
cases:
  - name: flaky
    input: hello
    expect:
      - contains: eu-west
"""


@pytest.mark.parametrize(("rate", "code"), [(0.5, 0), (0.75, 1)])
def test_a_flaky_answer_gives_exactly_its_pass_rate(tmp_path: Path, fake_openai: FakeOpenAI, rate: float,
                                                    code: int) -> None:
    answers = iter(["eu-west is down", "no idea"] * 2)
    fake_openai.responder = lambda body: Reply(text=next(answers))
    ws = make_ws(tmp_path / "ws", fake_openai, {"f.eval.yaml": FLAKY.format(rate=rate)})
    result = oscova_eval("--format", "json", "--jobs", "1", cwd=ws)
    assert result.returncode == code, result.stdout + result.stderr
    [case] = as_json(result)["evals"][0]["cases"]
    assert (case["runs"], case["passed"], case["passRate"], case["ok"]) == (4, 2, 0.5, code == 0)
    assert [f["message"].split(":")[0] for f in case["failures"]] == ["run 2", "run 4"]


def test_the_model_matrix_calls_each_endpoint(tmp_path: Path, fake_openai: FakeOpenAI,
                                              second_server: FakeOpenAI) -> None:
    fake_openai.responder = lambda body: Reply(text="eu-west, hosted")
    second_server.responder = lambda body: Reply(text="somewhere, local")
    evaluation = "agent: triage\nmodels: [default, local]\nrepeat: 2\ncases:\n  - name: m\n    input: hi\n" \
                 "    expect:\n      - contains: eu-west\n"
    ws = make_ws(tmp_path / "ws", fake_openai, {"m.eval.yaml": evaluation}, local=second_server.base_url)
    result = oscova_eval("--format", "json", cwd=ws)
    assert result.returncode == 1
    cells = {c["model"]: c for c in as_json(result)["evals"][0]["cases"]}
    assert (cells["default"]["passed"], cells["local"]["passed"]) == (2, 0)
    assert len(fake_openai.requests) == 2 and len(second_server.requests) == 2
    assert {r.body["model"] for r in second_server.requests} == {"local-model"}
    text = oscova_eval("--model", "local", "--repeat", "1", cwd=ws)
    assert "case  local" in text.stdout and "default" not in text.stdout.split("\n")[1]
    assert len(second_server.requests) == 3 and len(fake_openai.requests) == 2


def test_rescore_grades_the_recorded_runs_again_without_a_request(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = scripted
    evaluation = "agent: triage\ncases:\n  - name: r\n    input: good\n    expect:\n      - contains: eu-west\n" \
                 "      - judge: Names the affected region.\n"
    ws = make_ws(tmp_path / "ws", fake_openai, {"r.eval.yaml": evaluation})
    assert oscova_eval(cwd=ws).returncode == 0
    [folder] = list((ws / ".oscova" / "evals").iterdir())
    assert len(list(folder.glob("*-triage-*.jsonl"))) == 1 and (folder / "results.json").is_file()
    recorded = json.loads((folder / "results.json").read_text())["runs"][0]
    assert recorded["judged"]["Names the affected region."]["prompt"].startswith(JUDGE_OPENING)
    sent = len(fake_openai.requests)
    (ws / "r.eval.yaml").write_text(evaluation.replace("eu-west", "eu-east") + "      - judge: Is polite.\n")
    result = oscova_eval("--rescore", str(folder), "--format", "json", cwd=ws)
    assert len(fake_openai.requests) == sent  # no model call, the judge's included
    assert result.returncode == 1
    failures = [f["message"] for f in as_json(result)["evals"][0]["cases"][0]["failures"]]
    assert failures == ['run 1: expected the answer to contain "eu-east"; the answer was "{\\"region\\": \\"eu-west\\"}"',
                        "run 1: this rubric was not graded in the recorded run: a `judge` assertion needs a live run "
                        "(`oscova-lsp eval`)"]
    assert not list((ws / ".oscova" / "evals").glob("*/results.json"))[1:]  # rescoring records nothing new
    page = oscova_eval("--rescore", str(folder), "--format", "html", cwd=ws).stdout  # the CI artifact, no request
    assert "&quot;record&quot;: &quot;header&quot;" in page and len(fake_openai.requests) == sent


def test_a_failing_endpoint_is_a_failed_run_with_its_sentence(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = lambda body: Reply(status=503, error_message="overloaded")
    evaluation = "agent: triage\ncases:\n  - name: down\n    input: hi\n    expect:\n      - status: completed\n"
    ws = make_ws(tmp_path / "ws", fake_openai, {"d.eval.yaml": evaluation})
    result = oscova_eval(cwd=ws)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "expected the run to end `completed`; it ended `failed`: " in result.stdout
    assert "503" in result.stdout and "overloaded" in result.stdout
    assert CANARY_KEY not in result.stdout + result.stderr


def test_ctrl_c_cancels_and_reports_what_finished(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    replies = iter([Reply(text="eu-west")])
    fake_openai.responder = lambda body: next(replies, Reply(text="slow", hang=True))
    evaluation = "agent: triage\nrepeat: 3\ncases:\n  - name: c\n    input: hi\n    expect:\n      - contains: eu-west\n"
    ws = make_ws(tmp_path / "ws", fake_openai, {"c.eval.yaml": evaluation})
    process = subprocess.Popen([sys.executable, "-m", "oscova_lsp", "eval", "--jobs", "1"],
                               cwd=ws, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    fake_openai.wait_for_requests(2, timeout=30)  # the first run answered, the second hangs
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 1 and "Traceback" not in err, err
    assert "✗ c on default: 1/3 runs passed (needs 3 of 3 runs); 1 of 3 ran" in out
    assert out.rstrip().splitlines()[-1].startswith("cancelled: 0 of 1 case × model cells met their pass rate")
    results = json.loads(next((ws / ".oscova" / "evals").glob("*/results.json")).read_text())
    assert [(r["repeat"], r["status"], r["text"]) for r in results["runs"]] == [(1, "completed", "eu-west")]
    assert fake_openai.requests[1].closed_early  # the hanging call was ended, not left open


def test_usage_errors_exit_2_with_a_sentence(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    ws = make_ws(tmp_path / "ws", fake_openai, {})
    result = oscova_eval(cwd=ws)
    assert result.returncode == 2 and result.stderr.startswith("oscova-lsp: no evaluation files (*.eval.yaml) under")
    (ws / "x.eval.yaml").write_text("agent: triag\ncases:\n  - name: a\n    input: hi\n")
    result = oscova_eval(cwd=ws)
    assert result.returncode == 2 and "x.eval.yaml cannot be evaluated until its errors are fixed" in result.stderr
    assert "OSC050 no agent has the id `triag`" in result.stderr
    (ws / "x.eval.yaml").write_text("agent: triage\ncases:\n  - name: a\n    input: hi\n")
    result = oscova_eval("--case", "nope", cwd=ws)
    assert result.returncode == 2 and "no case named 'nope'" in result.stderr
    assert oscova_eval("--repeat", "0", cwd=ws).returncode == 2
    assert fake_openai.requests == []


def test_an_evals_folder_linked_out_of_the_workspace_gets_nothing(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = lambda body: Reply(text="eu-west")
    ws = make_ws(tmp_path / "ws", fake_openai, {"x.eval.yaml": "agent: triage\ncases:\n  - name: a\n    input: hi\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / ".oscova").mkdir()
    os.symlink(outside, ws / ".oscova" / "evals")
    result = oscova_eval(cwd=ws)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "the evaluation cannot be recorded in" in result.stderr and "nothing was run" in result.stderr
    assert list(outside.iterdir()) == [] and fake_openai.requests == []


def test_the_evaluations_page_quotes_the_judge_prompt_as_sent() -> None:
    from oscova_lsp.runs.grading import JUDGE_PROMPT

    page = (Path(__file__).resolve().parents[2] / "docs" / "evaluations.md").read_text(encoding="utf-8")
    quoted = page.split("You grade one answer", 1)[1].split("```")[0]
    assert ("You grade one answer" + quoted).strip() == JUDGE_PROMPT.strip()


REPORTED = """\
agent: triage
models: [default]
repeat: 2
cases:
  - name: passes
    input: good
    expect:
      - contains: eu-west
  - name: fails
    input: bad
    expect:
      - contains: eu-west
"""


def test_junit_github_and_html_reports(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    from junitparser import Failure, JUnitXml

    fake_openai.responder = lambda body: Reply(text="eu-west is down" if user_input(body) == "good"
                                               else "<script>alert(1)</script> \x1b]0;title\x07")
    ws = make_ws(tmp_path / "ws", fake_openai, {"r.eval.yaml": REPORTED})
    junit = oscova_eval("--format", "junit", cwd=ws)
    assert junit.returncode == 1, junit.stderr
    (tmp_path / "eval.xml").write_text(junit.stdout)
    [suite] = list(JUnitXml.fromfile(str(tmp_path / "eval.xml")))
    cases = {case.name: case for case in suite}
    assert set(cases) == {"passes [default]", "fails [default]"} and suite.tests == 2 and suite.failures == 1
    assert cases["passes [default]"].is_passed
    [failure] = [r for r in cases["fails [default]"].result if isinstance(r, Failure)]
    assert failure.message == "0/2 runs passed, needs 2 of 2 runs"
    assert "run 1: contains: \"eu-west\"" in failure.text and "\\u001b" in failure.text and "\x1b" not in junit.stdout

    github = oscova_eval("--format", "github", cwd=ws)
    [annotation] = [line for line in github.stdout.splitlines() if line.startswith("::error")]
    assert annotation.startswith("::error file=r.eval.yaml,line=9,title=Evaluation fails on default%3A 0/2 runs")
    assert "%0A" in annotation and "\x1b" not in github.stdout

    page = oscova_eval("--format", "html", cwd=ws)
    assert page.returncode == 1 and page.stdout.startswith("<!DOCTYPE html>")
    assert "<script" not in page.stdout and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.stdout
    assert "hsl(120,65%,82%)" in page.stdout and "hsl(0,65%,82%)" in page.stdout  # green and red cells
    assert "src=" not in page.stdout and "http://" not in page.stdout.split("<h2>Runs</h2>")[0]
    assert page.stdout.count("<details>") == 4 and '\\"record\\": \\"header\\"' not in page.stdout
    assert "&quot;record&quot;: &quot;header&quot;" in page.stdout  # each run's transcript, escaped


def test_the_worked_example_passes_against_a_local_model_that_answers_in_bullets(tmp_path: Path,
                                                                                 fake_openai: FakeOpenAI) -> None:
    import shutil

    examples = Path(__file__).resolve().parents[2] / "examples"
    ws = tmp_path / "examples"
    shutil.copytree(examples, ws, ignore=shutil.ignore_patterns("broken", ".oscova"))
    host = (ws / "oscova.toml").read_text()
    (ws / "oscova.toml").write_text(host.replace('base_url = "http://127.0.0.1:11434/v1"',
                                                 f'base_url = "{fake_openai.base_url}"'))
    answers = iter(["- The deploy failed twice.\n- Then it passed.", "The deploy passed.",
                    "– The release failed twice, then went out."])  # a paraphrase, with an en-dash bullet
    fake_openai.responder = lambda body: Reply(text=next(answers))
    result = oscova_eval("evals/summarizer.eval.yaml", "--jobs", "1", "--format", "json", cwd=ws)
    assert result.returncode == 0, result.stdout + result.stderr
    [case] = as_json(result)["evals"][0]["cases"]
    assert (case["name"], case["model"], case["runs"], case["passed"]) == ("deploy-timeline", "local", 3, 2)
    assert {r.body["model"] for r in fake_openai.requests} == {"llama3.1:8b"}
