"""Seed statements on tools, notes, skills and middleware: tool resolution per invocation, vision wrappers, notes, skills, library,
build cancellation, middleware composition and the summarizing reducer."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from conftest import Reply, ScriptedChatClient, ToolCall, make_request
from oscova_runtime.catalogue import plan_providers
from oscova_runtime.context import InvokingContext
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.function_invocation import FunctionInvokingChatClient
from oscova_runtime.grants import WorkspaceViolation, resolve_inside
from oscova_runtime.host import ConfiguredHost
from oscova_runtime.host_config import HostConfig
from oscova_runtime.messages import ChatMessage
from oscova_runtime.orchestrator import AgentOrchestrator
from oscova_runtime.providers import (
    AgentToolProvider,
    LibraryContextProvider,
    MemoryContextProvider,
    MemoryStore,
    PrivateNotesContextProvider,
    SkillsContextProvider,
    VisionToolProvider,
)
from oscova_runtime.providers.vision import AnalyzeImageTool
from oscova_runtime.reducer import SUMMARY_PREFIX, SummarizingChatReducer
from oscova_runtime.session import AgentSession
from oscova_runtime.templates import TemplateRenderer
from oscova_runtime.tools import function_from_callable


def ctx() -> InvokingContext:
    return InvokingContext(None, AgentSession(), None)


def tool(name: str):
    return function_from_callable(lambda: name, name=name, description=name)


async def test_agent_tool_provider_resolves_the_current_catalogue_on_each_invocation():
    """"AgentToolProvider resolves the currently allowed qualified tool names on each invocation. It omits
    missing, denied ... tools" """
    orchestrator = AgentOrchestrator()
    denied: list[str] = []
    provider = AgentToolProvider(lambda: ["a", "b", "missing"], lambda: orchestrator.tools, denied=lambda: denied)
    orchestrator.sync_tools([tool("a")])
    assert [t.name for t in (await provider.provide_ai_context(ctx())).tools] == ["a"]
    orchestrator.sync_tools([tool("a"), tool("b")])
    denied.append("a")
    assert [t.name for t in (await provider.provide_ai_context(ctx())).tools] == ["b"]


async def test_vision_creates_its_wrapper_for_each_invocation():
    """"VisionToolProvider contributes one analyze_image tool and creates its AnalyzeImageTool wrapper for each
    invocation." """
    provider = VisionToolProvider(ScriptedChatClient(), lambda: [])
    one, two = (await provider.provide_ai_context(ctx())).tools, (await provider.provide_ai_context(ctx())).tools
    assert [t.name for t in one] == ["analyze_image"] and [t.name for t in two] == ["analyze_image"]
    # the bound method's instance is the wrapper: a new AnalyzeImageTool for each invocation
    assert isinstance(one[0].func.__self__, AnalyzeImageTool)
    assert one[0].func.__self__ is not two[0].func.__self__


async def test_missing_private_notes_contribute_nothing(tmp_path):
    """"Missing or unauthorized notes contribute nothing." """
    assert (await PrivateNotesContextProvider(str(tmp_path), "alice", "a").provide_ai_context(ctx())).instructions is None
    assert (await PrivateNotesContextProvider(str(tmp_path), None, "a").provide_ai_context(ctx())).instructions is None


def test_private_notes_never_apply_to_a_shared_definition():
    config = HostConfig.model_validate({"host": {"user_id": "u"}})
    shared = plan_providers(AgentDefinition(id="s", shared=True), config)
    private = plan_providers(AgentDefinition(id="p"), config)
    assert "private_notes" not in [p.type for p in shared.providers]
    assert "private_notes" in [p.type for p in private.providers]


async def test_skills_describe_assigned_skills_and_load_one(tmp_path):
    (tmp_path / "triage").mkdir()
    (tmp_path / "triage" / "SKILL.md").write_text("---\ndescription: Sort bugs\n---\nStep 1: label.")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "SKILL.md").write_text("secret skill")
    provider = SkillsContextProvider(str(tmp_path), ["triage", "absent"])
    result = await provider.provide_ai_context(ctx())
    assert "- triage: Sort bugs" in result.instructions and "absent" not in result.instructions
    assert await provider.load_skill("triage") == "Step 1: label."
    assert "No assigned skill" in await provider.load_skill("other")


async def test_the_library_is_searchable_readable_and_confined(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "guide.md").write_text("Deploy with make deploy.")
    (tmp_path / "outside.md").write_text("private")
    provider = LibraryContextProvider(str(tmp_path / "lib"))
    assert (await provider.library_search("make deploy")).startswith("guide.md:")
    assert await provider.library_read("guide.md") == "Deploy with make deploy."
    assert "No Library document" in await provider.library_read("../outside.md")


async def test_a_memory_prompt_with_agent_memory_is_not_given_a_second_block(tmp_path):
    store = MemoryStore(str(tmp_path), "u", "a")
    provider = MemoryContextProvider(store, [], TemplateRenderer(tmp_path), system_prompt="M:\n{{ agent_memory }}")
    text = (await provider.provide_ai_context(ctx())).instructions
    assert text.count("<agent_memory>") == 1 and text.startswith("M:\n<agent_memory>")


