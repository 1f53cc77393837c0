"""Where the seeds say nothing, a run behaves as the framework components the seeds build on.

One test per behaviour, each named after it and citing the unit test of
Microsoft Agent Framework (`AIContextProviderTests`, `ChatClientAgentTests`, `InMemoryChatHistoryProviderTests`,
`ChatClientAgent_BackgroundResponsesTests`, `ChatClientAgent_ChatOptionsMergingTests`) or of
Microsoft.Extensions.AI (`FunctionInvokingChatClientTests`, `FunctionInvocationProcessor`) that specifies it.
Runs go through the real `openai` client to the local OpenAI-compatible server.
"""

from __future__ import annotations

import pytest
from conftest import Reply, ToolCall, make_request
from oscova_runtime.agent import ChatClientAgent, ChatClientAgentOptions
from oscova_runtime.context import AIContext, AIContextProvider, InvalidOperationError, InvokedContext
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.function_invocation import FunctionInvocationSettings
from oscova_runtime.messages import CHAT_HISTORY, ChatMessage, ChatOptions, MessageSource, MessageSourceType
from oscova_runtime.orchestrator import AgentOrchestrator
from oscova_runtime.providers import AgentToolProvider, TodoListContextProvider
from oscova_runtime.session import AgentSession, InMemoryChatHistoryProvider
from oscova_runtime.tools import function_from_callable


def full_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class Noting(AIContextProvider):
    """Contributes one message (and instructions, when given)."""

    def __init__(self, text: str = "context provider message", instructions: str | None = None) -> None:
        self.text = text
        self.instructions = instructions

    async def provide_ai_context(self, context):
        return AIContext(self.instructions, [ChatMessage.of("system", self.text)])


class SeesAll(AIContextProvider):
    """Records every message the accumulated context holds when it is reached."""

    def __init__(self) -> None:
        self.seen: list[ChatMessage] = []

    def provide_input_message_filter(self, message):
        return True

    async def provide_ai_context(self, context):
        self.seen.extend(context.ai_context.messages or ())
        return AIContext()


def agent_with(client, *providers, instructions=None, name=None, history=None) -> ChatClientAgent:
    return ChatClientAgent(client, ChatClientAgentOptions(
        "a", name=name, chat_options=ChatOptions(instructions=instructions), ai_context_providers=list(providers),
        chat_history_provider=history))


def contents(request) -> list:
    return [m.get("content") for m in request.messages]


# -- context providers and the agent ---------------------------------------------------------------------


async def test_1_provider_messages_are_stamped_with_the_provider_types_full_name(openai_client, fake_openai, tmp_path):
    """`AIContextProvider.InvokingCoreAsync` stamps provided messages with `GetType().FullName`: the
    module-qualified name, not the bare class name."""
    spy = SeesAll()
    fake_openai.enqueue(Reply(text="ok"))
    await agent_with(openai_client, Noting(), TodoListContextProvider(), spy).run("hi")
    stamped = {m.text: m.source for m in spy.seen if m.source.type is MessageSourceType.AI_CONTEXT_PROVIDER}
    assert stamped["context provider message"].source_id == full_name(Noting) != "Noting"
    todo = next(source for text, source in stamped.items() if text.startswith("<todo_list>"))
    assert todo.source_id == "oscova_runtime.providers.todo.TodoListContextProvider"


class KeepOnly(AIContextProvider):
    """`InvokedCoreAsync_UsesCustomResponseFilterAsync`: a response filter, without overriding `invoked_core`."""

    def __init__(self) -> None:
        self.stored: list[InvokedContext] = []

    def store_input_response_message_filter(self, message):
        return message.text == "Keep"

    async def store_ai_context(self, context):
        self.stored.append(context)


class KeepSystemRequests(KeepOnly):
    def store_input_message_filter(self, message):
        return message.role == "system"


