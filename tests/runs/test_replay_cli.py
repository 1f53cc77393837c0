"""`oscova-lsp run AGENT --replay` and `oscova-lsp diff` as subprocesses. The replaying process has a socket
guard (a `sitecustomize` that makes every connection attempt fail), so a replay that touched the network
would fail."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall

from .conftest import CANARY_KEY, KEY_VARIABLE
from .test_cli import cli_env, oscova

GUARD = '''\
import socket


def _refuse(*args, **kwargs):
    raise OSError("oscova test guard: a network connection was attempted")


socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
'''


@pytest.fixture
def offline_env(tmp_path: Path) -> dict[str, str]:
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD)
    path = os.pathsep.join(p for p in (str(guard), os.environ.get("PYTHONPATH", "")) if p)
    return cli_env(PYTHONPATH=path)


def record_run(workspace: Path, fake: FakeOpenAI, question: str = "When is the launch?",
               answer: str = "The launch is on Tuesday.") -> str:
    fake.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "c1")]), Reply(text=answer))
    result = oscova("run", "helper", "--input", question, "--json", cwd=workspace)
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout.splitlines()[0])["runId"])


def test_the_guard_stops_a_real_run(workspace, fake_openai, offline_env):
    fake_openai.enqueue(Reply(text="never sent"))
    result = oscova("run", "helper", "--input", "hi", cwd=workspace, env=offline_env)
    assert result.returncode == 1 and "unreachable" in result.stderr and not fake_openai.requests


def test_replay_by_run_id_matches_offline_and_exits_0(workspace, fake_openai, offline_env):
    run_id = record_run(workspace, fake_openai)
    served = len(fake_openai.requests)
    del offline_env[KEY_VARIABLE]  # a replay needs no key (CI without secrets)
    result = oscova("run", "helper", "--replay", run_id, cwd=workspace, env=offline_env)
    assert result.returncode == 0, result.stderr
    transcript = next((workspace / ".oscova" / "runs").glob(f"*-{run_id}.jsonl"))
    assert result.stdout == "The launch is on Tuesday.\n"
    assert "← read_file: The launch is on Tuesday." in result.stderr
    assert result.stderr.splitlines()[0] == f"replaying .oscova/runs/{transcript.name} offline"
    assert "✓ replay matches the recording" in result.stderr
    assert len(fake_openai.requests) == served and CANARY_KEY not in result.stdout + result.stderr


def test_a_drifted_replay_prints_the_diff_and_exits_1(workspace, fake_openai, offline_env):
    run_id = record_run(workspace, fake_openai)
    definition = workspace / "agents" / "helper.agent.yaml"
    definition.write_text(definition.read_text().replace("You help {{ user_name }}.", "You assist {{ user_name }}."))
    transcript = next((workspace / ".oscova" / "runs").glob(f"*-{run_id}.jsonl"))
    result = oscova("run", "helper", "--replay", str(transcript), cwd=workspace, env=offline_env)
    assert result.returncode == 1
    assert "✗ drifted: model request 1 differs in the instructions" in result.stderr
    lines = result.stderr.splitlines()
    assert "-You help ." in lines and "+You assist ." in lines
    assert "Traceback" not in result.stderr


def test_replay_json_ends_with_the_verdict(workspace, fake_openai, offline_env):
    run_id = record_run(workspace, fake_openai)
    result = oscova("run", "helper", "--replay", run_id, "--json", cwd=workspace, env=offline_env)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["kind"] == "started" and lines[-2]["kind"] == "completed"
    assert lines[-1]["kind"] == "replay" and lines[-1]["matched"] is True and lines[-1]["difference"] is None


def test_replay_usage_errors_exit_2_with_a_sentence(workspace, tmp_path, offline_env):
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"runId": "r1", "seq": 1, "kind": "started"}) + "\n")
    result = oscova("run", "helper", "--replay", str(old), cwd=workspace, env=offline_env)
    assert result.returncode == 2
    assert "old.jsonl was recorded before transcript version 2" in result.stderr
    assert "record the run again" in result.stderr and "Traceback" not in result.stderr
    missing = oscova("run", "helper", "--replay", "nosuchrun", cwd=workspace, env=offline_env)
    assert missing.returncode == 2 and "no transcript at nosuchrun" in missing.stderr
    alone = oscova("run", "helper", "--live-tools", "--input", "hi", cwd=workspace, env=offline_env)
    assert alone.returncode == 2 and "--live-tools goes with --replay" in alone.stderr


def test_diff_of_two_runs(workspace, fake_openai, offline_env):
    first = record_run(workspace, fake_openai)
    second = record_run(workspace, fake_openai, "When is the launch, exactly?", "Tuesday at noon.")
    result = oscova("diff", first, second, cwd=workspace, env=offline_env)
    assert result.returncode == 1, result.stderr
    out = result.stdout.splitlines()
    # The system message is the same, the input differs: the shared leading tokens end after the instructions.
    assert out[0].startswith("The first requests share ≈ ") and out[0].endswith(
        " leading tokens (estimate); the messages after the instructions differ.")
    assert out[2] == "First difference: model request 1 differs in the messages"
    assert "-[user] When is the launch?" in out and "+[user] When is the launch, exactly?" in out
    assert "Answers differ:" in out and "-The launch is on Tuesday." in out and "+Tuesday at noon." in out
    assert "Tool calls differ:" not in out  # the same read_file call and result

    same = oscova("diff", first, first, cwd=workspace, env=offline_env)
    assert same.returncode == 0 and same.stdout == "" and "The runs match" in same.stderr
    unknown = oscova("diff", first, "nosuchrun", cwd=workspace, env=offline_env)
    assert unknown.returncode == 2 and "no transcript at nosuchrun" in unknown.stderr
    assert oscova("diff", first, cwd=workspace, env=offline_env).returncode == 2


def test_replay_diff_and_save_take_the_same_start_of_a_run_id(workspace, fake_openai, offline_env):
    run_id = record_run(workspace, fake_openai)
    other = record_run(workspace, fake_openai, "When is the launch, exactly?", "Tuesday at noon.")
    start = run_id[:6]
    replayed = oscova("run", "--replay", start, cwd=workspace, env=offline_env)
    assert replayed.returncode == 0, replayed.stderr
    assert "✓ replay matches the recording" in replayed.stderr
    compared = oscova("diff", start, other[:6], cwd=workspace, env=offline_env)
    assert compared.returncode == 1, compared.stderr
    saved = oscova("test", "--save", start, cwd=workspace, env=offline_env)
    assert saved.returncode == 0, saved.stderr
    # Too short to name one run: the same sentence from each command.
    (workspace / ".oscova" / "runs" / f"20200101T000000-helper-{run_id[:3]}0000000.jsonl").write_text("")
    for args in (["run", "--replay", run_id[:3]], ["test", "--save", run_id[:3]], ["diff", run_id[:3], other]):
        ambiguous = oscova(*args, cwd=workspace, env=offline_env)
        assert ambiguous.returncode == 2 and f"{run_id[:3]!r} names " in ambiguous.stderr, ambiguous.stderr
        assert "give more of the run id" in ambiguous.stderr
