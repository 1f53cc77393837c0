"""Seed *Agent Runtime*: the build request, build sequence, cache rules, invalidation and failure rules."""

from __future__ import annotations

import asyncio

import pytest
from conftest import Reply, ScriptedChatClient, ToolCall, make_request
from oscova_runtime.agent import ChatClientAgentOptions
from oscova_runtime.context import AIContextProvider
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.messages import ChatOptions
from oscova_runtime.orchestrator import AgentBuildRequest, AgentOrchestrator
from oscova_runtime.providers import AgentAsToolProvider
from oscova_runtime.reducer import SummarizingChatReducer
from oscova_runtime.tools import function_from_callable


class Counting:
    """Factories that record every call, in order."""

    def __init__(self, client=None):
        self.client = client or ScriptedChatClient()
        self.log: list[tuple[str, str, bool]] = []

    def providers(self, definition, ctx):
        self.log.append(("providers", definition.id, ctx.requested))
        tools = [AgentAsToolProvider(definition.agent_tools, ctx.dependencies)] if definition.agent_tools else []
        return tools

    def chat(self, definition, ctx):
        self.log.append(("chat", definition.id, ctx.requested))
        return self.client

    def request(self, definition, available=None, **kwargs):
        return AgentBuildRequest(
                chat_client_factory=self.chat, agent_definition=definition,
                available_agent_definitions=available or [definition],
                context_provider_factory=self.providers,
                workspace_resolver=lambda d: (self.log.append(("workspaces", d.id, True)) or []),
                **kwargs)


PLAIN = AgentDefinition(id="plain", description="d")


async def test_a_cache_hit_calls_no_factory():
    """"A cache hit returns before invoking the chat-client, provider, reducer, or workspace factories." """
    orchestrator, f = AgentOrchestrator(), Counting()
    reducers = []
    definition = AgentDefinition(id="c", compaction=True)
    first = await orchestrator.get_or_create_agent(
        f.request(definition, chat_reducer_factory=lambda d, c: reducers.append(d) or None))
    calls = len(f.log)
    second = await orchestrator.get_or_create_agent(
        f.request(definition, chat_reducer_factory=lambda d, c: reducers.append(d) or None))
    assert second is first and len(f.log) == calls and len(reducers) == 1


async def test_the_definition_id_is_the_cache_key():
    orchestrator, f = AgentOrchestrator(), Counting()
    a = await orchestrator.get_or_create_agent(f.request(PLAIN))
    b = await orchestrator.get_or_create_agent(f.request(PLAIN.model_copy(update={"name": "renamed"})))
    assert a is b and orchestrator.agents.ids() == ["plain"]


@pytest.mark.parametrize("bypass", [
    {"configure_builder": lambda b: b},
    {"configure_options": lambda o: o},
    {"configure_agent_builder": lambda b, d: b},
    {"bypass_requested_agent_cache": True},
])
async def test_each_bypass_condition_builds_a_fresh_agent_and_keeps_the_cached_one(bypass):
    """"A requested agent is reused by ID only when all of these are true" (ConfigureBuilder, ConfigureOptions,
    ConfigureAgentBuilder null; BypassRequestedAgentCache false)."""
    orchestrator, f = AgentOrchestrator(), Counting()
    cached = await orchestrator.get_or_create_agent(f.request(PLAIN))
    fresh = await orchestrator.get_or_create_agent(f.request(PLAIN, **bypass))
    assert fresh is not cached
    assert orchestrator.agents.get("plain") is cached  # "without replacing an existing cached one"


async def test_an_exposed_definition_is_never_reused_as_requested_agent():
    """"the definition is not itself exposed as a tool." """
    orchestrator, f = AgentOrchestrator(), Counting()
    exposed = AgentDefinition(id="helper", exposed_as_tool=True)
    a = await orchestrator.get_or_create_agent(f.request(exposed))
    b = await orchestrator.get_or_create_agent(f.request(exposed))
    assert a is not b


