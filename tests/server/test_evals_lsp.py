"""Evaluations from the editor: `oscova.listEvals` and `oscova.runEval` with `oscova/evalEvent`, through the
server as a subprocess (pytest-lsp), against the local OpenAI-compatible server; an untrusted workspace lists
its evaluations but does not run them."""

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

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.run_workspace import host_toml, write_workspace

from .conftest import SERVER_COMMAND, vscode_capabilities
from .test_runs import plain

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEY_VARIABLE = "OSCOVA_LSP_EVALS_KEY"
CONFIG = ClientServerConfig(server_command=SERVER_COMMAND, server_env={**os.environ, KEY_VARIABLE: "sk-evals-0123456"})
EVALUATION = """\
agent: helper
repeat: 2
cases:
  - name: launch
    input: When is the launch?
    expect:
      - contains: Tuesday
  - name: greeting
    input: Hello
    expect:
      - not_contains: Tuesday
"""


async def start(client: LanguageClient, root: Path, trusted: bool) -> list[Any]:
    events: list[Any] = []

    @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:
        return None

    @client.feature("oscova/runEvent")
    def on_run_event(params: Any) -> None:
        return None

    @client.feature("oscova/evalEvent")
    def on_eval_event(params: Any) -> None:
        events.append(plain(params))

    folder = lsp.WorkspaceFolder(uri=from_fs_path(str(root)), name="ws")
    await client.initialize_session(lsp.InitializeParams(
        capabilities=vscode_capabilities(client.protocol._converter), root_uri=folder.uri, workspace_folders=[folder],
        initialization_options={"workspaceTrusted": trusted}, client_info=lsp.ClientInfo(name="test")))
    return events


def evals_workspace(root: Path, fake: FakeOpenAI) -> Path:
    write_workspace(root, host_toml(fake.base_url, KEY_VARIABLE))
    (root / "evals").mkdir()
    (root / "evals" / "helper.eval.yaml").write_text(EVALUATION)
    (root / "evals" / "broken.eval.yaml").write_text("agent: [helper]\n")
    return root


async def command(client: LanguageClient, name: str, argument: dict[str, Any]) -> Any:
    return plain(await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=name, arguments=[argument])))


@pytest_lsp.fixture(config=CONFIG, scope="module", loop_scope="module")
async def editor(lsp_client: LanguageClient, fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory):
    root = evals_workspace(tmp_path_factory.mktemp("evals") / "ws", fake)
    lsp_client.events = await start(lsp_client, root, trusted=True)  # type: ignore[attr-defined]
    lsp_client.root = root  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_evaluations_are_listed_and_run_with_events(editor: LanguageClient, fake: FakeOpenAI):
    root: Path = editor.root  # type: ignore[attr-defined]
    listed = await command(editor, "oscova.listEvals", {})
    good = next(e for e in listed if e["file"].endswith("helper.eval.yaml"))
    assert (good["agent"], good["repeat"], good["cases"]) == ("helper", 2, [{"name": "launch", "line": 3},
                                                                            {"name": "greeting", "line": 7}])
    assert good["uri"] == from_fs_path(str(root / "evals" / "helper.eval.yaml"))
    broken = next(e for e in listed if e["file"].endswith("broken.eval.yaml"))
    assert "error" in broken and "agent" not in broken

    fake.responder = lambda body: Reply(text="On Tuesday." if "launch" in body["messages"][-1]["content"] else "Hi!")
    result = await command(editor, "oscova.runEval", {"uri": good["uri"], "case": "launch"})
    [case] = result["evals"][0]["cases"]
    assert (case["name"], case["runs"], case["passed"], case["ok"], result["ok"]) == ("launch", 2, 2, True, True)
    assert Path(result["folder"]).parent == root / ".oscova" / "evals"
    events = editor.events  # type: ignore[attr-defined]
    assert [(e["case"], e["done"], e["total"]) for e in events] == [("launch", 1, 2), ("launch", 2, 2)]

    lenses = await editor.text_document_code_lens_async(lsp.CodeLensParams(
        text_document=lsp.TextDocumentIdentifier(uri=good["uri"])))
    assert [(lens.range.start.line, lens.command.title, plain(lens.command.arguments)) for lens in lenses] == [
        (3, "Run eval", [{"uri": good["uri"], "case": "launch"}]), (7, "Run eval", [{"uri": good["uri"], "case": "greeting"}])]

    # A drifted answer: the failure carries both texts, for the editor's diff view.
    fake.responder = lambda body: Reply(text="On Monday.")
    drifted = await command(editor, "oscova.runEval", {"uri": good["uri"], "case": "launch", "repeat": 1})
    [failure] = drifted["evals"][0]["cases"][0]["failures"]
    assert (failure["assertion"], failure["expected"], failure["actual"]) == ('contains: "Tuesday"', "Tuesday", "On Monday.")

    with pytest.raises(JsonRpcException, match="cannot be evaluated until its errors are fixed"):
        await command(editor, "oscova.runEval", {"uri": broken["uri"]})
    with pytest.raises(JsonRpcException, match="`repeat` must be a whole number"):
        await command(editor, "oscova.runEval", {"uri": good["uri"], "repeat": "3"})
    with pytest.raises(JsonRpcException, match="outside every folder the editor opened"):
        await command(editor, "oscova.runEval", {"uri": from_fs_path("/etc/x.eval.yaml")})
    sent = len(fake.requests)
    with pytest.raises(JsonRpcException, match=r"helper.eval.yaml: 2 cases × 1 model × 100,000,000 repeats make "
                                               r"200,000,000 runs, over the 10,000 one evaluation may make"):
        await command(editor, "oscova.runEval", {"uri": good["uri"], "repeat": 100_000_000})
    assert len(fake.requests) == sent


