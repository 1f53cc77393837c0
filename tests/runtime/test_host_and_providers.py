"""The configured host (docs/configuration.md) and the built-in providers, end to end through the local server."""

from __future__ import annotations

import datetime as _dt
import textwrap
from typing import Literal

import pytest
from conftest import Reply, ToolCall
from oscova_runtime.catalogue import plan_providers
from oscova_runtime.context import InvalidOperationError, InvokingContext
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.host import ConfiguredHost, HostConfigurationError
from oscova_runtime.host_config import HostConfig
from oscova_runtime.providers import (
    EnvironmentContextProvider,
    MemoryContextProvider,
    MemoryStore,
    SharedAgentPersonalContextRepository,
    estimate_tokens,
    memory_tools,
)
from oscova_runtime.session import AgentSession
from oscova_runtime.templates import TemplateError, TemplateRenderer
from oscova_runtime.tools import function_from_callable, schema_from_signature


def config(fake_openai, **sections) -> HostConfig:
    data = {"models": {"default": {"model": "fake-model", "base_url": fake_openai.base_url}}, **sections}
    return HostConfig.model_validate(data)


FULL = {"host": {"user_id": "alice", "todo": True, "library": True}, "user": {"name": "Alice", "timezone": "UTC"},
        "variables": {"team": "Platform"}}


def full_definition(**extra) -> AgentDefinition:
    return AgentDefinition(
        id="helper", name="Helper", instructions="You are {{ agent_name }} for {{ user_name }} of {{ team }}.",
        tools=["current_datetime", "read_file"], agent_tools=["kid"], skills=["triage"], memory=True, todo=True,
        vision=True, workspaces=["data"], **extra)


def workspace(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "skills" / "triage").mkdir(parents=True)
    (tmp_path / "skills" / "triage" / "SKILL.md").write_text("---\ndescription: Sort bugs\n---\nStep 1.")
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "guide.md").write_text("The deploy guide says: run make deploy.")
    return tmp_path


async def test_the_configured_host_builds_the_plan_in_order_with_its_state_keys(tmp_path, fake_openai):
    root = workspace(tmp_path)
    kid = AgentDefinition(id="kid", exposed_as_tool=True, description="A kid agent.")
    definition = full_definition()
    host = ConfiguredHost(root, config(fake_openai, **FULL), [definition, kid])
    agent = await host.get_agent("helper")
    plan = plan_providers(definition, host.config, requested=True)
    assert [type(p).__name__ for p in agent.context_providers] == [p.class_name for p in plan.providers]
    assert [p.state_keys for p in agent.context_providers] == [p.state_keys for p in plan.providers]
    assert [p.class_name for p in plan.providers] == [
        "EnvironmentContextProvider", "AgentToolProvider", "AgentPersonalContextProvider",
        "PrivateNotesContextProvider", "AgentAsToolProvider", "SkillsContextProvider", "MemoryContextProvider",
        "LibraryContextProvider", "TodoListContextProvider", "VisionToolProvider"]
    kid_agent = host.orchestrator.agents.get("kid")
    kid_plan = plan_providers(kid, host.config, requested=False)
    assert [type(p).__name__ for p in kid_agent.context_providers] == [p.class_name for p in kid_plan.providers]


