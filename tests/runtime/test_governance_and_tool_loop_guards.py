"""Governance at call time, the run scope around the run, the interfaces a host can swap, the order of the
tool-loop guards and the public providers: seed statements the runtime once broke; each test
failed before its fix. Runs go through the real `openai` client and the local server.
"""

from __future__ import annotations

import contextlib
import textwrap

import oscova_runtime
import pytest
from conftest import Reply, ScriptedChatClient, ToolCall, make_request
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.function_invocation import ToolCallRefusedError, tool_failure
from oscova_runtime.governance import ToolDeniedError, ToolPolicy
from oscova_runtime.host import ConfiguredHost
from oscova_runtime.host_config import HostConfig
from oscova_runtime.messages import ChatMessage, ChatResponse, FunctionCallContent
from oscova_runtime.orchestrator import AgentOrchestrator, IAgentOrchestrator
from oscova_runtime.providers import (
    AgentToolProvider,
    ISharedAgentPersonalContextRepository,
    SharedAgentPersonalContextRepository,
)
from oscova_runtime.tools import BuiltinToolContext, builtin_tools, function_from_callable


def config(fake_openai, **sections) -> HostConfig:
    data = {"models": {"default": {"model": "fake-model", "base_url": fake_openai.base_url}}, **sections}
    return HostConfig.model_validate(data)


def tool_results(request) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


# -- governance ------------------------------------------------------------------------------------


