"""The providers at run time, as the seed states them (statements once without a test): the
conditions a provider needs, the post-run override, cancellation, ownership and eviction, what is read again
on every run, the variables bound, builds and the observer. Each test fails when its behaviour breaks.

Runs go through the real `openai` client and the local OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import os
import platform
import re
import tempfile

import pytest
from conftest import Reply, ScriptedChatClient, ToolCall, make_request
from oscova_runtime import build_minimal_agent
from oscova_runtime.chat_client import ChatClientError, OpenAIChatClient
from oscova_runtime.context import AIContext, AIContextProvider, InvokedContext, InvokingContext
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.host import ConfiguredHost
from oscova_runtime.host_config import HostConfig
from oscova_runtime.messages import ChatMessage, MessageSourceType
from oscova_runtime.observer import (
    AgentRunObserverAccessor,
    AgentTaskRun,
    AgentTaskRunObserver,
    use_agent_run_observer,
)
from oscova_runtime.orchestrator import AgentOrchestrator
from oscova_runtime.providers import (
    AgentToolProvider,
    EnvironmentContextProvider,
    SharedAgentPersonalContextRepository,
    ToolSearchProvider,
)
from oscova_runtime.providers.personal import PersonalContextTooLargeError
from oscova_runtime.session import AgentSession
from oscova_runtime.templates import TemplateRenderer
from oscova_runtime.tools import function_from_callable


def config(fake_openai, **sections) -> HostConfig:
    data = {"models": {"default": {"model": "fake-model", "base_url": fake_openai.base_url}}, **sections}
    return HostConfig.model_validate(data)


def ctx() -> InvokingContext:
    return InvokingContext(None, AgentSession(), AIContext())


def named(name: str, result: str = "x"):
    return function_from_callable(lambda: result, name=name, description=f"The {name} tool.")


# -- provider conditions -----------------------------------------------------------------------------


@pytest.mark.parametrize("user_id", [None, "alice"])
async def test_skills_memory_and_library_need_a_user_id(tmp_path, fake_openai, user_id):
    """"Skills ... Requested active agent only, with a user ID and at least one assigned skill." / "Memory ...
    with a user ID and memory enabled." / "Library ... with a user ID and the resolved read-only Library grant." """
    (tmp_path / "skills" / "triage").mkdir(parents=True)
    (tmp_path / "skills" / "triage" / "SKILL.md").write_text("---\ndescription: Sort bugs\n---\nStep 1.")
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "guide.md").write_text("guide")
    host_section = {"library": True, **({"user_id": user_id} if user_id else {})}
    definition = AgentDefinition(id="u", skills=["triage"], memory=True)
    host = ConfiguredHost(tmp_path, config(fake_openai, host=host_section), [definition])
    fake_openai.enqueue(Reply(text="ok"))
    await (await host.get_agent("u")).run("hi")
    request = fake_openai.requests[0]
    system = request.messages[0]["content"]
    present = [marker in system for marker in ("## Skills", "<agent_memory>", "read-only Library")]
    tools = {"load_skill", "memory_save", "memory_search", "library_search", "library_read"}
    if user_id:
        assert present == [True, True, True] and tools <= set(request.tool_names)
    else:
        assert present == [False, False, False] and not tools & set(request.tool_names)
    await host.aclose()


# -- the post-run override -----------------------------------------------------------------------


class Inspecting(AIContextProvider):
    """Overrides `invoked_core`: "Override InvokedCoreAsync only when the provider must inspect failures or
    control the default filtering itself." """

    def __init__(self) -> None:
        self.seen: list[InvokedContext] = []
        self.stored: list[InvokedContext] = []

    async def provide_ai_context(self, context):
        return AIContext(messages=[ChatMessage.of("user", "from the provider")])

    async def invoked_core(self, context: InvokedContext) -> None:
        self.seen.append(context)

    async def store_ai_context(self, context):
        self.stored.append(context)