async def test_2_a_provider_filters_the_response_messages_it_stores_beside_the_request_filter(openai_client):
    """`InvokedCoreAsync_UsesCustomResponseFilterAsync` and `InvokedCoreAsync_RequestAndResponseFiltersOperate
    IndependentlyAsync`: the response filter decides which response messages reach `store_ai_context`."""
    provider = KeepOnly()
    agent = agent_with(openai_client, provider)
    responses = [ChatMessage.of("assistant", "Keep"), ChatMessage.of("assistant", "Drop")]
    await provider.invoked(InvokedContext(agent, AgentSession(), [ChatMessage.of("user", "Request")], responses))
    assert [m.text for m in provider.stored[0].request_messages] == ["Request"]
    assert [m.text for m in provider.stored[0].response_messages] == ["Keep"]

    both = KeepSystemRequests()
    requests = [ChatMessage.of("user", "User"), ChatMessage.of("system", "System")]
    await both.invoked(InvokedContext(agent, AgentSession(), requests, responses))
    assert [m.text for m in both.stored[0].request_messages] == ["System"]
    assert [m.text for m in both.stored[0].response_messages] == ["Keep"]


class Keyed(AIContextProvider):
    def __init__(self, *keys: str) -> None:
        self.state_keys = keys


class TwoKeyHistory(InMemoryChatHistoryProvider):
    def __init__(self, *keys: str) -> None:
        super().__init__()
        self.keys = keys

    @property
    def state_keys(self) -> tuple[str, ...]:
        return self.keys


def test_3_a_multi_key_history_provider_clashes_when_any_key_equals_a_context_providers(openai_client):
    """`Constructor_ThrowsWhenMultiKeyChatHistoryProviderOverlapsWithAIContextProvider`: every key of the
    history provider is compared with every key of every context provider."""
    with pytest.raises(InvalidOperationError, match="'SharedKey'"):
        agent_with(openai_client, Keyed("Key1", "SharedKey"), history=TwoKeyHistory("Key2", "SharedKey"))
    # `Constructor_SucceedsWithMultiKeyProvidersWithUniqueKeys`
    agent = agent_with(openai_client, Keyed("Key1", "Key2"), Keyed("Key3", "Key4"), history=TwoKeyHistory("Key5", "Key6"))
    assert agent.chat_history_provider.state_keys == ("Key5", "Key6")


async def test_4_the_in_memory_history_stores_external_and_provider_request_messages_and_every_response(
        openai_client, fake_openai):
    """`RunAsyncInvokesAIContextProviderAndUsesResultAsync` ("the session was updated with the ai context
    provider, input and response messages") and `InvokedAsync_DefaultFilter_ExcludesChatHistoryMessagesAsync`."""
    fake_openai.enqueue(Reply(text="response"), Reply(text="second"))
    agent = agent_with(openai_client, Noting())
    session = AgentSession()
    await agent.run("user message", session=session)
    stored = agent.chat_history_provider.messages(session)
    assert [m.text for m in stored] == ["user message", "context provider message", "response"]
    await agent.run("again", session=session)  # the loaded history is not stored a second time
    assert [m.text for m in agent.chat_history_provider.messages(session)] == [
        "user message", "context provider message", "response", "again", "context provider message", "second"]
    assert contents(fake_openai.requests[1]) == [
        "user message", "context provider message", "response", "again", "context provider message"]


@pytest.mark.parametrize("streaming", [False, True])
async def test_5_every_response_message_carries_the_agents_name_as_author_name(openai_client, fake_openai, streaming):
    """`RunAsyncSetsAuthorNameOnAllResponseMessagesAsync` ("TestAgent" and null): the agent's name, or none."""
    echo = function_from_callable(lambda text: text, name="echo", description="Echoes.")
    for name in ("TestAgent", None):
        agent = await agent_over(openai_client, [echo], configure_options=lambda o, name=name: setattr(o, "name", name) or o)
        fake_openai.enqueue(Reply(tool_calls=[ToolCall("echo", {"text": "x"}, "c1")]), Reply(text="done"))
        session = AgentSession()
        if streaming:
            updates = [u async for u in agent.run_streaming("hi", session=session)]
            assert updates and {u.author_name for u in updates} == {name}
        else:
            response = await agent.run("hi", session=session)
            assert [m.role for m in response.messages] == ["assistant", "tool", "assistant"]
            assert {m.author_name for m in response.messages} == {name}
        stored = agent.chat_history_provider.messages(session)
        assert [m.author_name for m in stored] == [None, name, name, name]