async def test_a_denied_tool_is_not_offered_and_a_call_to_it_is_refused(tmp_path, fake_openai):
    """"AgentToolProvider ... omits missing, denied, and disallowed egress tools" and "A tool loop stops early:
    check the three-error limit, repeated-call guard, governance denial, and the original application-side
    exception." — `[host] deny_tools` hides the tool, and the governed loop refuses it when the model calls it
    anyway: not run, the result says it was denied (not "not found"), and the loop stops."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "secret.txt").write_text("classified")
    definition = AgentDefinition(id="g", tools=["read_file", "current_datetime"], workspaces=["ws"])
    host = ConfiguredHost(tmp_path, config(fake_openai, host={"deny_tools": ["read_file"]}), [definition])
    agent = await host.get_agent("g")
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "secret.txt"}, "c1")]))
    response = await agent.run("read it")
    assert fake_openai.requests[0].tool_names == ["current_datetime"]
    assert len(fake_openai.requests) == 1  # the loop stopped after the refused round
    refused = response.messages[-1].function_results[0]
    assert refused.result == "Denied: the host's policy does not allow the tool read_file."
    assert isinstance(refused.exception, ToolDeniedError)
    assert "classified" not in str([m.text for m in response.messages])
    await host.aclose()


async def test_the_denied_list_is_read_at_call_time(tmp_path, fake_openai):
    """Governance "at call time": a cached agent obeys a denied list changed after it was built."""
    definition = AgentDefinition(id="g", tools=["current_datetime", "list_directory"])
    host = ConfiguredHost(tmp_path, config(fake_openai), [definition])
    agent = await host.get_agent("g")
    host.config.host.deny_tools.append("current_datetime")
    assert await host.get_agent("g") is agent
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("current_datetime", {}, "c1")]))
    response = await agent.run("time?")
    assert fake_openai.requests[0].tool_names == ["list_directory"] and len(fake_openai.requests) == 1
    assert isinstance(response.messages[-1].function_results[0].exception, ToolDeniedError)
    await host.aclose()


async def test_disallowed_egress_tools_are_omitted_and_refused(tmp_path, fake_openai, monkeypatch):
    """"It omits missing, denied, and disallowed egress tools" — a `[tools.NAME] egress = true` tool under
    `[host] allow_egress = false`."""
    (tmp_path / "nettools.py").write_text(textwrap.dedent('''
        CALLS = []

        def fetch(url: str) -> str:
            """Fetches a URL."""
            CALLS.append(url)
            return "page"
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    tools = {"fetch": {"callable": "nettools:fetch", "egress": True}}
    definition = AgentDefinition(id="e", tools=["fetch", "current_datetime"])
    host = ConfiguredHost(tmp_path, config(fake_openai, tools=tools, host={"allow_egress": False}), [definition])
    agent = await host.get_agent("e")
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("fetch", {"url": "https://example.org"}, "c1")]))
    response = await agent.run("fetch")
    import nettools

    assert fake_openai.requests[0].tool_names == ["current_datetime"]
    assert nettools.CALLS == []
    assert "sends data off this machine" in response.messages[-1].function_results[0].result
    host.config.host.allow_egress = True  # the same cached agent, the policy read again
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("fetch", {"url": "https://example.org"}, "c2")]), Reply(text="ok"))
    assert (await agent.run("fetch")).text == "ok"
    assert fake_openai.requests[1].tool_names == ["fetch", "current_datetime"] and nettools.CALLS == ["https://example.org"]
    await host.aclose()


async def test_a_streamed_run_refuses_a_denied_call_too(openai_client, fake_openai):
    """The streaming tool loop (what editor and terminal runs use) checks the policy before each call, even for a
    tool a provider without the policy offered: the refused call is not run, its result is streamed, and no
    further model request is made."""
    runs = []
    secret = function_from_callable(lambda: runs.append(1) or "s", name="secret", description="Secret.")
    other = function_from_callable(lambda: "o", name="other", description="Other.")
    orchestrator = AgentOrchestrator()
    orchestrator.sync_tools([secret, other])
    agent = await orchestrator.get_or_create_agent(make_request(
        AgentDefinition(id="st"), openai_client,
        [AgentToolProvider(lambda: ["secret", "other"], lambda: orchestrator.tools)],
        tool_policy=ToolPolicy(denied=lambda: ["secret"])))
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("secret", {}, "c1")]))
    updates = [u async for u in agent.run_streaming("go")]
    results = [c for u in updates if u.role == "tool" for c in u.contents]
    assert fake_openai.requests[0].tool_names == ["secret", "other"] and len(fake_openai.requests) == 1
    assert runs == [] and isinstance(results[0].exception, ToolDeniedError)


async def test_calls_after_a_refused_one_in_the_same_round_do_not_run():
    """A refusal ends the loop as a terminating call does (`HaltFunctionCallingAfterTermination`): the calls after
    it in that round do not run and get no result, and the model is not asked again."""
    runs = []
    ok = function_from_callable(lambda: runs.append("ok") or "fine", name="ok", description="ok")
    bad = function_from_callable(lambda: runs.append("bad") or "never", name="bad", description="bad")
    both = ChatResponse([ChatMessage("assistant", [FunctionCallContent("c0", "ok", {}), FunctionCallContent("c1", "bad", {}),
                                                   FunctionCallContent("c2", "ok", {})])])
    client = ScriptedChatClient(both, "unused")
    orchestrator = AgentOrchestrator()
    orchestrator.sync_tools([ok, bad])
    policy = ToolPolicy(denied=lambda: {"bad"})
    agent = await orchestrator.get_or_create_agent(make_request(
        AgentDefinition(id="r"), client, [AgentToolProvider(lambda: ["ok", "bad"], lambda: orchestrator.tools)],
        tool_policy=policy))
    response = await agent.run("go")
    results = response.messages[-1].function_results
    assert [r.call_id for r in results] == ["c0", "c1"] and runs == ["ok"]
    assert results[0].result == "fine" and results[1].result.startswith("Denied")
    assert len(client.requests) == 1 and client.replies == ["unused"]


# -- the run scope -------------------------------------------------------------------------------


class CountingScopes:
    def __init__(self) -> None:
        self.entered: list[str] = []
        self.exited: list[str] = []

    def create_scope(self, definition: AgentDefinition):
        @contextlib.asynccontextmanager
        async def scope():
            self.entered.append(definition.id)
            try:
                yield
            finally:
                self.exited.append(definition.id)
        return scope()


@pytest.mark.parametrize("streaming", [False, True])
async def test_the_run_scope_is_entered_once_per_run(openai_client, fake_openai, streaming):
    """"compose ... the repeated-call guard, and the optional IAgentRunScopeFactory": the scope wraps the run,
    so a run with two tool rounds (three model calls) enters it once."""
    tick = function_from_callable(lambda n: f"tick {n}", name="tick", description="Ticks.")
    orchestrator = AgentOrchestrator()
    orchestrator.sync_tools([tick])
    scopes = CountingScopes()
    agent = await orchestrator.get_or_create_agent(make_request(
        AgentDefinition(id="s"), openai_client, [AgentToolProvider(lambda: ["tick"], lambda: orchestrator.tools)],
        run_scope_factory=scopes))
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("tick", {"n": 1})]), Reply(tool_calls=[ToolCall("tick", {"n": 2})]),
                        Reply(text="done"))
    if streaming:
        assert "done" in "".join([u.text async for u in agent.run_streaming("go")])
    else:
        assert (await agent.run("go")).text == "done"
    assert len(fake_openai.requests) == 3
    assert scopes.entered == ["s"] and scopes.exited == ["s"]


# -- interfaces a host can swap ------------------------------------------------------------------


class InMemoryRepository(ISharedAgentPersonalContextRepository):
    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    async def get(self, agent_id: str) -> str | None:
        return self.texts.get(agent_id)

    async def save(self, agent_id: str, content: str) -> None:
        self.texts[agent_id] = content

    async def delete(self, agent_id: str) -> None:
        self.texts.pop(agent_id, None)


async def test_a_host_takes_another_personal_context_repository(tmp_path, fake_openai):
    """"The ISharedAgentPersonalContextRepository contract keeps this persistence independent from host storage
    policy." — a host given another repository reads `user_context` from it, and writes no file."""
    repository = InMemoryRepository()
    await repository.save("team.bot", "Prefers tea.")
    definition = AgentDefinition(id="team.bot", shared=True, instructions="Context: {{ user_context }}")
    host = ConfiguredHost(tmp_path, config(fake_openai, host={"user_id": "alice"}), [definition],
                          personal_repository=repository)
    fake_openai.enqueue(Reply(text="ok"))
    await (await host.get_agent("team.bot")).run("hi")
    assert fake_openai.requests[0].messages[0]["content"].endswith("\nContext: Prefers tea.\n")
    assert not (tmp_path / ".oscova").exists()
    assert isinstance(SharedAgentPersonalContextRepository(str(tmp_path)), ISharedAgentPersonalContextRepository)
    await host.aclose()