async def test_an_invoked_core_override_receives_the_error_and_the_unfiltered_messages(openai_client, fake_openai):
    provider = Inspecting()
    agent = await AgentOrchestrator().get_or_create_agent(
        make_request(AgentDefinition(id="i"), openai_client, [provider]))
    session = AgentSession()
    fake_openai.enqueue(Reply(text="first"), Reply(status=500, error_message="model down"))
    await agent.run("one", session=session)
    with pytest.raises(ChatClientError):
        await agent.run("two", session=session)
    failed = provider.seen[1]
    assert isinstance(failed.invoke_exception, ChatClientError) and failed.response_messages is None
    sources = [(m.text, m.source.type) for m in failed.request_messages]
    assert sources == [("one", MessageSourceType.CHAT_HISTORY), ("from the provider", MessageSourceType.CHAT_HISTORY),
                       ("first", MessageSourceType.CHAT_HISTORY), ("two", MessageSourceType.EXTERNAL),
                       ("from the provider", MessageSourceType.AI_CONTEXT_PROVIDER)]
    assert provider.seen[0].invoke_exception is None and [m.text for m in provider.seen[0].response_messages] == [
        "first"]
    assert provider.stored == []  # the override replaced the default storage


# -- cancellation --------------------------------------------------------------------------------


async def test_a_cancelled_run_stops_during_the_personal_context_read(tmp_path, fake_openai):
    """"Honor the supplied cancellation token in file, database, HTTP, and other asynchronous work." and "A
    provider exception or cancellation stops the pre-run pipeline. Later providers and the model are not
    invoked." — the run is cancelled while the personal-context repository is waiting on its store (a
    repository whose store never answers; the file repository never waits: a FIFO there is refused)."""

    class Waiting:
        def __init__(self) -> None:
            self.entered = asyncio.Event()
            self.cancelled = False

        async def get(self, agent_id: str) -> str | None:
            self.entered.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
            return None

        async def save(self, agent_id: str, content: str) -> None: ...

        async def delete(self, agent_id: str) -> None: ...

    definition = AgentDefinition(id="shared", shared=True, instructions="{{ user_context }}")
    repository = Waiting()
    host = ConfiguredHost(tmp_path, config(fake_openai, host={"user_id": "alice"}), [definition],
                          personal_repository=repository)
    agent = await host.get_agent("shared")
    task = asyncio.create_task(agent.run("hi"))
    await asyncio.wait_for(repository.entered.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert repository.cancelled and fake_openai.requests == []
    await host.aclose()


# -- ownership -----------------------------------------------------------------------------------


class ClosingClient(ScriptedChatClient):
    def __init__(self) -> None:
        super().__init__()
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


async def test_eviction_drops_references_and_the_owner_closes(tmp_path, fake_openai, monkeypatch):
    """"Cache eviction removes references. It does not call Dispose on chat clients or context providers." and
    "Prefer host-managed IChatClient ... dependencies whose lifetime is at least as long as the built agent." —
    eviction closes nothing; the host closes the clients it created, and not a client it was given."""
    closed: list[OpenAIChatClient] = []
    original = OpenAIChatClient.aclose

    async def spy(self: OpenAIChatClient) -> None:
        closed.append(self)
        await original(self)

    monkeypatch.setattr(OpenAIChatClient, "aclose", spy)
    given = ClosingClient()
    cfg = config(fake_openai)
    cfg.models["other"] = cfg.models["default"].model_copy()
    definitions = [AgentDefinition(id="a"), AgentDefinition(id="b", model="other")]
    host = ConfiguredHost(tmp_path, cfg, definitions, chat_clients={"other": given})
    agent = await host.get_agent("a")
    await host.get_agent("b")
    created = agent.chat_client.get_service(OpenAIChatClient)
    assert isinstance(created, OpenAIChatClient)
    assert host.orchestrator.evict_agent("a")
    host.orchestrator.invalidate_all()
    for _ in range(5):  # let any close the eviction might have scheduled run
        await asyncio.sleep(0)
    assert closed == [] and given.closed == 0
    await host.aclose()
    assert closed == [created] and given.closed == 0


# -- run-time resolution ----------------------------------------------------------------------------


async def test_the_workspace_resolver_is_read_again_on_every_run(tmp_path, fake_openai):
    """"Use EnvironmentContextProvider.FromWorkspaceResolver when grants can change between invocations. The
    resolver is called once per render." — a cached agent sees a grant that appears between two runs."""
    host = ConfiguredHost(tmp_path, config(fake_openai), [AgentDefinition(id="w", workspaces=["data"])])
    agent = await host.get_agent("w")
    fake_openai.enqueue(Reply(text="1"), Reply(text="2"))
    await agent.run("before")
    (tmp_path / "data").mkdir()
    assert await host.get_agent("w") is agent
    await agent.run("after")
    first, second = (r.messages[0]["content"] for r in fake_openai.requests)
    assert first.endswith("- none configured\n")
    assert second.endswith(f"- {(tmp_path / 'data').resolve()}\n")
    await host.aclose()


def test_the_environment_provider_captures_fixed_grants_at_construction(tmp_path):
    """"A changed workspace is missing: use the environment provider's run-time resolver and rebuild any
    provider whose constructor captured old grants." """
    grants = ["/first"]
    provider = EnvironmentContextProvider(TemplateRenderer(tmp_path), grants)
    grants.append("/second")
    assert provider.variables()["workspace_directories"] == "- /first"


async def test_tool_search_snapshots_its_name_lists_and_reads_the_catalogue_each_time():
    """"Its allowed and pinned name lists are constructor snapshots. Actual tool resolution uses the current tool
    catalogue." """
    orchestrator = AgentOrchestrator()
    allowed, pinned = ["pin", "find_me"], ["pin"]
    orchestrator.sync_tools([named("pin", "old"), named("find_me"), named("late")])
    provider = ToolSearchProvider(allowed, pinned, lambda: orchestrator.tools)
    allowed.append("late")
    pinned.append("late")
    assert await provider.search_tools("late") == "No matching tools."
    tools = (await provider.provide_ai_context(ctx())).tools
    assert [t.name for t in tools] == ["search_tools", "pin"]
    orchestrator.sync_tools([named("pin", "new"), named("find_me"), named("late")])
    tools = (await provider.provide_ai_context(ctx())).tools
    assert await tools[1].invoke({}) == "new"


async def test_tools_unlocked_by_search_belong_to_the_cached_provider_instance(tmp_path, fake_openai):
    """"ToolSearchProvider contributes its instructions, search_tools, pinned tools, and tools unlocked for that
    cached provider instance." — an unlock lasts for the later runs of the cached agent (another session too);
    the agent built again after eviction has a new provider, which starts with none unlocked."""
    definition = AgentDefinition(id="s", tool_mode="search", tools=["current_datetime", "read_file"])
    host = ConfiguredHost(tmp_path, config(fake_openai), [definition])
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("search_tools", {"query": "current_datetime"}, "c1")]),
                        Reply(text="found"), Reply(text="again"), Reply(text="rebuilt"))
    cached = await host.get_agent("s")
    await cached.run("find the clock")
    await (await host.get_agent("s")).run("what time is it")
    assert host.orchestrator.evict_agent("s")
    rebuilt = await host.get_agent("s")
    await rebuilt.run("what time is it")
    assert rebuilt is not cached
    offered = [r.tool_names for r in fake_openai.requests]
    # the first run's two requests (its tools are assembled once, before the search), the next run, the rebuilt one
    assert offered == [["search_tools"], ["search_tools"], ["search_tools", "current_datetime"], ["search_tools"]]
    await host.aclose()