async def test_6_instructions_are_joined_whenever_both_sides_are_not_none(openai_client, fake_openai):
    """`InvokingCoreAsync` merges `(string a, string b) => a + "\\n" + b`: an empty side still gets the newline."""
    fake_openai.enqueue(Reply(text="1"), Reply(text="2"))
    await agent_with(openai_client, Noting(instructions="x"), instructions="").run("hi")
    assert fake_openai.requests[0].messages[0] == {"role": "system", "content": "\nx"}
    await agent_with(openai_client, Noting(instructions=""), instructions="a").run("hi")
    assert fake_openai.requests[1].messages[0] == {"role": "system", "content": "a\n"}
    assert Noting().merge(AIContext(""), AIContext("x")).instructions == "\nx"
    assert Noting().merge(AIContext(None), AIContext("x")).instructions == "x"


@pytest.mark.parametrize("streaming", [False, True])
async def test_7_a_continuation_skips_chat_history_and_rejects_input_messages(openai_client, fake_openai, streaming):
    """`RunAsync_WhenContinuationTokenProvided_SkipsSessionMessagePopulationAsync` and
    `RunAsync_WhenMessagesProvidedWithContinuationToken_ThrowsInvalidOperationExceptionAsync` (and their
    streaming twins): a continuation sends no history and no provider context; input with a token raises
    before the model is called."""

    async def run(agent, messages, **kwargs):
        if streaming:
            return [u async for u in agent.run_streaming(messages, **kwargs)]
        return await agent.run(messages, **kwargs)

    provider = Noting()
    agent = agent_with(openai_client, provider, instructions="base")
    session = AgentSession()
    fake_openai.enqueue(Reply(text="first"), Reply(text="continued"))
    await run(agent, "earlier", session=session)
    await run(agent, None, session=session, options=ChatOptions(continuation_token="t1"))
    continued = fake_openai.requests[1]
    assert contents(continued) == ["base"]  # the agent's instructions only: no history, no provider message
    with pytest.raises(InvalidOperationError, match="continuation"):
        await run(agent, "more input", session=session, options=ChatOptions(continuation_token="t1"))
    assert len(fake_openai.requests) == 2


async def test_8_run_option_instructions_are_appended_to_the_agents(openai_client, fake_openai):
    """`ChatOptionsMergingPrioritizesRequestOptionsOverAgentOptionsAsync`: "Request is in addition to agent
    instructions" (`"agent\\nrequest"`); a blank side gives way to the other."""
    fake_openai.enqueue(Reply(text="1"), Reply(text="2"), Reply(text="3"))
    await agent_with(openai_client, instructions="agent").run("hi", options=ChatOptions(instructions="request"))
    await agent_with(openai_client, instructions="agent").run("hi", options=ChatOptions(instructions="  "))
    await agent_with(openai_client).run("hi", options=ChatOptions(instructions="request"))
    assert [r.messages[0]["content"] for r in fake_openai.requests] == ["agent\nrequest", "agent", "request"]


# -- the tool loop ---------------------------------------------------------------------------------------


async def agent_over(client, tools, settings=None, **kwargs) -> ChatClientAgent:
    orchestrator = AgentOrchestrator(settings)
    orchestrator.sync_tools(tools)
    names = [t.name for t in tools]
    return await orchestrator.get_or_create_agent(make_request(
        AgentDefinition(id="worker"), client, [AgentToolProvider(lambda: names, lambda: orchestrator.tools)],
        **kwargs))


def tool_results(request) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


async def test_9_a_tool_that_returns_nothing_is_reported_as_function_completed(openai_client, fake_openai):
    """`SupportsSingleFunctionCallPerRequestAsync`: a void function's result is `Success: Function completed.`"""
    ran = []
    void = function_from_callable(lambda i: ran.append(i), name="VoidReturn", description="Returns nothing.")
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("VoidReturn", {"i": 43}, "callId3")]), Reply(text="world"))
    response = await (await agent_over(openai_client, [void])).run("hello")
    assert ran == [43] and response.text == "world"
    assert tool_results(fake_openai.requests[1]) == ["Success: Function completed."]