async def test_build_sequence_dependencies_depth_first_before_the_parent():
    """"Build each currently visible exposed dependency before its parent. Nested dependencies are
    depth-first" and "Call ContextProviderFactory, then ChatClientFactory" """
    leaf = AgentDefinition(id="leaf", exposed_as_tool=True)
    mid = AgentDefinition(id="mid", exposed_as_tool=True, agent_tools=["leaf"])
    other = AgentDefinition(id="other", exposed_as_tool=True)
    top = AgentDefinition(id="top", agent_tools=["mid", "other"])
    orchestrator, f = AgentOrchestrator(), Counting()
    await orchestrator.get_or_create_agent(f.request(top, available=[top, mid, leaf, other]))
    builds = [(kind, agent, requested) for kind, agent, requested in f.log if kind != "workspaces"]
    assert builds == [
        ("providers", "leaf", False), ("chat", "leaf", False),
        ("providers", "mid", False), ("chat", "mid", False),
        ("providers", "other", False), ("chat", "other", False),
        ("providers", "top", True), ("chat", "top", True),
    ]


async def test_only_visible_exposed_dependencies_are_built_and_missing_ones_omitted():
    """"Resolves referenced agents that are both present and marked IsExposedAsTool." """
    hidden = AgentDefinition(id="hidden")
    shown = AgentDefinition(id="shown", exposed_as_tool=True)
    top = AgentDefinition(id="top", agent_tools=["hidden", "absent", "shown"])
    orchestrator, f = AgentOrchestrator(), Counting()
    agent = await orchestrator.get_or_create_agent(f.request(top, available=[top, hidden, shown]))
    assert [a for kind, a, _ in f.log if kind != "workspaces"] == ["shown", "shown", "top", "top"]
    assert [t.name for t in agent.context_providers[0].tools] == ["shown"]
    assert orchestrator.agents.ids() == ["shown", "top"]
    alone = await AgentOrchestrator().get_or_create_agent(f.request(top, available=[top, hidden]))
    assert alone.context_providers[0].tools == ()


async def test_the_cycle_guard_stops_recursion():
    """"a per-build guard stops cycles from recursing forever." """
    a = AgentDefinition(id="a", exposed_as_tool=True, agent_tools=["b"])
    b = AgentDefinition(id="b", exposed_as_tool=True, agent_tools=["a"])
    top = AgentDefinition(id="top", agent_tools=["a"])
    orchestrator, f = AgentOrchestrator(), Counting()
    agent = await asyncio.wait_for(orchestrator.get_or_create_agent(f.request(top, available=[top, a, b])), 5)
    assert [x for k, x, _ in f.log if k == "chat"] == ["b", "a", "top"]
    assert [t.name for t in agent.context_providers[0].tools] == ["a"]
    assert orchestrator.agents.get("b").context_providers[0].tools == ()


async def test_a_failed_requested_build_is_not_cached_while_a_finished_dependency_stays():
    """"No newly failed requested instance is cached. An exposed dependency that finished successfully before
    a later parent failure can remain cached." """
    child = AgentDefinition(id="child", exposed_as_tool=True)
    parent = AgentDefinition(id="parent", agent_tools=["child"])
    f = Counting()

    def failing_chat(definition, ctx):
        if definition.id == "parent":
            raise ConnectionError("factory failed")
        return f.client

    orchestrator = AgentOrchestrator()
    request = f.request(parent, available=[parent, child])
    request.chat_client_factory = failing_chat
    with pytest.raises(ConnectionError, match="factory failed"):
        await orchestrator.get_or_create_agent(request)
    assert "parent" not in orchestrator.agents and "child" in orchestrator.agents