async def test_a_full_default_order_run_sends_what_each_provider_contributes(tmp_path, fake_openai):
    root = workspace(tmp_path)
    kid = AgentDefinition(id="kid", exposed_as_tool=True)
    host = ConfiguredHost(root, config(fake_openai, **FULL), [full_definition(), kid])
    (root / ".oscova" / "notes" / "alice").mkdir(parents=True)
    (root / ".oscova" / "notes" / "alice" / "helper.md").write_text("Prefers short answers.")
    agent = await host.get_agent("helper")
    fake_openai.enqueue(Reply(text="done"))
    await agent.run("hello")
    request = fake_openai.requests[0]
    system = request.messages[0]["content"]
    order = ["## Environment", "You are Helper for Alice of Platform.", "<private_notes>", "## Skills",
             "<agent_memory>", "read-only Library", "todo list"]
    positions = [system.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert str((root / "data").resolve()) in system
    assert request.tool_names == ["current_datetime", "read_file", "kid", "load_skill", "memory_save",
                                  "memory_search", "library_search", "library_read", "todo_read", "todo_write",
                                  "analyze_image"]
    assert [m["content"] for m in request.messages[1:]] == ["hello", "<todo_list>\n(empty)\n</todo_list>"]


async def test_a_dependency_gets_no_requested_only_providers(tmp_path, fake_openai):
    """"Conditions are evaluated separately for the requested agent and any exposed agent-tool dependency." """
    root = workspace(tmp_path)
    kid = AgentDefinition(id="kid", exposed_as_tool=True, memory=True, todo=True, instructions="kid")
    host = ConfiguredHost(root, config(fake_openai, **FULL), [AgentDefinition(id="top", agent_tools=["kid"]), kid])
    await host.get_agent("top")
    names = [type(p).__name__ for p in host.orchestrator.agents.get("kid").context_providers]
    assert names == ["EnvironmentContextProvider", "AgentToolProvider", "AgentPersonalContextProvider"]


async def test_a_listed_provider_duplicating_the_default_order_fails_construction(tmp_path, fake_openai):
    definition = AgentDefinition(id="dup", memory=True, context_providers=["memory"])
    host = ConfiguredHost(tmp_path, config(fake_openai, **FULL), [definition])
    with pytest.raises(InvalidOperationError, match="MemoryContextProvider"):
        await host.get_agent("dup")
    assert "dup" not in host.orchestrator.agents


async def test_a_listed_state_key_equal_to_the_history_key_fails_construction(tmp_path, fake_openai):
    definition = AgentDefinition(id="h", context_providers=[{"type": "todo", "state_key": "InMemoryChatHistoryProvider"}])
    host = ConfiguredHost(tmp_path, config(fake_openai, **FULL), [definition])
    with pytest.raises(InvalidOperationError, match="chat-history"):
        await host.get_agent("h")


async def test_tool_search_mode_offers_search_tools_and_pinned_tools_then_unlocks(tmp_path, fake_openai):
    definition = AgentDefinition(id="s", tool_mode="search", tools=["current_datetime", "read_file", "list_directory"],
                                 pinned_tools=["current_datetime"])
    host = ConfiguredHost(tmp_path, config(fake_openai), [definition])
    agent = await host.get_agent("s")
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("search_tools", {"query": "directory"}, "c1")]), Reply(text="ok"),
                        Reply(text="again"))
    session = AgentSession()
    await agent.run("find", session=session)
    assert fake_openai.requests[0].tool_names == ["search_tools", "current_datetime"]
    assert "search_tools" in fake_openai.requests[0].messages[0]["content"]
    await agent.run("again", session=session)
    assert fake_openai.requests[2].tool_names == ["search_tools", "current_datetime", "list_directory"]


async def test_a_blank_instruction_does_not_call_the_model_factory(tmp_path, fake_openai):
    """"A blank template returns an empty context without calling that factory." """
    from oscova_runtime.providers import AgentPersonalContextProvider

    called = []
    provider = AgentPersonalContextProvider("   ", lambda ctx: called.append(1) or {}, TemplateRenderer(tmp_path))
    result = await provider.provide_ai_context(InvokingContext(None, AgentSession(), None))
    assert result.instructions is None and called == []


async def test_user_context_appears_only_for_a_shared_agent(tmp_path, fake_openai):
    """"user_context contains file-backed personal context only for a shared agent." """
    template = "Hi <user_context>{{ user_context }}</user_context>"
    shared = AgentDefinition(id="shared.one", shared=True, instructions=template)
    private = AgentDefinition(id="private", instructions=template)
    host = ConfiguredHost(tmp_path, config(fake_openai, **FULL), [shared, private])
    await host.personal_repository.save("shared.one", "I like tea.")
    await host.personal_repository.save("private", "hidden")
    fake_openai.enqueue(Reply(text="a"), Reply(text="b"))
    await (await host.get_agent("shared.one")).run("x")
    await (await host.get_agent("private")).run("x")
    assert "<user_context>I like tea.</user_context>" in fake_openai.requests[0].messages[0]["content"]
    assert "<user_context></user_context>" in fake_openai.requests[1].messages[0]["content"]


