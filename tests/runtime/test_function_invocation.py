"""Seed *Agent Runtime*: the governed function-invocation client, the repeated-call guard, workspace
validation and approval, through the real `openai` client and the local server."""

from __future__ import annotations

import json
import os

import pytest
from conftest import Reply, ToolCall, make_request
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.function_invocation import (
    FUNCTION_FAILED,
    MAXIMUM_CONSECUTIVE_ERRORS_PER_REQUEST,
    MAXIMUM_ITERATIONS_PER_REQUEST,
    ToolFailure,
    tool_failure,
)
from oscova_runtime.orchestrator import AgentOrchestrator
from oscova_runtime.providers import AgentToolProvider
from oscova_runtime.tools import (
    APPROVAL_DENIED,
    BuiltinToolContext,
    approval_channel,
    builtin_tools,
    function_from_callable,
)


def tool_results(request) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


async def build(client, tools, workspaces=(), **kwargs):
    orchestrator = AgentOrchestrator()
    orchestrator.sync_tools(tools)
    names = [t.name for t in tools]
    provider = AgentToolProvider(lambda: names, lambda: orchestrator.tools)
    definition = AgentDefinition(id="worker")
    return await orchestrator.get_or_create_agent(
        make_request(definition, client, [provider], workspaces=lambda d: list(workspaces), **kwargs))


def test_the_seed_limits():
    """"MaximumIterationsPerRequest = 40. MaximumConsecutiveErrorsPerRequest = 3. IncludeDetailedErrors = false." """
    settings = AgentOrchestrator().function_invocation_settings
    assert (settings.maximum_iterations_per_request, settings.maximum_consecutive_errors_per_request,
            settings.include_detailed_errors) == (40, 3, False)
    assert (MAXIMUM_ITERATIONS_PER_REQUEST, MAXIMUM_CONSECUTIVE_ERRORS_PER_REQUEST) == (40, 3)


async def test_a_tool_call_round_trip_sends_the_result_back(openai_client, fake_openai):
    calls = []

    def add(a: int, b: int) -> int:
        """Adds two numbers."""
        calls.append((a, b))
        return a + b

    fake_openai.enqueue(Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3}, "call_1")]), Reply(text="5"))
    agent = await build(openai_client, [function_from_callable(add)])
    response = await agent.run("2+3?")
    assert calls == [(2, 3)] and response.text == "5"
    second = fake_openai.requests[1].messages
    assert second[-2]["tool_calls"][0]["function"] == {"name": "add", "arguments": json.dumps({"a": 2, "b": 3})}
    assert second[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "5"}


async def test_forty_iterations_at_most(openai_client, fake_openai):
    """A model that always calls a tool gets 40 tool rounds; the 41st request offers no tools, and calls the model
    makes anyway are returned unprocessed."""
    count = []

    def tick(n: int) -> str:
        """Ticks."""
        count.append(n)
        return "tick"

    fake_openai.responder = lambda body: Reply(tool_calls=[ToolCall("tick", {"n": len(count)})])
    agent = await build(openai_client, [function_from_callable(tick)])
    response = await agent.run("loop")
    assert len(count) == 40
    assert len(fake_openai.requests) == 41
    assert all(r.tool_names == ["tick"] for r in fake_openai.requests[:40])
    assert "tools" not in fake_openai.requests[40].body
    assert response.messages[-1].function_calls  # the last calls are left for the caller


async def test_three_consecutive_errors_then_the_run_fails(openai_client, fake_openai):
    """Three failing rounds in a row are reported to the model; in a fourth, the failing call's own exception
    reaches the caller ("the original application-side exception"), marked with why it was let through."""

    def broken(i: int) -> str:
        """Always fails."""
        raise OSError("secret path /etc/shadow unreadable")

    fake_openai.responder = lambda body: Reply(tool_calls=[ToolCall("broken", {"i": len(fake_openai.requests)}, "cx")])
    agent = await build(openai_client, [function_from_callable(broken)])
    with pytest.raises(OSError, match="unreadable") as raised:
        await agent.run("go")
    assert tool_failure(raised.value) == ToolFailure("broken", "cx", 4, 3)
    assert len(fake_openai.requests) == 4  # three failures were sent back; the fourth failure raised
    assert tool_results(fake_openai.requests[3]) == [FUNCTION_FAILED] * 3


async def test_a_success_resets_the_consecutive_error_count(openai_client, fake_openai):
    state = {"n": 0}

    def flaky(i: int) -> str:
        """Fails twice, then succeeds, then fails twice."""
        state["n"] += 1
        if state["n"] in (1, 2, 4, 5):
            raise RuntimeError("nope")
        return "fine"

    script = [Reply(tool_calls=[ToolCall("flaky", {"i": i})]) for i in range(5)] + [Reply(text="done")]
    fake_openai.enqueue(*script)
    agent = await build(openai_client, [function_from_callable(flaky)])
    response = await agent.run("go")
    assert response.text == "done"


