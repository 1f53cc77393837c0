"""Entering an agent called as a tool: `agent:<id>` stops there, step in goes inside it, step out comes back."""

from __future__ import annotations

from tests.support.dap_client import DapClient
from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall

LAUNCH = {"agent": "lead", "input": "Say hi through echo."}


def _script(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("echo", {"query": "hi"}, "e1")]),  # lead
                        Reply(text="hi"),  # echo, called as a tool
                        Reply(text="Echo said hi."))  # lead again


def test_step_in_and_out_through_an_agent_tool(dap: DapClient, fake_openai: FakeOpenAI):
    _script(fake_openai)
    dap.start_session(LAUNCH, function_breakpoints=["agent:echo"])
    entering = dap.stopped(1)
    assert entering["event"]["reason"] == "function breakpoint"
    assert entering["frames"] == ["tool call echo (e1)", "agent lead"]
    assert entering["scopes"]["Tool call"]["agent"] == "echo"
    assert entering["scopes"]["Arguments"] == {"query": "hi"}
    dap.request("stepIn", {"threadId": 1})
    inside = dap.stopped(2)
    assert inside["event"]["reason"] == "step"
    assert inside["frames"] == ["provider 1: environment", "agent echo", "tool call echo (e1)", "agent lead"]
    dap.request("next", {"threadId": 1})
    assert dap.stopped(3)["frames"][1:] == ["agent echo", "tool call echo (e1)", "agent lead"]
    dap.request("stepOut", {"threadId": 1})
    returned = dap.stopped(4)
    assert returned["frames"] == ["tool call echo (e1) returned", "agent lead"]
    assert returned["scopes"]["Result"] == {"result": "hi"}
    assert len(fake_openai.requests) == 2  # lead's first call and echo's
    dap.request("next", {"threadId": 1})
    after = dap.stopped(5)
    assert after["frames"] == ["model call 3", "agent lead"]
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert dap.output("stdout") == "Echo said hi."


def test_next_over_an_agent_tool_does_not_stop_inside_it(dap: DapClient, fake_openai: FakeOpenAI):
    _script(fake_openai)
    dap.start_session(LAUNCH, function_breakpoints=["tool"])
    assert dap.stopped(1)["frames"] == ["tool call echo (e1)", "agent lead"]
    dap.request("next", {"threadId": 1})
    assert dap.stopped(2)["frames"] == ["model call 3", "agent lead"]
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")


def test_a_model_breakpoint_inside_the_agent_tool_shows_the_nested_stack(dap: DapClient, fake_openai: FakeOpenAI):
    _script(fake_openai)
    dap.start_session(LAUNCH, function_breakpoints=["model"])
    frames = []
    for count in (1, 2, 3):
        frames.append(dap.stopped(count)["frames"])
        dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert frames == [["model call 1", "agent lead"],
                      ["model call 2", "agent echo", "tool call echo (e1)", "agent lead"],
                      ["model call 3", "agent lead"]]