async def test_the_personal_context_repository_stores_slug_context_md_with_agent_id_front_matter(tmp_path):
    repo = SharedAgentPersonalContextRepository(str(tmp_path), max_bytes=100)
    await repo.save("Team.Bot", "content")
    path = tmp_path / "team-bot" / "context.md"
    assert path.read_text() == "---\nagent_id: Team.Bot\n---\ncontent\n"
    assert await repo.get("Team.Bot") == "content"
    assert await repo.get("team-bot") is None  # same slug, another agent id
    with pytest.raises(ValueError, match="100 bytes"):
        await repo.save("Team.Bot", "x" * 101)


async def test_the_environment_resolver_is_called_once_per_render_and_none_configured(tmp_path):
    calls = []
    provider = EnvironmentContextProvider.from_workspace_resolver(TemplateRenderer(tmp_path),
                                                                  lambda: calls.append(1) or [])
    result = await provider.provide_ai_context(InvokingContext(None, AgentSession(), None))
    assert "- none configured" in result.instructions and calls == [1]
    assert provider.variables()["working_directory"] == ""


async def test_memory_reads_three_files_within_the_budget_and_appends_the_block(tmp_path):
    """"MemoryContextProvider reads long-term, current-day, and previous-day memory on each invocation. Its
    default combined token budget is 2,000." / "If SystemPrompt omits {{ agent_memory }}, the provider appends
    the generated <agent_memory> block automatically." """
    day = _dt.date(2026, 5, 9)
    store = MemoryStore(str(tmp_path), "alice", "helper", today=lambda: day)
    folder = tmp_path / "alice" / "helper"
    (folder / "daily").mkdir(parents=True)
    (folder / "MEMORY.md").write_text("L" * 6000)
    (folder / "daily" / "2026-05-09.md").write_text("today-note " + "T" * 4000)
    (folder / "daily" / "2026-05-08.md").write_text("yesterday-note")
    (folder / "daily" / "2026-05-07.md").write_text("too-old")
    provider = MemoryContextProvider(store, memory_tools(store), TemplateRenderer(tmp_path),
                                     system_prompt="Remember things.")
    result = await provider.provide_ai_context(InvokingContext(None, AgentSession(), None))
    text = result.instructions
    assert text.startswith("Remember things.\n<agent_memory>") and text.endswith("</agent_memory>\n")
    assert "too-old" not in text
    block = text[text.index("<agent_memory>"):]
    assert estimate_tokens(block) <= 2000 + 40  # headings and tags aside, the memory fits the budget
    assert [t.name for t in result.tools] == ["memory_save", "memory_search"]
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2


async def test_the_memory_providers_own_default_budget_is_2000_tokens(tmp_path):
    """"Its default combined token budget is 2,000." — of the provider itself, built without a budget (the host's
    `[memory] token_budget` default is another test): 8,000 characters (2,000 estimated tokens) of long-term
    memory are kept whole, 8,004 (2,001) are cut to 2,000 with the marker. Only a budget of exactly 2,000 does
    both."""
    store = MemoryStore(str(tmp_path), "alice", "helper")
    (tmp_path / "alice" / "helper").mkdir(parents=True)
    provider = MemoryContextProvider(store, [], TemplateRenderer(tmp_path), system_prompt="{{ agent_memory }}")

    async def long_term(size: int) -> str:
        (tmp_path / "alice" / "helper" / "MEMORY.md").write_text("L" * size)
        text = (await provider.provide_ai_context(InvokingContext(None, AgentSession(), None))).instructions
        return text[text.index("### Long-term\n") + len("### Long-term\n"):text.index("\n</agent_memory>")]

    assert await long_term(8000) == "L" * 8000
    cut = await long_term(8004)
    assert cut.endswith("[…]") and cut.startswith("L" * 7000) and estimate_tokens(cut) == 2000


