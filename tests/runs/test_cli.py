"""`oscova-lsp run` and `oscova-lsp preview` as subprocesses, against the local server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli_zygote import module_command
from tests.support.fake_openai import Reply, ToolCall

from .conftest import CANARY_KEY, KEY_VARIABLE, host_toml, make_workspace


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != KEY_VARIABLE}
    env.update({KEY_VARIABLE: CANARY_KEY, "NO_COLOR": "1", **extra})
    return env


def oscova(*args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None,
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(module_command(*args), cwd=cwd, env=env or cli_env(),
                          input=stdin if stdin is not None else "", capture_output=True, text=True, timeout=60)


def test_run_prints_the_streamed_answer_and_exits_0(workspace, fake_openai):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "c1")]),
                        Reply(text="The launch is on Tuesday.", chunk_size=3))
    result = oscova("run", "helper", "--input", "When is the launch?", cwd=workspace / "agents")  # root found upward
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The launch is on Tuesday.\n"
    assert "→ read_file(path=\"data/notes.txt\")" in result.stderr
    assert "← read_file: The launch is on Tuesday." in result.stderr
    assert "✓ completed" in result.stderr
    assert CANARY_KEY not in result.stdout + result.stderr
    assert fake_openai.requests[0].messages[-1] == {"role": "user", "content": "When is the launch?"}
    assert len(list((workspace / ".oscova" / "runs").glob("*-helper-*.jsonl"))) == 1


def test_run_reads_the_input_from_stdin(workspace, fake_openai, tmp_path):
    fake_openai.enqueue(Reply(text="Piped."))
    result = oscova("run", "echo", "--root", str(workspace), cwd=tmp_path, stdin="from a pipe\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Piped.\n"
    assert fake_openai.requests[0].messages[-1]["content"] == "from a pipe"  # the pipe's line end is not the input's


def test_run_json_emits_one_event_per_line(workspace, fake_openai):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("current_datetime", {}, "t1")]), Reply(text="Now.", chunk_size=2))
    result = oscova("run", "helper", "--input", "time?", "--json", cwd=workspace)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "started" and kinds[-1] == "completed"
    assert {"message", "toolCall", "toolResult", "delta"} <= set(kinds)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert len({e["runId"] for e in events}) == 1
    assert "".join(e["text"] for e in events if e["kind"] == "delta") == "Now."


def test_a_failed_run_exits_1_with_a_sentence_and_no_traceback(workspace, fake_openai):
    env = cli_env()
    del env[KEY_VARIABLE]
    result = oscova("run", "helper", "--input", "hi", cwd=workspace, env=env)
    assert result.returncode == 1
    assert result.stdout == ""
    assert f"The environment variable {KEY_VARIABLE}" in result.stderr and "is not set" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_model_error_exits_1_without_the_key(workspace, fake_openai):
    fake_openai.enqueue(Reply(status=500, error_message=f"upstream broke for {CANARY_KEY}"))
    result = oscova("run", "helper", "--input", "hi", "--json", cwd=workspace)
    assert result.returncode == 1
    final = json.loads(result.stdout.splitlines()[-1])
    assert final["kind"] == "failed" and "HTTP 500" in final["error"] and "upstream broke for ***" in final["error"]
    assert CANARY_KEY not in result.stdout + result.stderr and "Traceback" not in result.stderr


def test_an_unknown_agent_is_a_usage_error_and_leaves_no_transcript(workspace):
    for json_lines in ([], ["--json"]):
        result = oscova("run", "nobody", "--input", "hi", *json_lines, cwd=workspace)
        assert result.returncode == 2
        assert result.stderr == ("oscova-lsp: No agent definition has the id 'nobody' (known agents: echo, helper, "
                                 "lead)\n")
        assert result.stdout == ""
    assert not (workspace / ".oscova" / "runs").exists()  # a run that never started is not recorded


@pytest.mark.parametrize("args", [["run"], ["run", "helper", "--input", "  "], ["run", "helper", "--root", "/nonexistent"],
                                  ["preview"]])
def test_usage_errors_exit_2(workspace, args):
    assert oscova(*args, cwd=workspace).returncode == 2


def test_ctrl_c_cancels_the_run_cleanly(workspace, fake_openai):
    fake_openai.enqueue(Reply(text="first words and then silence", chunk_size=6, hang=True))
    process = subprocess.Popen([sys.executable, "-m", "oscova_lsp", "run", "helper", "--input", "talk"],
                               cwd=workspace, env=cli_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        first = process.stdout.read(6)
        assert first == "first "
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)  # a hang guard (how soon: responsiveness_bench `cancel`)
    finally:
        process.kill()
    assert process.returncode == 1
    assert "cancelled" in stderr and "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    request = fake_openai.requests[0]
    assert request.finished.wait(30) and request.closed_early
    saved = [json.loads(line) for line in next((workspace / ".oscova" / "runs").glob("*.jsonl")).read_text().splitlines()]
    assert saved[-1]["kind"] == "cancelled"


def test_preview_prints_instructions_messages_tools_and_providers(workspace, fake_openai):
    result = oscova("preview", "helper", "--input", "Plan it", cwd=workspace)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for heading in ("Instructions (helper)", "Messages", "Tools", "Providers"):
        assert f"── {heading} " in out
    assert "[user · External] Plan it" in out
    assert "write_file (approval required)" in out
    assert " 1. environment (EnvironmentContextProvider): instructions" in out
    assert " 2. tools (AgentToolProvider): tools current_datetime, read_file, write_file" in out
    assert fake_openai.requests == []


def test_preview_json_and_a_failure(workspace, tmp_path, fake_openai):
    result = oscova("preview", "lead", "--json", "--root", str(workspace), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [t["name"] for t in json.loads(result.stdout)["tools"]] == ["echo"]
    broken = make_workspace(tmp_path / "broken", fake_openai.base_url, host=host_toml(fake_openai.base_url),
                            agents={"bad": "id: bad\ninstructions_file: missing.j2\n"})
    result = oscova("preview", "bad", cwd=broken)
    assert result.returncode == 1
    assert "OSC040" in result.stderr and "Traceback" not in result.stderr