@pytest.mark.parametrize("streaming", [False, True])
async def test_10_the_last_permitted_iteration_offers_no_tools(openai_client, fake_openai, streaming):
    """`LastIteration_RemovesFunctionDeclarationTools_NonStreaming` / `_Streaming`: with 2 iterations, three
    requests; the first two offer the tool, the last offers none (and no tool choice), so the model answers."""
    func = function_from_callable(lambda: "Result", name="Func1", description="F.")
    calls = iter(range(1, 100))
    fake_openai.responder = lambda body: Reply(tool_calls=[ToolCall("Func1", {}, f"callId{next(calls)}")])
    agent = await agent_over(openai_client, [func], FunctionInvocationSettings(maximum_iterations_per_request=2))
    agent.chat_options.tool_choice = "auto"
    if streaming:
        [u async for u in agent.run_streaming("hello")]
    else:
        await agent.run("hello")
    assert len(fake_openai.requests) == 3
    assert [r.tool_names for r in fake_openai.requests[:2]] == [["Func1"], ["Func1"]]
    assert [r.body.get("tool_choice") for r in fake_openai.requests[:2]] == ["auto", "auto"]
    last = fake_openai.requests[2].body
    assert "tools" not in last and "tool_choice" not in last
    assert agent.chat_options.tool_choice == "auto"  # `LastIteration_DoesNotModifyOriginalOptions`


class CallFailed(Exception):
    pass


def failing_func(log: list[int]):
    def func(should_throw: bool, call_index: int) -> str:
        """Fails when told to."""
        log.append(call_index)
        if should_throw:
            raise CallFailed(f"Exception from call {call_index}")
        return "Success"

    return function_from_callable(func, name="Func")


def rounds(*plan: tuple[bool, ...]) -> list[Reply]:
    """`CreateFunctionCallIterationPlan`: one model reply per round, one call per flag, numbered across rounds."""
    replies, index = [], 0
    for flags in plan:
        calls = []
        for flag in flags:
            calls.append(ToolCall("Func", {"should_throw": flag, "call_index": index}, f"callId{index}"))
            index += 1
        replies.append(Reply(tool_calls=calls))
    return replies


@pytest.mark.parametrize("streaming", [False, True])
async def test_11_past_the_error_limit_the_caller_gets_the_failing_calls_own_exception(
        openai_client, fake_openai, streaming):
    """`ContinuesWithFailingCallsUntilMaximumConsecutiveErrors` (serial): with a limit of 2, a failing round
    after two failing rounds raises the first failing call's own exception and ends the round there."""
    log: list[int] = []
    fake_openai.enqueue(*rounds((True, False), (False, False, False), (False, True, False), (True, True, True),
                                (True, True)), Reply(text="never"))
    agent = await agent_over(openai_client, [failing_func(log)],
                             FunctionInvocationSettings(maximum_consecutive_errors_per_request=2))
    with pytest.raises(CallFailed, match="^Exception from call 11$"):
        if streaming:
            [u async for u in agent.run_streaming("hello")]
        else:
            await agent.run("hello")
    assert log == list(range(12))  # call 12, after the threshold-crossing failure, never ran
    assert len(fake_openai.requests) == 5
    assert tool_results(fake_openai.requests[4])[-3:] == ["Error: Function failed."] * 3


@pytest.mark.parametrize("streaming", [False, True])
async def test_11_a_limit_of_zero_raises_the_first_failures_own_exception(openai_client, fake_openai, streaming):
    """`CanFailOnFirstException`: `MaximumConsecutiveErrorsPerRequest = 0`."""
    log: list[int] = []
    fake_openai.enqueue(*rounds((True, False)))
    agent = await agent_over(openai_client, [failing_func(log)],
                             FunctionInvocationSettings(maximum_consecutive_errors_per_request=0))
    with pytest.raises(CallFailed, match="call 0"):
        if streaming:
            [u async for u in agent.run_streaming("hello")]
        else:
            await agent.run("hello")
    assert log == [0] and len(fake_openai.requests) == 1


def search_tool(ran: list[str]):
    def search(result: str | None = None) -> str | None:
        """Searches."""
        ran.append(result or "terminating")
        return result

    return function_from_callable(search, name="Search")