async def test_the_memory_provider_contributes_the_tools_given_to_its_constructor(tmp_path):
    """"It contributes the rendered memory instructions plus the memory tools supplied to its constructor." — tools
    that are not the store's own (`memory_tools(store)`) are the ones offered, the same objects, in their order."""
    store = MemoryStore(str(tmp_path), "alice", "helper")
    given = [function_from_callable(lambda: "a", name="recall_a", description="Recalls a."),
             function_from_callable(lambda: "b", name="recall_b", description="Recalls b.")]
    provider = MemoryContextProvider(store, given, TemplateRenderer(tmp_path))
    result = await provider.provide_ai_context(InvokingContext(None, AgentSession(), None))
    assert len(result.tools) == 2 and all(got is tool for got, tool in zip(result.tools, given, strict=True))
    assert "<agent_memory>" in result.instructions


async def test_memory_tools_write_the_day_file_and_long_term_file(tmp_path, fake_openai):
    host = ConfiguredHost(tmp_path, config(fake_openai, **FULL), [AgentDefinition(id="m", memory=True)])
    agent = await host.get_agent("m")
    fake_openai.enqueue(
        Reply(tool_calls=[ToolCall("memory_save", {"content": "likes tea", "long_term": True}, "c1"),
                          ToolCall("memory_save", {"content": "fixed bug 7"}, "c2")]),
        Reply(text="saved"), Reply(text="next"))
    await agent.run("remember")
    await agent.run("what do you know")
    system = fake_openai.requests[2].messages[0]["content"]
    assert "- likes tea" in system and "fixed bug 7" in system
    assert (tmp_path / ".oscova" / "memory" / "alice" / "m" / "MEMORY.md").exists()


async def test_the_todo_provider_keeps_the_list_in_the_session(tmp_path, fake_openai):
    host = ConfiguredHost(tmp_path, config(fake_openai, **FULL), [AgentDefinition(id="t", todo=True)])
    agent = await host.get_agent("t")
    fake_openai.enqueue(
        Reply(tool_calls=[ToolCall("todo_write", {"items": [{"content": "write tests", "status": "in_progress"}]})]),
        Reply(text="planned"), Reply(text="next"))
    session = AgentSession()
    await agent.run("plan", session=session)
    await agent.run("continue", session=session)
    assert fake_openai.requests[2].messages[-1]["content"] == "<todo_list>\n- [~] write tests\n</todo_list>"


async def test_the_todo_list_reaches_the_model_as_a_user_message(tmp_path, fake_openai):
    """"Todo list: Instructions, a synthetic user message, and tools" — the list is sent with the user role, after
    the run's own input (a system or assistant message would read as the agent's own words)."""
    host = ConfiguredHost(tmp_path, config(fake_openai, host={"todo": True}), [AgentDefinition(id="t", todo=True)])
    fake_openai.enqueue(Reply(text="ok"))
    await (await host.get_agent("t")).run("plan the release")
    assert fake_openai.requests[0].messages[1:] == [
        {"role": "user", "content": "plan the release"},
        {"role": "user", "content": "<todo_list>\n(empty)\n</todo_list>"}]
    await host.aclose()