async def test_two_tool_search_providers_unlock_apart():
    """The same statement on two instances built from the same lists and catalogue: what one unlocks the other does
    not offer."""
    orchestrator = AgentOrchestrator()
    orchestrator.sync_tools([named("find_me"), named("other")])
    first, second = (ToolSearchProvider(["find_me", "other"], [], lambda: orchestrator.tools) for _ in range(2))
    assert (await first.search_tools("find_me")).startswith("Unlocked:\n- find_me")
    assert [t.name for t in (await first.provide_ai_context(ctx())).tools] == ["search_tools", "find_me"]
    assert [t.name for t in (await second.provide_ai_context(ctx())).tools] == ["search_tools"]


async def test_the_tool_provider_reads_the_catalogue_on_each_invocation():
    orchestrator = AgentOrchestrator()
    provider = AgentToolProvider(lambda: ["t"], lambda: orchestrator.tools)
    orchestrator.sync_tools([named("t", "old")])
    assert await (await provider.provide_ai_context(ctx())).tools[0].invoke({}) == "old"
    orchestrator.sync_tools([named("t", "new")])
    assert await (await provider.provide_ai_context(ctx())).tools[0].invoke({}) == "new"


# -- bound variables ---------------------------------------------------------------------------------


ENVIRONMENT_NAMES = ["working_directory", "os", "architecture", "shell", "path_separator", "home_directory",
                     "temp_directory", "workspace_directories"]