def terminate_first_call(context, call_next):
    async def middleware():
        result = await call_next(context)
        context.terminate = context.call.call_id == "callId1"
        return result
    return middleware()


@pytest.mark.parametrize("streaming", [False, True])
async def test_12_a_call_that_asks_to_terminate_ends_the_loop_and_the_rest_of_its_round_gets_no_result(
        openai_client, fake_openai, streaming):
    """`HaltFunctionCallingAfterTermination`: the terminating call ends the round; the calls after it in that
    round do not run and get no result, and the model is not asked again."""
    ran: list[str] = []
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("Search", {}, "callId1"),
                                          ToolCall("Search", {"result": "birds"}, "callId2"),
                                          ToolCall("Search", {}, "callId3")]), Reply(text="never"))
    agent = await agent_over(openai_client, [search_tool(ran)],
                             configure_builder=lambda b: b.use_function_middleware(terminate_first_call))
    if streaming:
        results = [c for u in [u async for u in agent.run_streaming("hello")] if u.role == "tool" for c in u.contents]
    else:
        response = await agent.run("hello")
        assert response.messages[-1].role == "tool"
        results = response.messages[-1].function_results
    assert ran == ["terminating"] and len(fake_openai.requests) == 1
    assert [(r.call_id, r.result) for r in results] == [("callId1", "Success: Function completed.")]


async def test_12_a_function_asks_to_terminate_through_the_current_invocation_context(openai_client, fake_openai):
    """`HaltFunctionCallingAfterTermination` verbatim: the function sets `Terminate` on the current context; the
    application then sets the result and re-enters the loop for a final answer."""
    from oscova_runtime.function_invocation import current_invocation_context

    def search(result: str | None = None) -> str | None:
        """Searches."""
        if result:
            return result
        current_invocation_context().terminate = True
        return None

    def responder(body):
        frcs = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        if frcs:
            return Reply(text=f"The search results were '{', '.join(frcs)}'")
        return Reply(tool_calls=[ToolCall("Search", {}, "callId1"), ToolCall("Search", {"result": "birds"}, "callId2"),
                                 ToolCall("Search", {}, "callId3")])

    fake_openai.responder = responder
    agent = await agent_over(openai_client, [function_from_callable(search, name="Search")])
    session = AgentSession()
    result = await agent.run("hello", session=session)
    [frc] = result.messages[-1].function_results
    assert frc.call_id == "callId1"
    frc.result = "dogs"  # the application sets the result, in the session's history too
    again = await agent.run(None, session=session)  # and re-enters the loop for a final answer
    assert again.text == "The search results were 'dogs'" and len(fake_openai.requests) == 2


@pytest.mark.parametrize("streaming", [False, True])
async def test_13_an_unknown_function_gets_a_not_found_result_that_is_not_an_error(
        openai_client, fake_openai, streaming):
    """`TerminateOnUnknownCalls_ControlsBehaviorForUnknownFunctions` (false) and `FunctionInvocationProcessor`
    (NotFound: no exception): even with a limit of 0 consecutive errors, an unknown call does not fail the run."""
    known = function_from_callable(lambda i: f"Known: {i}", name="KnownFunc", description="K.")
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("UnknownFunc", {"i": 1}, "callId1"),
                                          ToolCall("KnownFunc", {"i": 2}, "callId2")]), Reply(text="done"))
    agent = await agent_over(openai_client, [known], FunctionInvocationSettings(maximum_consecutive_errors_per_request=0))
    if streaming:
        text = "".join([u.text async for u in agent.run_streaming("hello")])
    else:
        text = (await agent.run("hello")).text
    assert text == "done"
    assert tool_results(fake_openai.requests[1]) == ['Error: Requested function "UnknownFunc" not found.', "Known: 2"]


