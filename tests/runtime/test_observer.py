"""Seed *Agent Runtime*, "Observe a task run": the observer, its accessor and the middleware."""

from __future__ import annotations

import pytest
from conftest import Reply, ScriptedChatClient, ToolCall, make_request
from oscova_runtime.context import AIContext, AIContextProvider
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.messages import (
    CHAT_HISTORY,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    FunctionResultContent,
    MessageSource,
    MessageSourceType,
)
from oscova_runtime.observer import (
    AgentRunObserverAccessor,
    AgentTaskRun,
    AgentTaskRunObserver,
    use_agent_run_observer,
)
from oscova_runtime.orchestrator import AgentOrchestrator
from oscova_runtime.providers import AgentToolProvider, TodoListContextProvider
from oscova_runtime.session import AgentSession
from oscova_runtime.tools import function_from_callable


def echo(text: str) -> str:
    """Echoes."""
    return text


class Instructions(AIContextProvider):
    async def provide_ai_context(self, context):
        return AIContext(instructions="be brief")


async def observed_agent(client, accessor, *extra):
    orchestrator = AgentOrchestrator()
    orchestrator.sync_tools([function_from_callable(echo)])
    providers = [Instructions(), AgentToolProvider(lambda: ["echo"], lambda: orchestrator.tools), *extra]
    return await orchestrator.get_or_create_agent(make_request(
        AgentDefinition(id="obs"), client, providers, configure_builder=use_agent_run_observer(accessor)))


def test_the_observer_requires_initialized_live_messages():
    """"Initialize AgentTaskRun.LiveMessages" """
    with pytest.raises(ValueError, match="live_messages"):
        AgentTaskRunObserver(AgentTaskRun())


async def test_streaming_observes_requests_user_message_instruction_and_unseen_tool_results(openai_client, fake_openai):
    """Streaming: the first ordinary user message, the first non-empty instruction, tool-result messages with
    unseen call ids; history-attributed messages ignored; deltas never appended."""
    run = AgentTaskRun(live_messages=[])
    signals = []
    run.live_messages_changed.append(lambda r: signals.append(len(r.live_messages)))
    accessor = AgentRunObserverAccessor(AgentTaskRunObserver(run))
    agent = await observed_agent(openai_client, accessor)
    session = AgentSession()
    fake_openai.enqueue(Reply(text="earlier"))
    async for _ in agent.run_streaming("old question", session=session):
        pass
    # a new run with a fresh observer: history must be ignored
    run = AgentTaskRun(live_messages=[])
    run.live_messages_changed.append(lambda r: signals.append(len(r.live_messages)))
    accessor.observer = AgentTaskRunObserver(run)
    signals.clear()
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("echo", {"text": "a"}, "c1")]), Reply(text="streamed answer"))
    deltas = [u async for u in agent.run_streaming("new question", session=session)]
    accessor.observer = None
    assert any(u.text for u in deltas)
    assert run.user_message.text == "new question"
    assert run.instructions == "be brief"
    assert [m.role for m in run.live_messages] == ["user", "tool"]
    assert run.live_messages[1].function_results[0].call_id == "c1"
    assert "streamed answer" not in [m.text for m in run.live_messages]  # deltas are not appended
    assert "old question" not in [m.text for m in run.live_messages]  # history ignored
    assert signals == [1, 2]  # one signal per request that appended, none for responses


async def test_non_streaming_appends_every_response_message_and_observes_no_request(openai_client, fake_openai):
    """"For non-streaming calls, every response message is appended after the response returns." and
    "AgentRunObserverMiddleware currently invokes request observation only during RunStreamingAsync." """
    run = AgentTaskRun(live_messages=[])
    signals = []
    run.live_messages_changed.append(lambda r: signals.append(len(r.live_messages)))
    accessor = AgentRunObserverAccessor(AgentTaskRunObserver(run))
    agent = await observed_agent(openai_client, accessor)
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("echo", {"text": "a"}, "c1")]), Reply(text="final"))
    try:
        await agent.run("question")
    finally:
        accessor.observer = None
    assert run.user_message is None and run.instructions is None
    assert [(m.role, m.text) for m in run.live_messages] == [("assistant", ""), ("assistant", "final")]
    assert run.live_messages[0].function_calls[0].call_id == "c1"
    assert signals == [1, 2]


async def test_a_non_streaming_response_of_two_messages_is_appended_whole():
    """"For non-streaming calls, every response message is appended after the response returns." — one model call
    whose response holds two messages appends both, in order, with one signal after the response."""
    run = AgentTaskRun(live_messages=[])
    signals = []
    run.live_messages_changed.append(lambda r: signals.append([m.text for m in r.live_messages]))
    accessor = AgentRunObserverAccessor(AgentTaskRunObserver(run))
    two = ChatResponse([ChatMessage.of("assistant", "thinking aloud"), ChatMessage.of("assistant", "the answer")])
    agent = await observed_agent(ScriptedChatClient(two), accessor)
    try:
        await agent.run("question")
    finally:
        accessor.observer = None
    assert [m.text for m in run.live_messages] == ["thinking aloud", "the answer"]
    assert signals == [["thinking aloud", "the answer"]]


