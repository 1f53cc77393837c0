"""`oscova-lsp debug` on a live run: breakpoints stop where they should and show what the next request sends."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.dap_client import DapClient
from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall

from .conftest import client_env, make_workspace

LAUNCH = {"agent": "helper", "input": "When is the launch?"}


def test_a_model_stop_shows_exactly_the_request_the_endpoint_then_receives(dap: DapClient, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(text="On Tuesday.", chunk_size=3))
    launched = dap.start_session(LAUNCH, function_breakpoints=["model"])
    assert launched["success"], launched
    stop = dap.stopped(1)
    assert stop["event"]["reason"] == "function breakpoint"
    assert stop["event"]["threadId"] == 1 and stop["event"]["hitBreakpointIds"]
    assert stop["frames"] == ["model call 1", "agent helper"]
    assert stop["stack"][1]["source"]["path"].endswith("helper.agent.yaml")
    assert dap.request("threads")["body"]["threads"] == [{"id": 1, "name": "run helper"}]
    assert fake_openai.requests == []  # stopped before the request
    shown = stop["scopes"]["Request"]
    assert stop["scopes"]["Context"]["instructions"] == shown["messages"][0]["content"]
    assert "You help" in shown["messages"][0]["content"]
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert [r.body for r in fake_openai.requests] == [shown]
    assert dap.output("stdout") == "On Tuesday."
    assert dap.events("exited")[0]["body"] == {"exitCode": 0}


def test_tool_breakpoints_stop_before_the_call_with_its_arguments(dap: DapClient, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("current_datetime", {}, "t1")]),
                        Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "r1")]),
                        Reply(text="Tuesday."))
    dap.start_session(LAUNCH, function_breakpoints=["tool:read_file"])
    stop = dap.stopped(1)
    assert stop["frames"] == ["tool call read_file (r1)", "agent helper"]
    assert stop["scopes"]["Arguments"] == {"path": "data/notes.txt"}
    assert stop["scopes"]["Tool call"]["name"] == "read_file"
    assert len(fake_openai.requests) == 2  # the model asked for it; the tool has not run
    assert len(dap.events("stopped")) == 1  # current_datetime did not stop: the breakpoint names read_file
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert "The launch is on Tuesday." in fake_openai.requests[2].messages[-1]["content"]


def test_tool_stops_at_every_tool_call_and_model_at_every_request(dap: DapClient, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("current_datetime", {}, "t1")]), Reply(text="Now."))
    dap.start_session(LAUNCH, function_breakpoints=["tool", "model"])
    names = []
    for count in (1, 2, 3):
        names.append(dap.stopped(count)["frames"][0])
        dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert names == ["model call 1", "tool call current_datetime (t1)", "model call 2"]


def test_a_provider_breakpoint_stops_after_its_contribution(dap: DapClient, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(text="Hi."))
    dap.start_session(LAUNCH, function_breakpoints=["provider:tools"])
    stop = dap.stopped(1)
    assert stop["frames"][0] == "provider 2: tools"
    assert stop["scopes"]["Provider"]["type"] == "tools"
    assert stop["scopes"]["Context"]["tools"] == ["current_datetime", "read_file"]  # write_file needs approval
    assert "## Environment" in stop["scopes"]["Context"]["instructions"]  # the environment provider came first
    assert stop["scopes"]["Context"]["messages"][-1]["text"] == "When is the launch?"
    assert fake_openai.requests == []
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")


def test_stop_on_entry_stops_at_the_first_step(dap: DapClient, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(text="Hi."))
    dap.start_session({**LAUNCH, "stopOnEntry": True})
    stop = dap.stopped(1)
    assert stop["event"]["reason"] == "entry"
    assert stop["frames"][0] == "provider 1: environment"
    dap.request("next", {"threadId": 1})
    assert dap.stopped(2)["frames"][0] == "provider 2: tools"
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")


def test_terminate_cancels_the_stopped_run_before_it_sends(dap: DapClient, fake_openai: FakeOpenAI,
                                                           workspace: Path):
    dap.start_session(LAUNCH, function_breakpoints=["model"])
    dap.stopped(1)
    dap.request("terminate")
    dap.wait_event("terminated")
    assert dap.events("exited")[0]["body"] == {"exitCode": 1}
    assert fake_openai.requests == []
    transcript = next((workspace / ".oscova" / "runs").glob("*-helper-*.jsonl"))
    assert json.loads(transcript.read_text().splitlines()[-1])["kind"] == "cancelled"


def test_a_failing_endpoint_stops_at_failed(dap: DapClient, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(status=500, error_message="the model is overloaded"))
    dap.start_session(LAUNCH, exception_filters=["failed"])
    stop = dap.stopped(1)
    assert stop["event"]["reason"] == "exception"
    info = dap.request("exceptionInfo", {"threadId": 1})["body"]
    assert info["exceptionId"] == "failed" and "HTTP 500" in info["description"]
    assert stop["frames"] == ["model call 1", "agent helper"]
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert dap.events("exited")[0]["body"] == {"exitCode": 1}
    assert "the model is overloaded" in dap.output("important")


def test_a_denied_tool_call_stops_at_denied(tmp_path: Path, fake_openai: FakeOpenAI):
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, extra_host='deny_tools = ["write_file"]\n')
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("write_file", {"path": "data/x.md", "content": "x"}, "w1")]))
    client = DapClient(root, client_env())
    try:
        client.start_session(LAUNCH, exception_filters=["denied"])
        stop = client.stopped(1)
        assert stop["event"]["reason"] == "exception"
        assert stop["scopes"]["Denied"]["name"] == "write_file"
        assert client.request("exceptionInfo", {"threadId": 1})["body"]["exceptionId"] == "denied"
        client.request("continue", {"threadId": 1})
        client.wait_event("terminated")
    finally:
        client.close()


def test_an_untrusted_workspace_is_refused_with_the_sentence_runs_use(dap: DapClient, fake_openai: FakeOpenAI):
    launched = dap.start_session({**LAUNCH, "workspaceTrusted": False}, function_breakpoints=["model"])
    assert not launched["success"]
    assert launched["message"] == ("The workspace is not trusted: oscova-lsp debug runs agents (and the workspace's "
                                   "tool and provider code) only in a trusted workspace")
    assert dap.events("stopped") == [] and fake_openai.requests == []


def test_the_launch_configuration_can_name_function_breakpoints(dap: DapClient, fake_openai: FakeOpenAI):
    """For clients without a function-breakpoint UI (nvim-dap, dape): kept when the client sets its own."""
    fake_openai.enqueue(Reply(text="Hi."))
    dap.start_session({**LAUNCH, "functionBreakpoints": ["model"]}, function_breakpoints=[])
    stop = dap.stopped(1)
    assert stop["event"]["reason"] == "function breakpoint" and stop["frames"][0] == "model call 1"
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")


def test_pause_stops_the_running_run_at_its_next_step(dap: DapClient, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("current_datetime", {}, "t1")], delay=1.5), Reply(text="Now."))
    dap.start_session(LAUNCH)
    fake_openai.wait_for_requests(1, timeout=30)  # the model is answering, slowly
    dap.request("pause", {"threadId": 1})
    stop = dap.stopped(1)
    assert stop["event"]["reason"] == "pause"
    assert stop["frames"][0] == "tool call current_datetime (t1)"
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert dap.events("exited")[0]["body"] == {"exitCode": 0}