@pytest.mark.parametrize("streaming", [False, True])
async def test_13_with_no_tools_offered_an_unknown_call_gets_not_found_and_the_model_is_asked_again(
        openai_client, fake_openai, streaming):
    """`ShouldTerminateLoopBasedOnHandleableFunctions`: no tools and `TerminateOnUnknownCalls = false` → the
    call is answered "not found" and the loop goes on."""
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("ghost", {}, "c1")]), Reply(text="sorry, no ghost"))
    agent = await agent_over(openai_client, [])
    if streaming:
        text = "".join([u.text async for u in agent.run_streaming("hello")])
    else:
        text = (await agent.run("hello")).text
    assert text == "sorry, no ghost" and len(fake_openai.requests) == 2
    assert fake_openai.requests[0].tool_names == []
    assert tool_results(fake_openai.requests[1]) == ['Error: Requested function "ghost" not found.']


def test_the_history_source_is_the_history_providers_full_name():
    """`ChatHistoryProvider.InvokingCoreAsync` stamps history with `GetType().FullName` too."""
    assert CHAT_HISTORY == MessageSource(MessageSourceType.CHAT_HISTORY, full_name(InMemoryChatHistoryProvider))


async def test_a_required_tool_choice_holds_for_the_first_request_only(openai_client, fake_openai):
    """`UpdateOptionsForNextIteration`: a required tool mode is reset after the first iteration ("as otherwise
    we'll be in an infinite loop"); the agent's own options keep it."""
    func = function_from_callable(lambda: "Result", name="Func1", description="F.")
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("Func1", {}, "c1")]), Reply(text="done"))
    agent = await agent_over(openai_client, [func])
    agent.chat_options.tool_choice = "required"
    assert (await agent.run("hello")).text == "done"
    assert [r.body.get("tool_choice") for r in fake_openai.requests] == ["required", None]
    assert agent.chat_options.tool_choice == "required"


class Reducing:
    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    async def reduce(self, messages):
        self.seen.append([m.text for m in messages])
        return [ChatMessage.of("user", "Reduced")] if len(messages) >= 2 else list(messages)


async def test_the_history_reducer_runs_before_messages_are_retrieved_by_default(openai_client, fake_openai):
    """`Constructor_DefaultsToBeforeMessageRetrieval_ForNotProvidedTriggerEvent`,
    `GetMessagesAsync_WithReducer_BeforeMessagesRetrieval_InvokesReducerAsync` and
    `AddMessagesAsync_WithReducer_ButWrongTrigger_DoesNotInvokeReducerAsync`: the reducer compacts the stored
    history when it is loaded for a run, not when a run stores it; the model gets the reduced history."""
    reducer = Reducing()
    agent = agent_with(openai_client, history=InMemoryChatHistoryProvider(reducer))
    session = AgentSession()
    fake_openai.enqueue(Reply(text="Hi there!"), Reply(text="second"))
    await agent.run("Hello", session=session)
    assert reducer.seen == [[]] and [m.text for m in agent.chat_history_provider.messages(session)] == [
        "Hello", "Hi there!"]  # stored as it was: not reduced after the store
    await agent.run("again", session=session)
    assert reducer.seen == [[], ["Hello", "Hi there!"]]
    assert contents(fake_openai.requests[1]) == ["Reduced", "again"]
    assert [m.text for m in agent.chat_history_provider.messages(session)] == ["Reduced", "again", "second"]
    preview, _ = await agent.assemble("look", session=session)  # a preview shows the stored history, uncompacted
    assert [m.text for m in preview] == ["Reduced", "again", "second", "look"] and len(reducer.seen) == 2


async def test_the_history_reducer_runs_after_messages_are_added_when_asked(openai_client, fake_openai):
    """`AddMessagesAsync_WithReducer_AfterMessageAdded_InvokesReducerAsync` and
    `GetMessagesAsync_WithReducer_ButWrongTrigger_DoesNotInvokeReducerAsync`."""
    from oscova_runtime.session import ReducerTrigger

    reducer = Reducing()
    history = InMemoryChatHistoryProvider(reducer, trigger=ReducerTrigger.AFTER_MESSAGE_ADDED)
    agent = agent_with(openai_client, history=history)
    session = AgentSession()
    fake_openai.enqueue(Reply(text="Hi there!"))
    await agent.run("Hello", session=session)
    assert reducer.seen == [["Hello", "Hi there!"]]
    assert [m.text for m in history.messages(session)] == ["Reduced"]