async def test_no_exception_text_reaches_the_model(openai_client, fake_openai):
    """"Detailed tool exceptions therefore stay out of model-visible failure text." """

    def leaky() -> str:
        """Fails with a sensitive message."""
        raise RuntimeError("password=hunter2")

    fake_openai.enqueue(Reply(tool_calls=[ToolCall("leaky", {})]), Reply(text="sorry"))
    agent = await build(openai_client, [function_from_callable(leaky)])
    response = await agent.run("go")
    assert tool_results(fake_openai.requests[1]) == [FUNCTION_FAILED]
    assert "hunter2" not in json.dumps(fake_openai.requests[1].body)
    # "Application code can still inspect framework result content"
    failed = response.messages[1].function_results[0]
    assert isinstance(failed.exception, RuntimeError) and "hunter2" in str(failed.exception)


async def test_an_unknown_tool_is_reported_to_the_model(openai_client, fake_openai):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("nosuch", {})]), Reply(text="ok"))
    agent = await build(openai_client, [function_from_callable(lambda: "x", name="known", description="k")])
    await agent.run("go")
    assert tool_results(fake_openai.requests[1]) == ['Error: Requested function "nosuch" not found.']


async def test_the_repeated_call_guard_stops_the_loop(openai_client, fake_openai):
    """"A tool loop stops early: check ... repeated-call guard": the third identical call is not run."""
    runs = []

    def lookup(key: str) -> str:
        """Looks up."""
        runs.append(key)
        return "v"

    fake_openai.responder = lambda body: Reply(tool_calls=[ToolCall("lookup", {"key": "k"})])
    agent = await build(openai_client, [function_from_callable(lookup)])
    response = await agent.run("go")
    assert runs == ["k", "k"]
    assert len(fake_openai.requests) == 3
    assert "same arguments" in response.messages[-1].function_results[0].result


async def test_workspace_validation_refuses_paths_outside_the_workspaces(openai_client, fake_openai, tmp_path):
    inside = tmp_path / "ws"
    inside.mkdir()
    (inside / "a.txt").write_text("hello")
    (tmp_path / "secret.txt").write_text("secret")
    os.symlink(tmp_path / "secret.txt", inside / "link.txt")
    tools = builtin_tools(BuiltinToolContext())
    fake_openai.enqueue(
        Reply(tool_calls=[ToolCall("read_file", {"path": "a.txt"}, "c1"),
                          ToolCall("read_file", {"path": "../secret.txt"}, "c2"),
                          ToolCall("read_file", {"path": "link.txt"}, "c3"),
                          ToolCall("read_file", {"path": str(tmp_path / "secret.txt")}, "c4")]),
        Reply(text="ok"))
    agent = await build(openai_client, [tools["read_file"]], workspaces=[str(inside)])
    await agent.run("read")
    results = tool_results(fake_openai.requests[1])
    assert results[0] == "hello"
    assert all(r.startswith("Access denied") for r in results[1:])
    assert "secret" not in " ".join(results[1:]).replace("secret.txt", "")


async def test_an_approval_required_tool_is_suppressed_without_an_approval_channel(openai_client, fake_openai, tmp_path):
    """"can suppress tools that require an unavailable approval channel." """
    tools = builtin_tools(BuiltinToolContext())
    fake_openai.enqueue(Reply(text="ok"))
    agent = await build(openai_client, [tools["read_file"], tools["write_file"]], workspaces=[str(tmp_path)])
    await agent.run("write")
    assert fake_openai.requests[0].tool_names == ["read_file"]


async def test_an_approval_required_tool_asks_the_approval_channel(openai_client, fake_openai, tmp_path):
    """"wraps approval-required tools" """
    tools = builtin_tools(BuiltinToolContext())
    asked = []

    async def deny_then_approve(request):
        asked.append((request.tool_name, dict(request.arguments)))
        return len(asked) > 1

    fake_openai.enqueue(
        Reply(tool_calls=[ToolCall("write_file", {"path": "x.txt", "content": "1"}, "c1")]),
        Reply(tool_calls=[ToolCall("write_file", {"path": "x.txt", "content": "2"}, "c2")]),
        Reply(text="ok"))
    agent = await build(openai_client, [tools["write_file"]], workspaces=[str(tmp_path)])
    with approval_channel(deny_then_approve):
        await agent.run("write")
    assert fake_openai.requests[0].tool_names == ["write_file"]
    assert tool_results(fake_openai.requests[1]) == [APPROVAL_DENIED]
    assert (tmp_path / "x.txt").read_text() == "2"
    assert [a[0] for a in asked] == ["write_file", "write_file"]