PERSONAL_NAMES = ["agent_name", "current_date", "current_time", "user_name", "user_username", "user_email",
                  "user_timezone", "user_context"]


def rendered(system: str) -> dict[str, str]:
    return dict(re.findall(r"^(\w+)=\[(.*?)\]$", system, re.MULTILINE | re.DOTALL))


async def test_all_eight_environment_variables_are_bound(tmp_path, fake_openai):
    """"EnvironmentContextProvider renders these Scriban variables: working_directory, os, architecture, shell,
    path_separator, home_directory, temp_directory, workspace_directories" and "The default host-derived
    working_directory is not available." """
    (tmp_path / "env.j2").write_text("\n".join(f"{n}=[{{{{ {n} }}}}]" for n in ENVIRONMENT_NAMES))
    (tmp_path / "data").mkdir()
    host = ConfiguredHost(tmp_path, config(fake_openai, environment={"template": "env.j2"}),
                          [AgentDefinition(id="e", workspaces=["data"])])
    fake_openai.enqueue(Reply(text="ok"))
    await (await host.get_agent("e")).run("hi")
    values = rendered(fake_openai.requests[0].messages[0]["content"])
    assert values == {
        "working_directory": "", "os": platform.system(), "architecture": platform.machine(),
        "shell": os.environ.get("SHELL") or os.environ.get("COMSPEC") or "", "path_separator": os.sep,
        "home_directory": os.path.expanduser("~"), "temp_directory": tempfile.gettempdir(),
        "workspace_directories": f"- {(tmp_path / 'data').resolve()}"}
    await host.aclose()


async def test_all_eight_personal_variables_are_bound(tmp_path, fake_openai):
    """"The configured Oscova host supplies: agent_name, current_date, current_time, user_name, user_username,
    user_email, user_timezone, user_context" """
    user = {"name": "Alice Example", "username": "alice", "email": "alice@example.com", "timezone": "UTC"}
    definition = AgentDefinition(id="p", name="Helper", shared=True,
                                 instructions="\n".join(f"{n}=[{{{{ {n} }}}}]" for n in PERSONAL_NAMES))
    host = ConfiguredHost(tmp_path, config(fake_openai, host={"user_id": "alice"}, user=user), [definition])
    await host.personal_repository.save("p", "Likes tea.")
    fake_openai.enqueue(Reply(text="ok"))
    before = _dt.datetime.now(_dt.UTC)
    await (await host.get_agent("p")).run("hi")
    after = _dt.datetime.now(_dt.UTC)
    values = rendered(fake_openai.requests[0].messages[0]["content"])
    assert sorted(values) == sorted(PERSONAL_NAMES)
    assert values["current_date"] in {before.date().isoformat(), after.date().isoformat()}
    assert values["current_time"] in {before.strftime("%H:%M"), after.strftime("%H:%M")}
    del values["current_date"], values["current_time"]
    assert values == {"agent_name": "Helper", "user_name": "Alice Example", "user_username": "alice",
                      "user_email": "alice@example.com", "user_timezone": "UTC", "user_context": "Likes tea."}
    await host.aclose()


async def test_user_context_is_not_appended_when_the_instruction_does_not_reference_it(tmp_path, fake_openai):
    """"The instruction must reference {{ user_context }} for that value to appear." """
    definition = AgentDefinition(id="s", shared=True, instructions="Plain instruction.")
    host = ConfiguredHost(tmp_path, config(fake_openai, host={"user_id": "alice"}), [definition])
    await host.personal_repository.save("s", "Likes tea.")
    fake_openai.enqueue(Reply(text="ok"))
    await (await host.get_agent("s")).run("hi")
    system = fake_openai.requests[0].messages[0]["content"]
    assert system.endswith("\nPlain instruction.\n") and "Likes tea." not in system
    await host.aclose()