@pytest.mark.parametrize("where", ["providers", "chat", "reducer", "options", "builder", "agent builder"])
async def test_factory_and_customizer_exceptions_propagate(where):
    """"Factory, reducer, option, builder, and framework construction exceptions propagate to the caller." — every
    callback of the request, `configure_agent_builder` (every built agent's builder) too."""
    f = Counting()

    def boom(*args):
        raise LookupError(where)

    definition = AgentDefinition(id="x", compaction=True)
    request = f.request(definition)
    if where == "providers":
        request.context_provider_factory = boom
    elif where == "chat":
        request.chat_client_factory = boom
    elif where == "reducer":
        request.chat_reducer_factory = boom
    elif where == "options":
        request.configure_options = boom
    elif where == "builder":
        request.configure_builder = boom
    else:
        request.configure_agent_builder = boom
    orchestrator = AgentOrchestrator()
    with pytest.raises(LookupError, match=where):
        await orchestrator.get_or_create_agent(request)
    assert len(orchestrator.agents) == 0


async def test_an_agent_builder_exception_for_a_dependency_propagates():
    """`configure_agent_builder` "Adjusts every built agent, including exposed dependencies", and its exceptions
    propagate from a dependency's build as well: the requested agent is not built, nor cached."""
    child = AgentDefinition(id="child", exposed_as_tool=True)
    parent = AgentDefinition(id="parent", agent_tools=["child"])
    f = Counting()

    def customize(builder, built):
        if built.id == "child":
            raise LookupError("the child's builder")
        return builder

    orchestrator = AgentOrchestrator()
    with pytest.raises(LookupError, match="the child's builder"):
        await orchestrator.get_or_create_agent(f.request(parent, available=[parent, child],
                                                         configure_agent_builder=customize))
    assert "parent" not in orchestrator.agents and [a for kind, a, _ in f.log if kind == "chat"] == ["child"]


async def test_a_null_provider_list_violates_the_contract():
    """"a null provider list violates the request contract. Return [] explicitly" """
    f = Counting()
    request = f.request(PLAIN)
    request.context_provider_factory = lambda d, ctx: None
    with pytest.raises(Exception, match=r"return \[\]"):
        await AgentOrchestrator().get_or_create_agent(request)


async def test_a_null_provider_entry_fails_the_build():
    f = Counting()
    request = f.request(PLAIN)
    request.context_provider_factory = lambda d, ctx: [None]
    with pytest.raises(Exception, match="null"):
        await AgentOrchestrator().get_or_create_agent(request)


async def test_concurrent_misses_converge_on_one_instance():
    """"concurrent cache misses converge on one cached instance, but more than one caller may execute build
    factories" """
    f = Counting()

    async def slow_chat(definition, ctx):
        f.log.append(("chat", definition.id, True))
        await asyncio.sleep(0.01)
        return f.client

    requests = []
    for _ in range(5):
        r = f.request(PLAIN)
        r.chat_client_factory = slow_chat
        requests.append(r)
    orchestrator = AgentOrchestrator()
    agents = await asyncio.gather(*(orchestrator.get_or_create_agent(r) for r in requests))
    assert len({id(a) for a in agents}) == 1 and orchestrator.agents.get("plain") is agents[0]
    assert sum(1 for k, *_ in f.log if k == "chat") == 5


async def test_configure_agent_builder_rebuilds_and_replaces_exposed_dependencies():
    """"ConfigureAgentBuilder: Adjusts every built agent, including exposed dependencies. Its presence rebuilds
    and replaces exposed dependencies for the request." """
    child = AgentDefinition(id="child", exposed_as_tool=True)
    parent = AgentDefinition(id="parent", agent_tools=["child"])
    orchestrator, f = AgentOrchestrator(), Counting()
    await orchestrator.get_or_create_agent(f.request(parent, available=[parent, child]))
    old_child = orchestrator.agents.get("child")
    seen = []
    await orchestrator.get_or_create_agent(
        f.request(parent, available=[parent, child], configure_agent_builder=lambda b, d: seen.append(d.id) or b))
    assert seen == ["child", "parent"]
    assert orchestrator.agents.get("child") is not old_child


