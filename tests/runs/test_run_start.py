"""What a run start reads: one listing of the agents (the editor's and the service's), one snapshot of the
workspace (the editor's pending edits applied once), the configured host over that snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest
from oscova_lsp.analysis.host import AnalysisHost
from oscova_lsp.runs import RunError, RunService

from tests.support.fake_openai import Reply
from tests.support.run_workspace import AGENTS

from .conftest import make_workspace

SECOND_HELPER = """\
    id: helper
    name: Second
    instructions: hi
    """


@pytest.fixture
def drifted(tmp_path: Path, fake_openai, canary_key) -> Path:
    """Two files with the id `helper`: `agents/a_second.agent.yaml` sorts before `agents/helper.agent.yaml`."""
    return make_workspace(tmp_path / "ws", fake_openai.base_url, agents={**AGENTS, "a_second": SECOND_HELPER})


def _loaded_host(root: Path) -> AnalysisHost:
    host = AnalysisHost([str(root)])
    folder_root = host.root_of(str(root / "oscova.toml"))
    host.ensure_root(folder_root)
    host.install(folder_root, host.load(folder_root))
    return host


def _building_none(host: AnalysisHost, path: Path) -> None:
    """Makes the file at `path` one that builds no definition though its `id` is valid. The parser builds a
    (lenient) definition for every file with a valid id today, so only an invalid id builds none; the one
    listing must still not let such a file hide a later one."""
    analysis = host.snapshot().analysis(str(path))
    assert analysis is not None
    analysis.workspace.files[str(path)].definition = None  # type: ignore[union-attr]


async def test_a_file_that_builds_no_definition_hides_no_agent_of_its_id(drifted: Path):
    host = _loaded_host(drifted)
    _building_none(host, drifted / "agents" / "a_second.agent.yaml")
    service = RunService(drifted, host=host)
    try:
        listed = {a["id"]: a for a in service.list_agents()}
        result = await service.run("helper", "hi")
    finally:
        await service.aclose()
    assert sorted(listed) == ["echo", "helper", "lead"]
    assert listed["helper"] == {"id": "helper", "name": "Helper",
                                "uri": (drifted / "agents" / "helper.agent.yaml").resolve().as_uri(),
                                "exposedAsTool": False, "exampleInput": "When is the launch?"}
    # the run reads the listed file, and names its errors (the id is still defined twice)
    assert result["status"] == "failed"
    assert "agents/helper.agent.yaml:1:5: OSC005 another definition has the id `helper`" in result["error"]


async def test_the_editor_and_the_service_list_the_same_agents(drifted: Path):
    from oscova_lsp.analysis.agents import agent_list

    host = _loaded_host(drifted)
    service = RunService(drifted, host=host)
    try:
        by_service = service.list_agents()
    finally:
        await service.aclose()
    analysis = host.snapshot().analysis(str(drifted / "oscova.toml"))
    assert analysis is not None
    editor = agent_list(analysis.workspace)  # what `oscova.listAgents` lists, its URIs made by the server
    assert [(a.id, a.name, a.exposed_as_tool, a.example_input) for a in editor] == \
        [(a["id"], a["name"], a["exposedAsTool"], a["exampleInput"]) for a in by_service]
    assert [Path(a.path).resolve().as_uri() for a in editor] == [a["uri"] for a in by_service]
    assert [(a.id, a.name) for a in editor] == [("echo", "echo"), ("helper", "Second"), ("lead", "Lead")]


async def test_an_agent_whose_only_file_builds_no_definition_is_not_listed_and_its_run_names_its_errors(
        tmp_path, fake_openai, canary_key):
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, agents={"bad": "id: bad id\ninstructions: hi\n"})
    service = RunService(root)
    try:
        assert service.list_agents() == []
        with pytest.raises(RunError, match=r"(?s)cannot run until its configuration errors are fixed.*OSC002"):
            await service.preview("bad id")
    finally:
        await service.aclose()


class Settles:
    """Counts how often a service reads the analysis host's state (`RunService.snapshot`)."""

    def __init__(self, service: RunService) -> None:
        self.count = 0
        self._snapshot = service.snapshot
        service.snapshot = self  # type: ignore[method-assign]

    def __call__(self) -> object:
        self.count += 1
        return self._snapshot()


@pytest.fixture
async def counted(workspace: Path):
    service = RunService(workspace, host=_loaded_host(workspace))
    settles = Settles(service)
    yield service, settles
    await service.aclose()


async def test_a_run_start_reads_one_snapshot(counted, fake_openai):
    service, settles = counted
    fake_openai.enqueue(Reply(text="Tuesday."))
    result = await service.run("helper", "When is the launch?")
    assert result["status"] == "completed", result
    assert settles.count == 1


async def test_a_preview_and_the_approval_tools_read_one_snapshot_each(counted):
    service, settles = counted
    await service.preview("helper")
    assert settles.count == 1
    assert service.approval_tools("helper") == ["write_file"]
    assert settles.count == 2


async def test_a_run_started_from_a_view_reads_no_other(counted, fake_openai):
    service, settles = counted
    view = service.view()
    assert view.agent_name("helper") == "Helper" and view.agent_name("nobody") == "nobody"
    assert service.approval_tools("helper", view=view) == ["write_file"]  # as `oscova-lsp run` asks first
    fake_openai.enqueue(Reply(text="Tuesday."))
    result = await service.start_run("helper", "When is the launch?", view=view)
    assert result["status"] == "completed", result
    assert settles.count == 1


async def test_a_replayed_conversation_goes_on_from_its_session(workspace: Path, fake_openai):
    from oscova_runtime.catalogue import CHAT_HISTORY_STATE_KEY
    from oscova_runtime.messages import ChatMessage
    from oscova_runtime.session import AgentSession

    service = RunService(workspace)
    try:
        session = AgentSession(session_id="s1")
        session.state_bag[CHAT_HISTORY_STATE_KEY] = [ChatMessage.of("user", "Earlier."),
                                                     ChatMessage.of("assistant", "Noted.")]
        service.resume_session("helper", session)
        fake_openai.enqueue(Reply(text="Still Tuesday."))
        result = await service.run("helper", "And now?", session_id="s1")
    finally:
        await service.aclose()
    assert result["status"] == "completed", result
    assert [m["content"] for m in fake_openai.requests[0].messages[1:]] == ["Earlier.", "Noted.", "And now?"]