def test_resolve_inside_uses_real_paths(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ok.txt").write_text("x")
    (ws / "escape").symlink_to(tmp_path)
    assert resolve_inside("ok.txt", [str(ws)]) == str((ws / "ok.txt").resolve())
    for bad in ["../x", "escape/x", str(tmp_path / "x"), "~/x"]:
        with pytest.raises(WorkspaceViolation):
            resolve_inside(bad, [str(ws)], must_exist=False)
    with pytest.raises(WorkspaceViolation, match="no workspace"):
        resolve_inside("ok.txt", [])


async def test_the_build_is_cancellable_and_nothing_is_cached():
    """"The cancellation token passed to GetOrCreateAgentAsync flows through exposed-dependency builds,
    context-provider creation, chat-client creation, and reducer creation." """
    started = asyncio.Event()

    async def slow_providers(definition, build):
        started.set()
        await asyncio.sleep(30)
        return []

    orchestrator = AgentOrchestrator()
    task = asyncio.create_task(orchestrator.get_or_create_agent(
        make_request(AgentDefinition(id="slow"), ScriptedChatClient(), slow_providers)))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(orchestrator.agents) == 0


async def test_function_middleware_composition_order(openai_client, fake_openai):
    """Step 7: "Build one governed function-invocation client, then compose workspace validation, every-agent
    builder customization, requested-agent builder customization, the repeated-call guard, and the optional
    IAgentRunScopeFactory." The run scope wraps the run: entered once, around both tool rounds."""
    order: list[str] = []

    def recorder(label):
        async def middleware(context, call_next):
            order.append(label)
            return await call_next(context)
        return middleware

    class Scopes:
        def create_scope(self, definition):
            @contextlib.asynccontextmanager
            async def scope():
                order.append(f"enter {definition.id}")
                yield
                order.append(f"exit {definition.id}")
            return scope()

    orchestrator = AgentOrchestrator()
    orchestrator.sync_tools([tool("t")])
    request = make_request(
        AgentDefinition(id="mw"), openai_client, [AgentToolProvider(lambda: ["t"], lambda: orchestrator.tools)],
        configure_agent_builder=lambda b, d: b.use_function_middleware(recorder("agent-builder")),
        configure_builder=lambda b: b.use_function_middleware(recorder("builder")),
        run_scope_factory=Scopes())
    agent = await orchestrator.get_or_create_agent(request)
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("t", {}, "c1")]),
                        Reply(tool_calls=[ToolCall("t", {}, "c2")]), Reply(text="ok"))
    await agent.run("go")
    assert len(fake_openai.requests) == 3
    assert order == ["enter mw", "agent-builder", "builder", "agent-builder", "builder", "exit mw"]
    assert isinstance(agent.chat_client, FunctionInvokingChatClient)  # the one governed client is outermost
    names = [getattr(m, "__name__", type(m).__name__) for m in agent.chat_client.middleware]
    # The seed's four in its order; the port's tool tap (recording and replay, docs/runtime.md) before the guard.
    assert names == ["WorkspaceValidation", "middleware", "middleware", "tapped_tool", "RepeatedCallGuard"]


async def test_compaction_summarizes_history_through_the_model(openai_client, fake_openai):
    """"Attach an in-memory history provider with a reducer when compaction is enabled" — Oscova's
    summarizing reducer, through the real client."""
    reducer = SummarizingChatReducer(openai_client, keep_last=2, threshold=2)
    history = [ChatMessage.of("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(6)]
    fake_openai.enqueue(Reply(text="they talked"))
    reduced = await reducer.reduce(history)
    assert [m.text for m in reduced] == [SUMMARY_PREFIX + "they talked", "m4", "m5"]
    assert "user: m0" in fake_openai.requests[0].messages[-1]["content"]
    assert await reducer.reduce(history[:4]) == history[:4]


async def test_a_compacting_agent_keeps_a_summary_in_the_session(tmp_path, fake_openai):
    """The reducer runs when a run loads the history (the framework's default `BeforeMessagesRetrieval`): the
    summary is written at the start of the run that needs it, kept in the session, and sent to the model."""
    config = HostConfig.model_validate({"models": {"default": {"model": "m", "base_url": fake_openai.base_url}}})
    host = ConfiguredHost(tmp_path, config, [AgentDefinition(id="c", compaction={"keep_last": 2})])
    agent = await host.get_agent("c")
    agent.chat_history_provider.reducer.threshold = 1
    session = AgentSession()
    fake_openai.enqueue(Reply(text="a1"), Reply(text="a2"), Reply(text="summary!"), Reply(text="a3"),
                        Reply(text="summary 2"), Reply(text="a4"))
    await agent.run("q1", session=session)
    await agent.run("q2", session=session)
    stored = agent.chat_history_provider.messages(session)
    assert [m.text for m in stored] == ["q1", "a1", "q2", "a2"]  # nothing to compact yet when run 2 loaded it
    await agent.run("q3", session=session)
    assert "user: q1" in fake_openai.requests[2].messages[-1]["content"]  # the summary request
    assert fake_openai.requests[3].messages[1]["content"] == SUMMARY_PREFIX + "summary!"
    assert [m.text for m in agent.chat_history_provider.messages(session)] == [
        SUMMARY_PREFIX + "summary!", "q2", "a2", "q3", "a3"]
    await agent.run("q4", session=session)
    assert "assistant: " + SUMMARY_PREFIX + "summary!" in fake_openai.requests[4].messages[-1]["content"]
    assert [m.text for m in agent.chat_history_provider.messages(session)] == [
        SUMMARY_PREFIX + "summary 2", "q3", "a3", "q4", "a4"]
    await host.aclose()