async def test_configure_builder_and_options_apply_to_the_requested_agent_only():
    """"ConfigureBuilder and ConfigureOptions apply only to the requested agent." """
    child = AgentDefinition(id="child", exposed_as_tool=True)
    parent = AgentDefinition(id="parent", agent_tools=["child"])
    orchestrator, f = AgentOrchestrator(), Counting()
    builders, options = [], []
    await orchestrator.get_or_create_agent(f.request(
        parent, available=[parent, child],
        configure_builder=lambda b: builders.append(b) or b,
        configure_options=lambda o: options.append(o.id) or o))
    assert len(builders) == 1 and options == ["parent"]


async def test_options_carry_the_definition_and_cloned_default_chat_options():
    """"Create ChatClientAgentOptions with the definition's ID, name, description, ordered providers, and cloned
    default ChatOptions." / "The runtime clones the result before assigning it." """
    shared = ChatOptions(temperature=0.2, stop=["x"])
    orchestrator, f = AgentOrchestrator(), Counting()
    definition = AgentDefinition(id="o", name="Oh", description="desc")
    agent = await orchestrator.get_or_create_agent(f.request(definition, chat_options_resolver=lambda d: shared))
    assert (agent.id, agent.name, agent.description) == ("o", "Oh", "desc")
    assert agent.chat_options.temperature == 0.2 and agent.chat_options is not shared
    agent.chat_options.stop.append("y")
    assert shared.stop == ["x"]


async def test_definition_chat_options_are_used_when_no_resolver():
    orchestrator, f = AgentOrchestrator(), Counting()
    agent = await orchestrator.get_or_create_agent(
        f.request(AgentDefinition(id="t", chat_options={"temperature": 0.5, "max_tokens": 9})))
    assert (agent.chat_options.temperature, agent.chat_options.max_tokens) == (0.5, 9)


async def test_compaction_attaches_the_summarizing_reducer_or_the_factory_result():
    """"A null factory uses Oscova's summarizing reducer. A factory may return null to omit a custom reducer." """
    f = Counting()
    definition = AgentDefinition(id="r", compaction={"keep_last": 4})
    agent = await AgentOrchestrator().get_or_create_agent(f.request(definition))
    assert isinstance(agent.chat_history_provider.reducer, SummarizingChatReducer)
    assert agent.chat_history_provider.reducer.keep_last == 4
    none = await AgentOrchestrator().get_or_create_agent(f.request(definition, chat_reducer_factory=lambda d, c: None))
    assert none.chat_history_provider.reducer is None
    plain = await AgentOrchestrator().get_or_create_agent(f.request(AgentDefinition(id="p")))
    assert plain.chat_history_provider.reducer is None


async def test_evict_and_invalidate_operations():
    """EvictAgent removes one; InvalidateAllAgents keeps tools; InvalidateAll clears both; SyncTools keeps agents."""
    orchestrator, f = AgentOrchestrator(), Counting()
    tool = function_from_callable(lambda: "x", name="t", description="t")
    orchestrator.sync_tools([tool])
    a = await orchestrator.get_or_create_agent(f.request(PLAIN))
    await orchestrator.get_or_create_agent(f.request(AgentDefinition(id="second")))
    orchestrator.sync_tools({"u": tool})
    assert orchestrator.agents.get("plain") is a and list(orchestrator.tools) == ["u"]
    assert orchestrator.evict_agent("plain") and orchestrator.agents.ids() == ["second"]
    assert await orchestrator.get_or_create_agent(f.request(PLAIN)) is not a
    orchestrator.invalidate_all_agents()
    assert len(orchestrator.agents) == 0 and list(orchestrator.tools) == ["u"]
    await orchestrator.get_or_create_agent(f.request(PLAIN))
    orchestrator.invalidate_all()
    assert len(orchestrator.agents) == 0 and dict(orchestrator.tools) == {}


