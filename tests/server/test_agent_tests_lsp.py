"""Agent tests and run comparison from the editor: `oscova.listTests`, `oscova.runTest`, `oscova.saveTestCase`
and `oscova.compareRuns`, through the server as a subprocess (pytest-lsp, VS Code 1.139's capabilities).

The runs are recorded through the server itself (`oscova.runAgent`) against the local OpenAI-compatible
server; replays must not reach it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall
from tests.support.run_workspace import host_toml, write_workspace

from .conftest import RUN_CLIENT, SERVER_COMMAND, start_session, with_trust
from .test_runs import plain

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEY_VARIABLE = "OSCOVA_LSP_AGENT_TESTS_KEY"
CONFIG = ClientServerConfig(server_command=SERVER_COMMAND, server_env={**os.environ, KEY_VARIABLE: "sk-agent-tests-0123"})


async def start(client: LanguageClient, root: Path, trust: bool) -> None:
    @client.feature("oscova/runEvent")
    def on_run_event(params: Any) -> None:
        return None

    await start_session(client, root, with_trust(RUN_CLIENT, trust))


@pytest_lsp.fixture(config=CONFIG, scope="module", loop_scope="module")
async def editor(lsp_client: LanguageClient, fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory):
    root = write_workspace(tmp_path_factory.mktemp("agent-tests") / "ws", host_toml(fake.base_url, KEY_VARIABLE))
    await start(lsp_client, root, trust=True)
    lsp_client.root = root  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


async def command(client: LanguageClient, name: str, argument: dict[str, Any]) -> Any:
    return plain(await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=name, arguments=[argument])))


async def test_a_run_saved_from_the_editor_is_listed_run_and_fails_after_an_edit(editor: LanguageClient, fake: FakeOpenAI):
    root: Path = editor.root  # type: ignore[attr-defined]
    assert await command(editor, "oscova.listTests", {}) == []
    fake.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "c1")]), Reply(text="On Tuesday."))
    run = await command(editor, "oscova.runAgent", {"agentId": "helper", "input": "When is the launch?"})
    assert run["status"] == "completed", run
    saved = await command(editor, "oscova.saveTestCase", {"runId": run["runId"], "name": "launch/when"})
    assert saved["name"] == "launch/when" and saved["agentId"] == "helper"
    # The workspace's first case says how to commit the cases and not the rest of .oscova/, as the CLI does.
    assert saved["gitignore"] == [".oscova/*", "!.oscova/tests/"]
    again_saved = await command(editor, "oscova.saveTestCase", {"runId": run["runId"], "name": "launch/again"})
    assert "gitignore" not in again_saved
    Path(again_saved["path"]).unlink()
    assert Path(saved["path"]) == root / ".oscova" / "tests" / "launch" / "when.jsonl"

    listed = await command(editor, "oscova.listTests", {"uri": from_fs_path(str(root))})
    assert [(c["name"], c["agentId"], c["input"], c["uri"]) for c in listed] == [
        ("launch/when", "helper", "When is the launch?", from_fs_path(saved["path"]))]

    requests = len(fake.requests)
    passed = await command(editor, "oscova.runTest", {"uri": saved["uri"]})
    assert passed["status"] == "passed" and passed["agentId"] == "helper", passed

    definition = root / "agents" / "helper.agent.yaml"
    definition.write_text(definition.read_text().replace("You help {{ user_name }}.", "You help {{ user_name }} kindly."))
    failed = await command(editor, "oscova.runTest", {"uri": saved["uri"]})
    assert failed["status"] == "failed"
    assert any(line.startswith("+") and "kindly" in line for line in failed["difference"].splitlines()), failed["difference"]

    updated = await command(editor, "oscova.runTest", {"uri": saved["uri"], "update": True})
    assert updated["status"] == "updated", updated
    again = await command(editor, "oscova.runTest", {"uri": saved["uri"]})
    assert again["status"] == "passed", again
    assert len(fake.requests) == requests  # no replay reached the model


async def test_compare_with_the_previous_run_renders_both_runs_requests(editor: LanguageClient, fake: FakeOpenAI):
    fake.enqueue(Reply(text="first"))
    first = await command(editor, "oscova.runAgent", {"agentId": "echo", "input": "one"})
    fake.enqueue(Reply(text="second"))
    second = await command(editor, "oscova.runAgent", {"agentId": "echo", "input": "two"})
    comparison = await command(editor, "oscova.compareRuns", {"transcript": second["transcript"]})
    assert comparison["agentId"] == "echo"
    assert comparison["previous"]["runId"] == first["runId"] and comparison["current"]["runId"] == second["runId"]
    assert comparison["previous"]["requests"].startswith("# model request 1\n## instructions\n")
    assert "Repeat the query." in comparison["previous"]["requests"] and "one" in comparison["previous"]["requests"]
    assert "two" in comparison["current"]["requests"] and "two" not in comparison["previous"]["requests"]
    with pytest.raises(JsonRpcException, match="no earlier run of echo"):
        await command(editor, "oscova.compareRuns", {"transcript": first["transcript"]})


async def test_bad_arguments_get_an_error_for_that_request(editor: LanguageClient):
    root: Path = editor.root  # type: ignore[attr-defined]
    with pytest.raises(JsonRpcException, match="is not a case"):
        await command(editor, "oscova.runTest", {"uri": from_fs_path(str(root / "agents" / "echo.agent.yaml"))})
    with pytest.raises(JsonRpcException, match="needs `uri`"):
        await command(editor, "oscova.runTest", {})
    with pytest.raises(JsonRpcException, match="no run 'nope'"):
        await command(editor, "oscova.saveTestCase", {"runId": "nope"})


@pytest_lsp.fixture(config=CONFIG, scope="module", loop_scope="module")
async def untrusted(lsp_client: LanguageClient, fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory):
    root = write_workspace(tmp_path_factory.mktemp("untrusted-tests") / "ws", host_toml(fake.base_url, KEY_VARIABLE))
    case = root / ".oscova" / "tests" / "old.jsonl"
    case.parent.mkdir(parents=True)
    case.write_text('{"runId": "r1", "seq": 1, "kind": "started", "agentId": "echo", "input": "hi"}\n')
    await start(lsp_client, root, trust=False)
    lsp_client.case = case  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_an_untrusted_workspace_lists_cases_but_replays_none(untrusted: LanguageClient):
    case: Path = untrusted.case  # type: ignore[attr-defined]
    listed = await command(untrusted, "oscova.listTests", {})
    assert [c["name"] for c in listed] == ["old"]
    assert "recorded before transcript version" in listed[0]["error"]  # an events-only transcript: listed, with why
    with pytest.raises(JsonRpcException, match="not trusted"):
        await command(untrusted, "oscova.runTest", {"uri": from_fs_path(str(case))})
