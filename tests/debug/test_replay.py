"""Replays and forks under the debugger: a replay sends nothing; a fork from model call N sends nothing before
call N and goes live from it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.dap_client import DapClient
from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall

from .conftest import client_env

LAUNCH = {"agent": "helper", "input": "When is the launch?"}


def _record(workspace: Path, fake_openai: FakeOpenAI) -> str:
    """A recorded run of two model calls (a tool call, then the answer); its run id."""
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "r1")]),
                        Reply(text="On Tuesday."))
    client = DapClient(workspace, client_env())
    try:
        client.start_session(LAUNCH)
        client.wait_event("terminated")
    finally:
        client.close()
    (transcript,) = (workspace / ".oscova" / "runs").glob("*-helper-*.jsonl")
    fake_openai.reset()
    return json.loads(transcript.read_text().splitlines()[0])["runId"]


def test_a_replay_stops_at_its_steps_and_sends_nothing(workspace: Path, fake_openai: FakeOpenAI, dap: DapClient):
    run_id = _record(workspace, fake_openai)
    dap.start_session({"replay": run_id}, function_breakpoints=["model"])
    first = dap.stopped(1)
    assert first["frames"][0] == "model call 1"
    dap.request("continue", {"threadId": 1})
    second = dap.stopped(2)
    assert second["scopes"]["Last response"]["messages"][0]["toolCalls"][0]["name"] == "read_file"
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert fake_openai.requests == []
    assert dap.output("stdout") == "On Tuesday."
    assert dap.events("exited")[0]["body"] == {"exitCode": 0}


def test_a_fork_replays_the_calls_before_n_and_goes_live_from_n(workspace: Path, fake_openai: FakeOpenAI,
                                                                dap: DapClient):
    run_id = _record(workspace, fake_openai)
    fake_openai.enqueue(Reply(text="Tuesday, live."))
    dap.start_session({"replay": run_id, "liveFrom": 2, "input": "When is the launch?"},
                      function_breakpoints=["model", "tool"])
    assert dap.stopped(1)["frames"][0] == "model call 1"
    dap.request("continue", {"threadId": 1})
    assert dap.stopped(2)["frames"][0] == "tool call read_file (r1)"
    dap.request("continue", {"threadId": 1})
    stop = dap.stopped(3)
    assert stop["frames"][0] == "model call 2"
    assert fake_openai.requests == []  # nothing before call 2
    shown = stop["scopes"]["Request"]
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert [r.body for r in fake_openai.requests] == [shown]  # call 2 is live, as shown
    assert "The launch is on Tuesday." in fake_openai.requests[0].messages[-1]["content"]
    assert dap.output("stdout") == "Tuesday, live."
    forked = [p for p in (workspace / ".oscova" / "runs").glob("*-helper-*.jsonl")
              if json.loads(p.read_text().splitlines()[0])["runId"] != run_id]
    assert len(forked) == 1
    models = [json.loads(line) for line in forked[0].read_text().splitlines()
              if json.loads(line).get("record") == "model"]
    assert [m["response"]["text"] for m in models] == ["", "Tuesday, live."]


def test_a_fork_of_a_run_recorded_before_an_edit_says_the_calls_before_live_from_must_match(
        workspace: Path, fake_openai: FakeOpenAI, dap: DapClient):
    run_id = _record(workspace, fake_openai)
    helper = workspace / "agents" / "helper.agent.yaml"
    helper.write_text(helper.read_text().replace("You help", "You kindly help"))
    dap.start_session({"replay": run_id, "liveFrom": 2, "input": "When is the launch?"})
    dap.wait_event("terminated")
    assert fake_openai.requests == []  # it stopped at call 1, replayed: nothing reached the endpoint
    failed = dap.output("important")
    assert "model request 1 differs in the instructions" in failed, failed
    assert ("a fork replays the model calls before liveFrom (2) from the recording, so they must match it" in failed
            ), failed