async def test_agent_as_tool_snapshots_children_until_the_parent_is_rebuilt(openai_client, fake_openai):
    """"AgentAsToolProvider captures the exposed agents available when that provider is created. Rebuild the
    caller after changing its referenced agents" — and the child runs through the real client."""
    child = AgentDefinition(id="child", exposed_as_tool=True, description="Answers child questions.")
    parent = AgentDefinition(id="parent", agent_tools=["child"])
    orchestrator = AgentOrchestrator()

    def request(d):
        return make_request(d, openai_client, lambda d, ctx: [AgentAsToolProvider(d.agent_tools, ctx.dependencies)]
                            if d.agent_tools else [], available=[parent, child])

    agent = await orchestrator.get_or_create_agent(request(parent))
    snapshot = agent.context_providers[0].tools
    orchestrator.evict_agent("child")
    again = await orchestrator.get_or_create_agent(request(parent))
    assert again is agent and again.context_providers[0].tools is snapshot
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("child", {"query": "hi child"}, "c1")]),
                        Reply(text="child says hi"), Reply(text="parent done"))
    response = await agent.run("ask the child")
    assert response.text == "parent done"
    assert fake_openai.requests[0].tool_names == ["child"]
    assert fake_openai.requests[0].body["tools"][0]["function"]["description"] == "Answers child questions."
    assert fake_openai.requests[1].messages == [{"role": "user", "content": "hi child"}]
    assert fake_openai.requests[2].messages[-1]["content"] == "child says hi"


async def test_cancelling_a_run_does_not_evict_and_evicting_does_not_cancel(openai_client, fake_openai):
    """"cancelling a run does not remove its built agent from the cache. evicting or invalidating an agent does
    not cancel a run already using that instance." """
    orchestrator = AgentOrchestrator()
    agent = await orchestrator.get_or_create_agent(make_request(PLAIN, openai_client))
    fake_openai.enqueue(Reply(text="slow", delay=0.3))
    task = asyncio.create_task(agent.run("x"))
    await asyncio.sleep(0.05)
    orchestrator.invalidate_all()
    assert (await task).text == "slow"
    fake_openai.enqueue(Reply(text="never", delay=2))
    agent = await orchestrator.get_or_create_agent(make_request(PLAIN, openai_client))
    task = asyncio.create_task(agent.run("y"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert orchestrator.agents.get("plain") is agent


# -- behaviours whose tests could not fail ---------------------------------------------------------------


def test_the_package_exports_the_orchestrator_and_the_build_request():
    """"The supported entry points are IAgentOrchestrator, its default AgentOrchestrator, and AgentBuildRequest." """
    import oscova_runtime
    from oscova_runtime import orchestrator

    for name in ("AgentOrchestrator", "AgentBuildRequest", "IAgentOrchestrator"):
        assert name in oscova_runtime.__all__
        assert getattr(oscova_runtime, name) is getattr(orchestrator, name)


async def test_the_workspace_resolver_is_called_with_the_definition_being_built(openai_client, fake_openai, tmp_path):
    """"WorkspaceResolver: Returns the current allowed directories for each definition": a dependency's tool call is
    checked against the dependency's own grants, not the requested agent's."""
    (tmp_path / "child").mkdir()
    (tmp_path / "child" / "c.txt").write_text("child data")
    (tmp_path / "parent").mkdir()
    (tmp_path / "parent" / "p.txt").write_text("parent data")
    from oscova_runtime.tools import BuiltinToolContext, builtin_tools

    read_file = builtin_tools(BuiltinToolContext())["read_file"]
    from oscova_runtime.providers import AgentToolProvider

    child = AgentDefinition(id="child", exposed_as_tool=True)
    parent = AgentDefinition(id="parent", agent_tools=["child"])
    asked: list[str] = []

    def resolver(definition):
        asked.append(definition.id)
        return [str(tmp_path / definition.id)]

    def providers(definition, ctx):
        if definition.agent_tools:
            return [AgentAsToolProvider(definition.agent_tools, ctx.dependencies)]
        return [AgentToolProvider(lambda: ["read_file"], lambda: {"read_file": read_file})]

    agent = await AgentOrchestrator().get_or_create_agent(make_request(
        parent, openai_client, providers, available=[parent, child], workspaces=resolver))
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("child", {"query": "read"}, "p1")]),
                        Reply(tool_calls=[ToolCall("read_file", {"path": "c.txt"}, "k1"),
                                          ToolCall("read_file", {"path": str(tmp_path / "parent" / "p.txt")}, "k2")]),
                        Reply(text="child done"), Reply(text="parent done"))
    assert (await agent.run("go")).text == "parent done"
    child_results = [m["content"] for m in fake_openai.requests[2].messages if m["role"] == "tool"]
    assert child_results[0] == "child data" and child_results[1].startswith("Access denied")
    assert asked == ["parent", "child", "child"]  # the parent's call of its agent tool, then the child's two calls