async def test_a_host_takes_another_orchestrator(tmp_path, fake_openai):
    """"The supported entry points are IAgentOrchestrator, its default AgentOrchestrator, and AgentBuildRequest."
    — a host built over another IAgentOrchestrator (here one that records builds) uses it."""

    class Recording(IAgentOrchestrator):
        def __init__(self) -> None:
            self.inner = AgentOrchestrator()
            self.built: list[str] = []

        @property
        def tools(self):
            return self.inner.tools

        def sync_tools(self, tools) -> None:
            self.inner.sync_tools(tools)

        def evict_agent(self, agent_id: str) -> bool:
            return self.inner.evict_agent(agent_id)

        def invalidate_all_agents(self) -> None:
            self.inner.invalidate_all_agents()

        def invalidate_all(self) -> None:
            self.inner.invalidate_all()

        async def get_or_create_agent(self, request):
            self.built.append(request.agent_definition.id)
            return await self.inner.get_or_create_agent(request)

    orchestrator = Recording()
    host = ConfiguredHost(tmp_path, config(fake_openai), [AgentDefinition(id="x", tools=["current_datetime"])],
                          orchestrator=orchestrator)
    fake_openai.enqueue(Reply(text="ok"))
    assert (await (await host.get_agent("x")).run("hi")).text == "ok"
    assert orchestrator.built == ["x"] and "current_datetime" in orchestrator.tools
    assert isinstance(AgentOrchestrator(), IAgentOrchestrator)
    await host.aclose()


# -- the guards, in the seed's order ---------------------------------------------------------------
# (That identical calls which succeed are still stopped by the repeated-call guard is
# test_function_invocation.py's test_the_repeated_call_guard_stops_the_loop.)


async def build(client, tools, workspaces=()):
    orchestrator = AgentOrchestrator()
    orchestrator.sync_tools(tools)
    names = [t.name for t in tools]
    return await orchestrator.get_or_create_agent(make_request(
        AgentDefinition(id="worker"), client, [AgentToolProvider(lambda: names, lambda: orchestrator.tools)],
        workspaces=lambda d: list(workspaces)))


async def test_a_tool_failing_identically_reaches_the_consecutive_error_limit(openai_client, fake_openai):
    """"MaximumConsecutiveErrorsPerRequest = 3." and "A tool loop stops early: check the three-error limit,
    repeated-call guard, ... and the original application-side exception." — the repeated-call guard does not
    stop a call that keeps failing with the same arguments: the error limit does, and the original exception
    itself reaches the caller."""
    runs = []

    def broken(key: str) -> str:
        """Always fails."""
        runs.append(key)
        raise OSError("disk on fire")

    fake_openai.responder = lambda body: Reply(tool_calls=[ToolCall("broken", {"key": "same"})])
    agent = await build(openai_client, [function_from_callable(broken)])
    with pytest.raises(OSError, match="disk on fire") as raised:
        await agent.run("go")
    assert tool_failure(raised.value) is not None
    assert runs == ["same"] * 4 and len(fake_openai.requests) == 4


async def test_identical_refused_workspace_calls_end_at_the_error_limit(openai_client, fake_openai, tmp_path):
    """"MaximumIterationsPerRequest = 40. MaximumConsecutiveErrorsPerRequest = 3." — a path refused by workspace
    validation is a failed call: three refusals reach the model, the fourth refusal itself ends the run instead
    of 40 rounds (41 model requests)."""
    (tmp_path / "ws").mkdir()
    read_file = builtin_tools(BuiltinToolContext())["read_file"]
    fake_openai.responder = lambda body: Reply(tool_calls=[ToolCall("read_file", {"path": "../secret.txt"})])
    agent = await build(openai_client, [read_file], workspaces=[str(tmp_path / "ws")])
    with pytest.raises(ToolCallRefusedError, match="outside the agent's workspaces"):
        await agent.run("read")
    assert len(fake_openai.requests) == 4
    assert tool_results(fake_openai.requests[3]) == ["Access denied: the path is outside the agent's workspaces."] * 3


# -- the public surface ----------------------------------------------------------------------------


def test_the_public_providers_are_exported_from_the_package():
    """"Oscova's public providers include EnvironmentContextProvider, AgentPersonalContextProvider,
    AgentToolProvider, ToolSearchProvider, AgentAsToolProvider, VisionToolProvider, and MemoryContextProvider." """
    from oscova_runtime import providers

    for name in ["EnvironmentContextProvider", "AgentPersonalContextProvider", "AgentToolProvider",
                 "ToolSearchProvider", "AgentAsToolProvider", "VisionToolProvider", "MemoryContextProvider"]:
        assert getattr(oscova_runtime, name) is getattr(providers, name)
        assert name in oscova_runtime.__all__
    assert oscova_runtime.IAgentOrchestrator is IAgentOrchestrator