async def test_cancel_request_ends_the_runs_and_answers_with_what_finished(editor: LanguageClient, fake: FakeOpenAI):
    import asyncio

    root: Path = editor.root  # type: ignore[attr-defined]
    fake.reset()
    answered = iter([Reply(text="On Tuesday.")])
    fake.responder = lambda body: next(answered, Reply(text="slow", hang=True))
    protocol = editor.protocol
    future = asyncio.get_running_loop().create_future()
    protocol._request_futures["eval-cancel"] = future
    protocol._send_data({"jsonrpc": "2.0", "id": "eval-cancel", "method": "workspace/executeCommand", "params": {
        "command": "oscova.runEval", "arguments": [{"uri": from_fs_path(str(root / "evals" / "helper.eval.yaml")),
                                                    "case": "launch"}]}})
    await asyncio.to_thread(fake.wait_for_requests, 2, 20)  # one answered, one hanging
    await asyncio.sleep(0.3)
    protocol.notify("$/cancelRequest", lsp.CancelParams(id="eval-cancel"))
    result = plain(await asyncio.wait_for(future, 10))
    assert result["cancelled"] is True and result["ok"] is False
    [case] = result["evals"][0]["cases"]
    assert (case["runs"], case["passed"]) == (2, 1)
    assert await asyncio.to_thread(fake.requests[1].finished.wait, 5) and fake.requests[1].closed_early


@pytest_lsp.fixture(config=CONFIG, scope="module", loop_scope="module")
async def untrusted(lsp_client: LanguageClient, fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory):
    root = evals_workspace(tmp_path_factory.mktemp("untrusted-evals") / "ws", fake)
    await start(lsp_client, root, trusted=False)
    lsp_client.root = root  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_an_untrusted_workspace_lists_evaluations_but_does_not_run_them(untrusted: LanguageClient,
                                                                              fake: FakeOpenAI):
    root: Path = untrusted.root  # type: ignore[attr-defined]
    listed = await command(untrusted, "oscova.listEvals", {"uri": from_fs_path(str(root))})
    assert sorted(Path(e["file"]).name for e in listed) == ["broken.eval.yaml", "helper.eval.yaml"]
    sent = len(fake.requests)
    with pytest.raises(JsonRpcException, match="The workspace is not trusted: oscova.runEval runs agents"):
        await command(untrusted, "oscova.runEval", {"uri": from_fs_path(str(root / "evals" / "helper.eval.yaml"))})
    assert len(fake.requests) == sent
    assert not (root / ".oscova" / "evals").exists()
    lenses = await untrusted.text_document_code_lens_async(lsp.CodeLensParams(
        text_document=lsp.TextDocumentIdentifier(uri=from_fs_path(str(root / "evals" / "helper.eval.yaml")))))
    assert list(lenses or []) == []


async def test_completion_at_the_end_of_a_very_long_line_answers_at_once(untrusted: LanguageClient):
    import time

    root: Path = untrusted.root  # type: ignore[attr-defined]
    uri = from_fs_path(str(root / "evals" / "long.eval.yaml"))
    lines = ["a" * 210_000 + ":", "    input: " + "a" * 210_000 + ",", "      - tools: {calls: [" + "a, " * 70_000]
    untrusted.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="yaml", version=1, text="agent: helper\ncases:\n  - name: x\n" + "\n".join(lines) + "\n")))
    for number, line in enumerate(lines, 3):
        started = time.perf_counter()
        await untrusted.text_document_completion_async(lsp.CompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=number, character=len(line))))
        assert time.perf_counter() - started < 2.0, line[:20]
    started = time.perf_counter()
    hover = await untrusted.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=2, character=5)))
    assert time.perf_counter() - started < 2.0 and hover is not None


async def test_a_backtracking_assertion_fails_within_its_budget_and_hovers_are_answered_meanwhile(
        editor: LanguageClient, fake: FakeOpenAI):
    import asyncio
    import time

    root: Path = editor.root  # type: ignore[attr-defined]
    slow = root / "evals" / "slow.eval.yaml"
    slow.write_text("agent: helper\ncases:\n  - name: slow\n    input: hi\n    expect:\n"
                    + "".join(f"      - regex: '^(a|aa)+{n}$'\n" for n in range(3)))
    editor.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[
        lsp.FileEvent(uri=from_fs_path(str(slow)), type=lsp.FileChangeType.Created)]))
    fake.reset()
    fake.responder = lambda body: Reply(text="a" * 60 + "!")
    running = asyncio.ensure_future(command(editor, "oscova.runEval", {"uri": from_fs_path(str(slow))}))
    helper = from_fs_path(str(root / "evals" / "helper.eval.yaml"))
    slowest = 0.0
    while not running.done():
        started = time.perf_counter()
        await editor.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=helper), position=lsp.Position(line=0, character=2)))
        slowest = max(slowest, time.perf_counter() - started)
        await asyncio.wait({running}, timeout=0.05)
    [case] = (await running)["evals"][0]["cases"]
    assert [f["message"] for f in case["failures"]] == [
        f"run 1: the regex /^(a|aa)+{n}$/ took longer than 1 s on the answer (61 characters) and was stopped"
        for n in range(3)]
    assert slowest < 1.0