async def test_a_subscriber_exception_reaches_the_caller_of_run():
    """"subscriber exceptions propagate to the observer caller" — through the middleware and the agent: the run
    raises the subscriber's own exception rather than completing."""
    run = AgentTaskRun(live_messages=[])

    def bad(_):
        raise KeyError("subscriber")

    run.live_messages_changed.append(bad)
    accessor = AgentRunObserverAccessor(AgentTaskRunObserver(run))
    agent = await observed_agent(ScriptedChatClient("answer"), accessor)
    try:
        with pytest.raises(KeyError, match="subscriber"):
            await agent.run("question")
    finally:
        accessor.observer = None
    assert [m.text for m in run.live_messages] == ["answer"]  # the subscriber ran after the append, as stated


async def test_a_cleared_accessor_observes_nothing(openai_client, fake_openai):
    """"assign the observer to an AgentRunObserverAccessor before execution, and clear the accessor afterward." """
    run = AgentTaskRun(live_messages=[])
    accessor = AgentRunObserverAccessor(AgentTaskRunObserver(run))
    agent = await observed_agent(openai_client, accessor)
    fake_openai.enqueue(Reply(text="observed"), Reply(text="after clearing"))
    await agent.run("q1")
    assert [m.text for m in run.live_messages] == ["observed"]  # attached: the run is observed
    accessor.observer = None
    await agent.run("q2")
    assert [m.text for m in run.live_messages] == ["observed"]  # cleared: nothing more


async def test_a_synthetic_provider_user_message_is_not_the_captured_user_message(openai_client, fake_openai):
    """Only an ordinary current-run user message is captured, not the todo provider's synthetic one."""
    run = AgentTaskRun(live_messages=[])
    accessor = AgentRunObserverAccessor(AgentTaskRunObserver(run))
    agent = await observed_agent(openai_client, accessor, TodoListContextProvider())
    fake_openai.enqueue(Reply(text="ok"))
    async for _ in agent.run_streaming("real question"):
        pass
    assert run.user_message.text == "real question"
    assert [m.text for m in run.live_messages] == ["real question"]


def test_tool_result_messages_with_only_seen_ids_are_skipped_and_null_ids_always_appended():
    """"An entire tool-result message is appended when it contains at least one unseen non-null CallId or any
    null CallId. A message containing only already-seen non-null IDs is skipped." """
    run = AgentTaskRun(live_messages=[])
    observer = AgentTaskRunObserver(run)

    def results(*ids):
        return ChatMessage("tool", [FunctionResultContent(i, "r") for i in ids])

    first = results("a", "b")
    observer.observe_request([first], ChatOptions())
    only_seen = results("a")
    mixed = results("a", "c")
    null = results(None)
    observer.observe_request([first, only_seen, mixed, null], ChatOptions())
    assert run.live_messages == [first, mixed, null]
    observer.observe_request([null], ChatOptions())
    assert run.live_messages[-1] is null and len(run.live_messages) == 4


def test_history_attributed_messages_are_ignored_before_inspection():
    """"the observer ignores every history-attributed message before inspecting its contents." """
    run = AgentTaskRun(live_messages=[])
    observer = AgentTaskRunObserver(run)
    old_user = ChatMessage.of("user", "old", CHAT_HISTORY)
    old_tool = ChatMessage("tool", [FunctionResultContent("z", "r")], CHAT_HISTORY)
    observer.observe_request([old_user, old_tool, ChatMessage.of("user", "new")], ChatOptions(instructions=""))
    assert [m.text for m in run.live_messages] == ["new"] and run.instructions is None
    provider_user = ChatMessage.of("user", "synthetic", MessageSource(MessageSourceType.AI_CONTEXT_PROVIDER, "X"))
    run2 = AgentTaskRun(live_messages=[])
    AgentTaskRunObserver(run2).observe_request([provider_user], ChatOptions(instructions="first"))
    assert run2.user_message is None and run2.instructions == "first"


def test_the_first_non_empty_instruction_is_retained():
    run = AgentTaskRun(live_messages=[])
    observer = AgentTaskRunObserver(run)
    observer.observe_request([], ChatOptions(instructions=""))
    observer.observe_request([], ChatOptions(instructions="one"))
    observer.observe_request([], ChatOptions(instructions="two"))
    assert run.instructions == "one"


def test_subscriber_exceptions_propagate_to_the_observer_caller():
    """"subscriber exceptions propagate to the observer caller." """
    run = AgentTaskRun(live_messages=[])

    def bad(_):
        raise KeyError("subscriber")

    run.live_messages_changed.append(bad)
    with pytest.raises(KeyError):
        AgentTaskRunObserver(run).observe_response(ChatResponse([ChatMessage.of("assistant", "x")]))