async def test_vision_analyzes_an_image_inside_the_workspace(tmp_path, fake_openai):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "cat.png").write_bytes(b"\x89PNG fake")
    host = ConfiguredHost(tmp_path, config(fake_openai), [AgentDefinition(id="v", vision=True, workspaces=["data"])])
    agent = await host.get_agent("v")
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("analyze_image", {"path": "data/cat.png"}, "c1")]),
                        Reply(text="a cat"), Reply(text="It is a cat."))
    response = await agent.run("what is it")
    assert response.text == "It is a cat."
    image_request = fake_openai.requests[1].messages[0]["content"]
    assert image_request[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert fake_openai.requests[2].messages[-1]["content"] == "a cat"


async def test_custom_tools_and_providers_from_the_host_configuration(tmp_path, fake_openai, monkeypatch):
    (tmp_path / "mytools.py").write_text(textwrap.dedent('''
        from oscova_runtime import AIContextProvider, AIContext

        async def search_web(query: str, limit: int = 3) -> str:
            """Searches the web for a query."""
            return f"results for {query} ({limit})"

        class Tickets(AIContextProvider):
            async def template_variables(self, context):
                return {"open_tickets": 4}

        class Plain(AIContextProvider):
            async def provide_ai_context(self, context):
                return AIContext(instructions="plain provider")
    '''))
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "tickets.j2").write_text("{% include 'templates/header.j2' %}Open: {{ open_tickets }}")
    (tmp_path / "templates" / "header.j2").write_text("Tickets. ")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = config(fake_openai, tools={"search_web": {"callable": "mytools:search_web"}},
                 providers={"tickets": {"class": "mytools:Tickets", "template": "templates/tickets.j2",
                                        "variables": ["open_tickets"]},
                            "plain": {"class": "mytools:Plain"}})
    definition = AgentDefinition(id="c", tools=["search_web"], context_providers=["tickets", "plain"])
    host = ConfiguredHost(tmp_path, cfg, [definition])
    agent = await host.get_agent("c")
    assert [p.state_keys for p in agent.context_providers][-2:] == [("Tickets",), ("Plain",)]
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("search_web", {"query": "q"})]), Reply(text="ok"))
    await agent.run("go")
    request = fake_openai.requests[0]
    assert request.messages[0]["content"].endswith("Tickets. Open: 4\n\nplain provider")  # a blank line after a built-in block
    assert request.body["tools"][0]["function"] == {
        "name": "search_web", "description": "Searches the web for a query.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"},
                                                        "limit": {"type": "integer", "default": 3}},
                       "required": ["query"]}}
    assert fake_openai.requests[1].messages[-1]["content"] == "results for q (3)"


def test_schema_from_signature_handles_optionals_lists_and_literals():
    def f(a: str, b: int | None = None, c: list[str] | None = None, d: Literal["x", "y"] = "x") -> None:
        """Doc."""

    schema = schema_from_signature(f)
    assert schema["properties"] == {"a": {"type": "string"}, "b": {"type": "integer"},
                                    "c": {"type": "array", "items": {"type": "string"}},
                                    "d": {"enum": ["x", "y"], "default": "x"}}
    assert schema["required"] == ["a"] and function_from_callable(f).description == "Doc."


def test_templates_render_in_the_sandbox(tmp_path):
    renderer = TemplateRenderer(tmp_path)
    with pytest.raises(TemplateError):
        renderer.render_string("{{ ''.__class__.__mro__[1].__subclasses__() }}", {})


async def test_missing_model_configuration_is_reported_in_words(tmp_path):
    host = ConfiguredHost(tmp_path, HostConfig(), [AgentDefinition(id="x")])
    with pytest.raises(HostConfigurationError, match=r"add a \[models.default\]"):
        await host.get_agent("x")
    host = ConfiguredHost(tmp_path, HostConfig.model_validate({"models": {"other": {"model": "m"}}}),
                          [AgentDefinition(id="x")])
    with pytest.raises(HostConfigurationError, match=r"\[models.default\]"):
        await host.get_agent("x")


# -- conditions whose tests could not fail ------------------------------------------------------------------


def provider_names(agent) -> list[str]:
    return [type(p).__name__ for p in agent.context_providers]


