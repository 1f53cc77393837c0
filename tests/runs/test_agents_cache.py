"""Which built agents a saved file makes stale (`runs/agents_cache.py`): the workspace's index answers."""

from __future__ import annotations

from pathlib import Path

from oscova_lsp.runs import RunService
from oscova_lsp.runs.agents_cache import agents_reading

from tests.runs.conftest import host_toml, make_workspace
from tests.support.fake_openai import Reply, ToolCall

AGENTS = {
    "echo": """\
        id: echo
        description: Repeats what it is told.
        exposed_as_tool: true
        instructions_file: ../templates/echo.j2
        """,
    "lead": """\
        id: lead
        instructions: Delegate to echo.
        agent_tools: [echo]
        """,
    "boss": """\
        id: boss
        instructions: Delegate to lead.
        agent_tools: [lead]
        """,
    "alone": """\
        id: alone
        instructions: Answer.
        """,
}


def _workspace(tmp_path: Path, base_url: str, *, environment_template: bool = False) -> Path:
    extra = 'template = "templates/environment.j2"\n' if environment_template else ""  # in [environment]
    root = make_workspace(tmp_path / "ws", base_url, host=host_toml(base_url, extra=extra), agents=AGENTS)
    (root / "templates" / "partials").mkdir(parents=True)
    (root / "templates" / "echo.j2").write_text('{% include "templates/partials/voice.j2" %}\nRepeat the query.\n')
    (root / "templates" / "partials" / "voice.j2").write_text("Speak plainly.\n")
    (root / "templates" / "environment.j2").write_text("Today.\n")
    return root


async def test_a_template_included_by_an_agents_template_makes_it_and_its_callers_stale(tmp_path, fake_openai,
                                                                                         canary_key):
    root = _workspace(tmp_path, fake_openai.base_url)
    service = RunService(root)
    try:
        workspace = service.analysis.workspace
        assert agents_reading(workspace, str(root / "templates" / "partials" / "voice.j2")) == {"echo", "lead", "boss"}
        # an agent, those that call it, and those it calls (their checks read it: evicting them costs a rebuild)
        assert agents_reading(workspace, str(root / "agents" / "lead.agent.yaml")) == {"lead", "boss", "echo"}
        assert agents_reading(workspace, str(root / "agents" / "boss.agent.yaml")) == {"boss", "lead"}
        assert agents_reading(workspace, str(root / "agents" / "alone.agent.yaml")) == {"alone"}
        assert agents_reading(workspace, str(root / "oscova.toml")) == set()
    finally:
        await service.aclose()


async def test_saving_a_template_evicts_the_built_agent_that_renders_it(tmp_path, fake_openai, canary_key):
    root = _workspace(tmp_path, fake_openai.base_url)
    service = RunService(root)
    try:
        fake_openai.enqueue(Reply(tool_calls=[ToolCall("echo", {"query": "ping"}, "e1")]), Reply(text="ping"),
                            Reply(text="pong"))
        assert (await service.run("lead", "say ping"))["status"] == "completed"
        assert service.orchestrator.agents.ids() == ["echo"]
        assert service.file_saved(str(root / "templates" / "environment.j2")) == []  # no agent renders it
        voice = root / "templates" / "partials" / "voice.j2"
        voice.write_text("Speak softly.\n")
        assert service.file_saved(str(voice)) == ["echo"]
        assert "echo" not in service.orchestrator.agents
    finally:
        await service.aclose()


async def test_a_template_the_host_configuration_names_makes_every_agent_stale(tmp_path, fake_openai, canary_key):
    root = _workspace(tmp_path, fake_openai.base_url, environment_template=True)
    service = RunService(root)
    try:
        assert agents_reading(service.analysis.workspace, str(root / "templates" / "environment.j2")) is None
        await service.preview("lead")
        assert len(service.orchestrator.agents) == 1
        assert service.file_saved(str(root / "templates" / "environment.j2")) == ["*"]
        assert len(service.orchestrator.agents) == 0
    finally:
        await service.aclose()
