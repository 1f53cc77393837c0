"""An evaluation goes red when its runs fail: a run that ended `failed` or `cancelled` fails its case unless the
case asserts that status, and an evaluation in which no run completed exits 1 with one sentence naming the cause
(the endpoint is unreachable, the key's variable is unset): a CI job whose secret is missing does not pass.
`oscova-lsp eval` as a subprocess."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

from tests.support.cli_zygote import module_command
from tests.support.fake_openai import FakeOpenAI, Reply

from .conftest import CANARY_KEY, KEY_VARIABLE
from .test_cli import cli_env
from .test_evals import make_ws

NO_ASSERTION = "agent: triage\nrepeat: 2\ncases:\n  - name: greets\n    input: hi\n"


def evaluate(ws: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(module_command("eval", *args), cwd=ws, env=env or cli_env(), capture_output=True, text=True,
                          timeout=120)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_endpoint_fails_the_evaluation_and_says_so(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    ws = make_ws(tmp_path / "ws", fake_openai, {"g.eval.yaml": NO_ASSERTION})
    toml = ws / "oscova.toml"
    down = f"http://127.0.0.1:{closed_port()}/v1"
    toml.write_text(toml.read_text().replace(fake_openai.base_url, down))
    result = evaluate(ws, "--format", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert (report["ok"], report["passed"], report["failed"]) == (False, 0, 1)
    assert result.stderr == (f"oscova-lsp: no run completed: The model endpoint at {down} is unreachable; is it "
                             "running?\n")


def test_an_unset_key_fails_the_evaluation_and_names_the_variable(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    ws = make_ws(tmp_path / "ws", fake_openai, {"g.eval.yaml": NO_ASSERTION})
    env = {k: v for k, v in cli_env().items() if k != KEY_VARIABLE}
    result = evaluate(ws, env=env)
    assert result.returncode == 1
    assert result.stderr == (f"oscova-lsp: no run completed: The environment variable {KEY_VARIABLE} (`api_key_env` "
                             "of [models.default]) is not set; set it to the endpoint's API key\n")
    assert "✗ greets on default: 0/2 runs passed (needs 2 of 2 runs)" in result.stdout
    assert "the run completes (no `status` assertion)" in result.stdout
    assert fake_openai.requests == []


def test_a_failed_run_fails_its_case_even_without_assertions(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    answers = iter([Reply(text="Hello."), Reply(status=503, error_message="overloaded")])
    fake_openai.responder = lambda body: next(answers)
    ws = make_ws(tmp_path / "ws", fake_openai, {"g.eval.yaml": NO_ASSERTION})
    result = evaluate(ws, "--jobs", "1")
    assert result.returncode == 1
    assert "✗ greets on default: 1/2 runs passed (needs 2 of 2 runs)" in result.stdout
    assert "run 2: the run completes (no `status` assertion)\n      the run ended `failed`: The model returned an " \
           "error (HTTP 503): overloaded" in result.stdout
    assert result.stderr == ""  # a run completed: no sentence about none
    assert CANARY_KEY not in result.stdout + result.stderr


def test_a_case_that_asserts_the_failure_passes(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = lambda body: Reply(status=503, error_message="overloaded")
    evaluation = "agent: triage\ncases:\n  - name: down\n    input: hi\n    expect:\n      - status: failed\n"
    ws = make_ws(tmp_path / "ws", fake_openai, {"d.eval.yaml": evaluation})
    result = evaluate(ws, "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["passed"] == 1


def test_the_pass_rate_is_said_in_runs(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    answers = iter([Reply(text="eu-west"), Reply(text="no"), Reply(text="no")])
    fake_openai.responder = lambda body: next(answers)
    evaluation = ("agent: triage\nrepeat: 3\npass_rate: 0.66\ncases:\n  - name: c\n    input: hi\n    expect:\n"
                  "      - contains: eu-west\n")
    ws = make_ws(tmp_path / "ws", fake_openai, {"c.eval.yaml": evaluation})
    result = evaluate(ws, "--jobs", "1")
    assert result.returncode == 1
    assert "✗ c on default: 1/3 runs passed (needs 2 of 3 runs)" in result.stdout


def test_a_cut_off_answer_fails_its_case_unless_the_case_asserts_the_status(tmp_path: Path,
                                                                           fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = lambda body: Reply(text="The launch is", finish_reason="length")
    evaluation = ("agent: triage\ncases:\n  - name: cut\n    input: hi\n    expect:\n      - contains: launch\n"
                  "  - name: asserted\n    input: hi\n    expect:\n      - status: completed\n")
    ws = make_ws(tmp_path / "ws", fake_openai, {"c.eval.yaml": evaluation})
    result = evaluate(ws, "--jobs", "1")
    assert result.returncode == 1
    assert ("run 1: the run completes (no `status` assertion)\n      its answer is incomplete: The answer of `triage` "
            "was cut off: it reached its token limit (no `max_tokens` is set: the endpoint's own limit, or its "
            "context was full)") in result.stdout
    assert "✗ asserted" not in result.stdout  # a case that asserts the status decides for itself
    results = json.loads(next((ws / ".oscova" / "evals").glob("*/results.json")).read_text())
    assert {run["case"]: run["incomplete"] is not None for run in results["runs"]} == {"cut": True, "asserted": True}