async def test_a_dependency_with_its_own_agent_tools_gets_an_agent_as_tool_provider(tmp_path, fake_openai):
    """"Called agents ... Added when the definition has AgentToolIds." — for a dependency too (the condition is
    not requested-only): a child that calls a grandchild offers it as a tool."""
    leaf = AgentDefinition(id="leaf", exposed_as_tool=True, instructions="leaf")
    mid = AgentDefinition(id="mid", exposed_as_tool=True, agent_tools=["leaf"], instructions="mid")
    host = ConfiguredHost(tmp_path, config(fake_openai), [AgentDefinition(id="top", agent_tools=["mid"]), mid, leaf])
    await host.get_agent("top")
    middle = host.orchestrator.agents.get("mid")
    assert "AgentAsToolProvider" in provider_names(middle)
    [as_tools] = [p for p in middle.context_providers if type(p).__name__ == "AgentAsToolProvider"]
    assert [t.name for t in as_tools.tools] == ["leaf"]
    assert "AgentAsToolProvider" not in provider_names(host.orchestrator.agents.get("leaf"))
    await host.aclose()


SKILLED = {"host": {"user_id": "alice"}}


@pytest.mark.parametrize(("case", "present"), [
    ("user id and skills, requested", True), ("no user id", False), ("no skills", False), ("a dependency", False)])
async def test_skills_need_a_user_id_an_assigned_skill_and_the_requested_agent(tmp_path, fake_openai, case, present):
    """"Skills ... Requested active agent only, with a user ID and at least one assigned skill." — each condition."""
    root = workspace(tmp_path)
    skills = [] if case == "no skills" else ["triage"]
    sections = {} if case == "no user id" else SKILLED
    kid = AgentDefinition(id="kid", exposed_as_tool=True, skills=skills)
    top = AgentDefinition(id="top", skills=skills, agent_tools=["kid"])
    host = ConfiguredHost(root, config(fake_openai, **sections), [top, kid])
    agent = await host.get_agent("top")
    built = host.orchestrator.agents.get("kid") if case == "a dependency" else agent
    assert ("SkillsContextProvider" in provider_names(built)) is present
    if case != "a dependency":
        fake_openai.enqueue(Reply(text="ok"))
        await agent.run("hi")
        assert ("load_skill" in fake_openai.requests[0].tool_names) is present
        assert ("- triage: Sort bugs" in fake_openai.requests[0].messages[0]["content"]) is present
    await host.aclose()


@pytest.mark.parametrize(("host_todo", "definition_todo"), [(True, True), (False, True), (True, False)])
async def test_todo_needs_the_host_switch_and_the_definition(tmp_path, fake_openai, host_todo, definition_todo):
    """"Todo list ... Requested active agent only when todo support is enabled." — `[host] todo` enables it in
    the host, `todo: true` in the definition."""
    host = ConfiguredHost(tmp_path, config(fake_openai, host={"todo": host_todo}),
                          [AgentDefinition(id="t", todo=definition_todo)])
    fake_openai.enqueue(Reply(text="ok"))
    await (await host.get_agent("t")).run("hi")
    request = fake_openai.requests[0]
    present = host_todo and definition_todo
    assert ("todo_write" in request.tool_names) is present
    assert any("<todo_list>" in (m.get("content") or "") for m in request.messages) is present
    await host.aclose()


async def test_vision_and_run_providers_are_for_the_requested_agent_only(tmp_path, fake_openai, monkeypatch):
    """"Caller-supplied run providers ... Requested active agent only." — vision and `context_providers` entries."""
    (tmp_path / "plainmod.py").write_text(textwrap.dedent('''
        from oscova_runtime import AIContextProvider, AIContext

        class Plain(AIContextProvider):
            async def provide_ai_context(self, context):
                return AIContext(instructions="plain provider")
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = config(fake_openai, providers={"plain": {"class": "plainmod:Plain"}})
    kid = AgentDefinition(id="kid", exposed_as_tool=True, vision=True, context_providers=["plain"])
    top = AgentDefinition(id="top", vision=True, context_providers=["plain"], agent_tools=["kid"])
    host = ConfiguredHost(tmp_path, cfg, [top, kid])
    agent = await host.get_agent("top")
    assert provider_names(agent)[-3:] == ["AgentAsToolProvider", "VisionToolProvider", "Plain"]
    assert provider_names(host.orchestrator.agents.get("kid")) == [
        "EnvironmentContextProvider", "AgentToolProvider", "AgentPersonalContextProvider"]
    await host.aclose()