async def test_configure_options_are_the_options_the_agent_uses(openai_client, fake_openai):
    """"Apply ConfigureOptions to the requested agent." — what it returns (or changes) is what the agent runs with."""
    def replace(options):
        return ChatClientAgentOptions(options.id, "Renamed", options.description,
                                      ChatOptions(instructions="custom", temperature=0.1), options.ai_context_providers)

    def change(options):
        options.chat_options.max_tokens = 9

    replaced = await AgentOrchestrator().get_or_create_agent(make_request(PLAIN, openai_client, configure_options=replace))
    changed = await AgentOrchestrator().get_or_create_agent(make_request(PLAIN, openai_client, configure_options=change))
    fake_openai.enqueue(Reply(text="a"), Reply(text="b"))
    assert replaced.name == "Renamed" and [m.author_name for m in (await replaced.run("hi")).messages] == ["Renamed"]
    await changed.run("hi")
    first, second = fake_openai.requests
    assert first.messages[0] == {"role": "system", "content": "custom"} and first.body["temperature"] == 0.1
    assert second.body["max_tokens"] == 9


async def test_a_cached_dependency_serves_two_parents_and_its_factories_run_once():
    """A dependency is cached like any agent: "A cache hit returns before invoking the chat-client, provider,
    reducer, or workspace factories." — a second parent reuses it."""
    child = AgentDefinition(id="child", exposed_as_tool=True)
    one, two = AgentDefinition(id="one", agent_tools=["child"]), AgentDefinition(id="two", agent_tools=["child"])
    orchestrator, f = AgentOrchestrator(), Counting()
    await orchestrator.get_or_create_agent(f.request(one, available=[one, two, child]))
    await orchestrator.get_or_create_agent(f.request(two, available=[one, two, child]))
    built = [(kind, agent) for kind, agent, _ in f.log if kind != "workspaces"]
    assert built == [("providers", "child"), ("chat", "child"), ("providers", "one"), ("chat", "one"),
                     ("providers", "two"), ("chat", "two")]
    cached = orchestrator.agents.get("child")
    await orchestrator.get_or_create_agent(f.request(one, available=[one, two, child], bypass_requested_agent_cache=True))
    assert orchestrator.agents.get("child") is cached and sum(1 for k, a, _ in f.log if a == "child") == 2


async def test_a_null_chat_client_factory_fails_when_invoked():
    """"The required callbacks have non-nullable contracts. A null callback fails when invoked": the build fails
    at the chat-client step (after the providers), nothing is cached, and a cache hit never invokes it."""
    from oscova_runtime.context import InvalidOperationError

    orchestrator, f = AgentOrchestrator(), Counting()
    request = f.request(PLAIN)
    request.chat_client_factory = None
    with pytest.raises(InvalidOperationError, match="chat_client_factory"):
        await orchestrator.get_or_create_agent(request)
    assert [kind for kind, *_ in f.log] == ["providers"] and len(orchestrator.agents) == 0
    cached = await orchestrator.get_or_create_agent(f.request(PLAIN))
    assert await orchestrator.get_or_create_agent(request) is cached


class CountingReducer:
    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    async def reduce(self, messages):
        self.seen.append([m.text for m in messages])
        return list(messages)[-1:]  # the last message only