async def test_the_personal_context_limit_counts_utf8_bytes(tmp_path):
    """"The host also supplies the maximum UTF-8 text size" — bytes, not characters."""
    repository = SharedAgentPersonalContextRepository(str(tmp_path), max_bytes=10)
    await repository.save("a", "é" * 5)  # 5 characters, 10 bytes: fits
    assert await repository.get("a") == "é" * 5
    with pytest.raises(PersonalContextTooLargeError, match="10 bytes"):
        await repository.save("a", "é" * 6)  # 6 characters, 12 bytes
    path = tmp_path / "a" / "context.md"
    path.write_text("---\nagent_id: a\n---\n" + "é" * 8, encoding="utf-8")  # written by hand, too large
    assert await repository.get("a") == "é" * 5  # cut at 10 bytes, on a character boundary


async def test_rendered_instructions_change_between_two_runs_of_one_agent(tmp_path, fake_openai):
    """"AgentPersonalContextProvider renders its instruction template with the object returned by its model
    factory" on every invocation: a cached agent sends the new values on its next run."""
    definition = AgentDefinition(id="t", instructions="Team {{ team }}.")
    host = ConfiguredHost(tmp_path, config(fake_openai, variables={"team": "Red"}), [definition])
    agent = await host.get_agent("t")
    fake_openai.enqueue(Reply(text="1"), Reply(text="2"))
    await agent.run("a")
    host.config.variables["team"] = "Blue"
    await (await host.get_agent("t")).run("b")
    first, second = (r.messages[0]["content"] for r in fake_openai.requests)
    assert first.endswith("\nTeam Red.\n") and second.endswith("\nTeam Blue.\n")
    await host.aclose()


# -- builds ----------------------------------------------------------------------------------------


async def test_the_reducer_factory_is_not_called_without_compaction():
    """"ChatReducerFactory: Creates a reducer only when the definition enables compaction." """
    calls = []
    orchestrator = AgentOrchestrator()
    plain = await orchestrator.get_or_create_agent(make_request(
        AgentDefinition(id="off"), ScriptedChatClient(), chat_reducer_factory=lambda d, c: calls.append(d.id)))
    assert calls == [] and plain.chat_history_provider.reducer is None
    await orchestrator.get_or_create_agent(make_request(
        AgentDefinition(id="on", compaction=True), ScriptedChatClient(),
        chat_reducer_factory=lambda d, c: calls.append(d.id)))
    assert calls == ["on"]


async def test_the_minimal_agent_helper(openai_client, fake_openai):
    """"This helper builds one definition with its standing instruction and no tools or workspaces." """
    orchestrator = AgentOrchestrator()
    definition = AgentDefinition(id="min", instructions="Be {{ 'brief' }}.", tools=["read_file"])
    agent = await build_minimal_agent(orchestrator, openai_client, definition)
    assert await build_minimal_agent(orchestrator, openai_client, definition) is agent
    fake_openai.enqueue(Reply(text="ok"))
    assert (await agent.run("hi")).text == "ok"
    request = fake_openai.requests[0]
    assert request.messages == [{"role": "system", "content": "Be brief.\n"}, {"role": "user", "content": "hi"}]
    assert request.tool_names == []


# -- the observer ------------------------------------------------------------------------------------


async def test_the_observer_leaves_requests_and_responses_unchanged(openai_client, fake_openai):
    """"The observer only projects task-run inspection state." — the same conversation with and without it sends
    the same requests and returns the same responses."""
    echo = function_from_callable(lambda text: text, name="echo", description="Echoes.")

    async def converse(observed: bool, streaming: bool):
        orchestrator = AgentOrchestrator()
        orchestrator.sync_tools([echo])
        extra = {}
        if observed:
            extra["configure_builder"] = use_agent_run_observer(
                AgentRunObserverAccessor(AgentTaskRunObserver(AgentTaskRun(live_messages=[]))))
        agent = await orchestrator.get_or_create_agent(make_request(
            AgentDefinition(id="o"), openai_client, [AgentToolProvider(lambda: ["echo"], lambda: orchestrator.tools)],
            **extra))
        fake_openai.requests.clear()
        fake_openai.enqueue(Reply(tool_calls=[ToolCall("echo", {"text": "a"}, "c1")]), Reply(text="final"))
        if streaming:
            result = [(u.role, u.text) async for u in agent.run_streaming("go")]
        else:
            result = [(m.role, m.text, [c.call_id for c in m.function_calls]) for m in (await agent.run("go")).messages]
        return [r.body for r in fake_openai.requests], result

    for streaming in (False, True):
        without = await converse(False, streaming)
        with_observer = await converse(True, streaming)
        assert with_observer == without
        assert len(without[0]) == 2