async def test_a_reducer_the_factory_returns_is_attached_and_used():
    """"ChatReducerFactory: Creates a reducer only when the definition enables compaction." — the reducer it
    returns compacts the history when the next run loads it (the framework's default trigger)."""
    reducer = CountingReducer()
    f = Counting(ScriptedChatClient("answer", "second"))
    agent = await AgentOrchestrator().get_or_create_agent(
        f.request(AgentDefinition(id="r", compaction=True), chat_reducer_factory=lambda d, c: reducer))
    assert agent.chat_history_provider.reducer is reducer
    from oscova_runtime.session import AgentSession

    session = AgentSession()
    await agent.run("question", session=session)
    await agent.run("again", session=session)
    assert reducer.seen == [[], ["question", "answer"]]
    assert [m.text for m in f.client.requests[1][0]] == ["answer", "again"]
    assert [m.text for m in agent.chat_history_provider.messages(session)] == ["answer", "again", "second"]


@pytest.mark.parametrize("where", ["dependency", "chat client", "reducer"])
async def test_cancelling_a_build_in_each_factory_stops_it_and_caches_nothing(where):
    """"The cancellation token passed to GetOrCreateAgentAsync flows through exposed-dependency builds,
    context-provider creation, chat-client creation, and reducer creation." """
    started = asyncio.Event()

    async def slow(*args):
        started.set()
        await asyncio.sleep(30)

    child = AgentDefinition(id="child", exposed_as_tool=True)
    parent = AgentDefinition(id="parent", agent_tools=["child"], compaction=True)
    f = Counting()
    request = f.request(parent, available=[parent, child])
    if where == "dependency":
        request.context_provider_factory = lambda d, ctx: slow() if d.id == "child" else f.providers(d, ctx)
    elif where == "chat client":
        request.chat_client_factory = slow
    else:
        request.chat_reducer_factory = slow
    orchestrator = AgentOrchestrator()
    task = asyncio.create_task(orchestrator.get_or_create_agent(request))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert "parent" not in orchestrator.agents
    assert ("child" in orchestrator.agents) is (where == "reducer")  # a finished dependency may stay cached


async def test_a_cache_hit_has_no_asynchronous_work_to_cancel():
    """"A cache hit has no asynchronous build work to cancel." — it completes without ever suspending."""
    orchestrator, f = AgentOrchestrator(), Counting()
    cached = await orchestrator.get_or_create_agent(f.request(PLAIN))
    coroutine = orchestrator.get_or_create_agent(f.request(PLAIN))
    with pytest.raises(StopIteration) as finished:
        coroutine.send(None)
    assert finished.value.value is cached


class Disposable(AIContextProvider):
    """A provider with every kind of close method, each recording that it ran."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def aclose(self) -> None:
        self.log.append("aclose")

    def close(self) -> None:
        self.log.append("close")

    def dispose(self) -> None:
        self.log.append("dispose")

    async def __aexit__(self, *exc) -> None:
        self.log.append("__aexit__")


class ClosableClient(ScriptedChatClient):
    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log

    async def aclose(self) -> None:
        self.log.append("client aclose")

    def close(self) -> None:
        self.log.append("client close")


async def test_evicting_and_invalidating_close_no_chat_client_and_no_provider():
    """"Cache eviction removes references. It does not call Dispose on chat clients or context providers." and
    "AgentOrchestrator does not dispose context providers when an agent is evicted." """
    import gc

    log: list[str] = []
    child = AgentDefinition(id="child", exposed_as_tool=True)
    parent = AgentDefinition(id="parent", agent_tools=["child"])
    orchestrator = AgentOrchestrator()

    def request():
        return make_request(parent, ClosableClient(log), lambda d, ctx: [Disposable(log)], available=[parent, child])

    await orchestrator.get_or_create_agent(request())
    assert orchestrator.evict_agent("parent") and orchestrator.evict_agent("child")
    await orchestrator.get_or_create_agent(request())
    orchestrator.invalidate_all_agents()
    await orchestrator.get_or_create_agent(request())
    orchestrator.invalidate_all()
    for _ in range(5):  # let anything the eviction scheduled run, and the dropped agents be collected
        gc.collect()
        await asyncio.sleep(0)
    assert log == [] and len(orchestrator.agents) == 0
