"""Runs from the editor, end to end: the server as a subprocess driven by pytest-lsp with VS Code 1.139's
capabilities, its models served by the local OpenAI-compatible server of `tests/support/fake_openai.py`.

`oscova.*` commands, code lenses, `oscova/runEvent` streaming with work-done progress, the three ways to
cancel, approval through `window/showMessageRequest`, concurrency, transcripts, secrets and failures in words.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall
from tests.support.run_workspace import host_toml, write_workspace

from .conftest import (
    ANSWER_TIMEOUT,
    RUN_CLIENT,
    SERVER_COMMAND,
    SessionOptions,
    answered,
    start_session,
    stop_server,
    with_trust,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

CANARY_KEY = "sk-canary-lsp-4e1d8b7a90c35f26"
KEY_VARIABLE = "OSCOVA_LSP_RUNS_TEST_KEY"
UNSET_VARIABLE = "OSCOVA_LSP_RUNS_UNSET_KEY"
SERVER_ENV = {**{k: v for k, v in os.environ.items() if k not in (UNSET_VARIABLE,)}, KEY_VARIABLE: CANARY_KEY}
CONFIG = ClientServerConfig(server_command=SERVER_COMMAND, server_env=SERVER_ENV)
DONE = ("completed", "failed", "cancelled")

def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def make_workspace(root: Path, base_url: str) -> Path:
    """The main root (helper, echo, lead) and two nested roots: `offline/` whose endpoint is unreachable and
    `keyless/` whose key variable is unset."""
    write_workspace(root, host_toml(base_url, KEY_VARIABLE, extra='[user]\nname = "Alice Example"\n'))
    for folder, url, variable in (("offline", closed_port_url(), KEY_VARIABLE),
                                  ("keyless", base_url, UNSET_VARIABLE)):
        (root / folder).mkdir()
        (root / folder / "oscova.toml").write_text(host_toml(url, variable))
        (root / folder / f"{folder}.agent.yaml").write_text(f"id: {folder}\ninstructions: Answer.\n")
    return root


def plain(value: Any) -> Any:
    """pygls hands an unknown notification's params over as named tuples: back to JSON values."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


class Session:
    """What the client saw: run events, approval prompts, and a way to send raw requests."""

    def __init__(self, client: LanguageClient, root: Path, fake: FakeOpenAI) -> None:
        self.client = client
        self.root = root
        self.fake = fake
        self.events: list[dict[str, Any]] = []
        self.prompts: list[lsp.ShowMessageRequestParams] = []
        self.answer: str | None = "Approve"
        self.results: list[Any] = []
        self.initialize_result: lsp.InitializeResult | None = None

    def uri(self, rel: str = "") -> str:
        return from_fs_path(str(self.root / rel) if rel else str(self.root))

    async def command(self, name: str, argument: dict[str, Any] | None = None, **extra: Any) -> Any:
        params = lsp.ExecuteCommandParams(command=name, arguments=[argument] if argument is not None else None,
                                          **extra)
        result = await self.client.workspace_execute_command_async(params)
        self.results.append(result)
        return result

    async def raw_request(self, method: str, params: Any, msg_id: str) -> asyncio.Future[Any]:
        protocol = self.client.protocol
        future = asyncio.get_running_loop().create_future()
        protocol._request_futures[msg_id] = future
        protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})

        async def answer() -> Any:
            return plain(await future)

        return asyncio.ensure_future(answer())

    def of_run(self, run_id: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["runId"] == run_id]

    def run_id_for(self, input_text: str) -> str | None:
        for event in self.events:
            if event["kind"] == "started" and event["input"] == input_text:
                return str(event["runId"])
        return None

    async def wait_event(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in self.events:
                if predicate(event):
                    return event
            await asyncio.sleep(0.005)
        raise AssertionError(f"no such event; saw {[(e['runId'], e['kind']) for e in self.events][-20:]}")

    def progress_of(self, title: str) -> list[tuple[Any, list[Any]]]:
        """(token, values) of every work-done progress whose begin has this title."""
        found = []
        for token, values in self.client.progress_reports.items():
            if values and isinstance(values[0], lsp.WorkDoneProgressBegin) and values[0].title == title:
                found.append((token, values))
        return found


async def start_run_session(lsp_client: LanguageClient, root: Path, fake: FakeOpenAI,
                            options: SessionOptions = RUN_CLIENT) -> Session:
    session = Session(lsp_client, root, fake)

    @lsp_client.feature("oscova/runEvent")
    def on_run_event(params: Any) -> None:
        session.events.append(plain(params))

    @lsp_client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_show_message_request(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem | None:
        session.prompts.append(params)
        return lsp.MessageActionItem(title=session.answer) if session.answer else None

    editor = await start_session(lsp_client, root, options)
    session.initialize_result = editor.initialize_result  # type: ignore[attr-defined]
    return session


@pytest_lsp.fixture(config=CONFIG, scope="module", loop_scope="module")
async def client(lsp_client: LanguageClient, fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory):
    root = make_workspace(tmp_path_factory.mktemp("runs") / "ws", fake.base_url)
    lsp_client.session = await start_run_session(lsp_client, root, fake)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def s(client: LanguageClient, fake: FakeOpenAI) -> Session:
    fake.reset()
    session: Session = client.session  # type: ignore[attr-defined]
    session.answer = "Approve"
    return session


def assert_well_formed(events: list[dict[str, Any]]) -> None:
    assert events and events[0]["kind"] == "started"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [e["kind"] in DONE for e in events].count(True) == 1 and events[-1]["kind"] in DONE


# -- commands and lenses -------------------------------------------------------------------------------


async def test_commands_and_code_lenses_are_advertised(s: Session):
    # The fast `initialize` answer (launch.py) says what pygls would; test_launch checks they agree.
    assert s.initialize_result is not None
    caps = s.initialize_result.capabilities
    assert list(caps.execute_command_provider.commands) == [
        "oscova.runAgent", "oscova.previewPrompt", "oscova.cancelRun", "oscova.evictAgent",
        "oscova.invalidateAgents", "oscova.invalidateAll", "oscova.listAgents", "oscova.listTests", "oscova.runTest",
        "oscova.saveTestCase", "oscova.compareRuns", "oscova.review", "oscova.listEvals", "oscova.runEval"]
    assert caps.code_lens_provider is not None
    assert caps.text_document_sync.save
    result = await s.command("oscova.listAgents", {"uri": s.uri()})
    assert [a["id"] for a in result] == ["echo", "helper", "lead"]


async def test_list_agents(s: Session):
    agents = await s.command("oscova.listAgents", {"uri": s.uri("agents/helper.agent.yaml")})
    helper = next(a for a in agents if a["id"] == "helper")
    assert helper == {"id": "helper", "name": "Helper", "uri": s.uri("agents/helper.agent.yaml"),
                      "exposedAsTool": False, "exampleInput": "When is the launch?"}
    assert next(a for a in agents if a["id"] == "echo")["exposedAsTool"] is True
    everywhere = await s.command("oscova.listAgents", {})
    assert sorted(a["id"] for a in everywhere) == ["echo", "helper", "keyless", "lead", "offline"]
    nested = await s.command("oscova.listAgents", {"uri": s.uri("offline")})
    assert [a["id"] for a in nested] == ["offline"]


async def test_code_lenses_above_each_definition(s: Session):
    uri = s.uri("agents/helper.agent.yaml")
    s.client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="yaml", version=1, text=(s.root / "agents/helper.agent.yaml").read_text())))
    lenses = await s.client.text_document_code_lens_async(lsp.CodeLensParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert [(lens.range.start.line, lens.command.title, lens.command.command) for lens in lenses[:2]] == [
        (0, "Run agent", "oscova.runAgent"), (0, "Preview prompt", "oscova.previewPrompt")]
    assert list(lenses[0].command.arguments) == [{"agentId": "helper", "input": "When is the launch?", "uri": uri}]
    assert list(lenses[1].command.arguments) == [{"agentId": "helper", "uri": uri}]
    # The third, the prompt's tokens, is counted when the editor shows it (test_token_figures.py).
    assert len(lenses) == 3 and lenses[2].command is None and lenses[2].data == {"agentId": "helper", "uri": uri}
    lead = s.uri("agents/lead.agent.yaml")
    s.client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=lead, language_id="yaml", version=1, text=(s.root / "agents/lead.agent.yaml").read_text())))
    lenses = await s.client.text_document_code_lens_async(lsp.CodeLensParams(
        text_document=lsp.TextDocumentIdentifier(uri=lead)))
    assert list(lenses[0].command.arguments) == [{"agentId": "lead", "input": "", "uri": lead}]
    template = await s.client.text_document_code_lens_async(lsp.CodeLensParams(
        text_document=lsp.TextDocumentIdentifier(uri=s.uri("oscova.toml"))))
    assert not template


@pytest.mark.parametrize("name, argument, words", [
    ("oscova.runAgent", None, "agentId"),
    ("oscova.runAgent", {"agentId": "helper"}, "input"),
    ("oscova.runAgent", {"agentId": 3, "input": "hi"}, "agentId"),
    ("oscova.previewPrompt", {"agentId": ""}, "agentId"),
    ("oscova.cancelRun", {}, "runId"),
    ("oscova.evictAgent", {}, "agentId"),
    ("oscova.listAgents", {"uri": "untitled:Untitled-1"}, "file: URI"),
])
async def test_bad_arguments_are_an_error_for_that_request_only(s: Session, name, argument, words):
    with pytest.raises(JsonRpcException, match=words):
        await s.command(name, argument)
    assert await s.command("oscova.invalidateAgents", {}) is None  # still serving


async def test_bad_argument_shapes(s: Session):
    for arguments in (["helper", "hi"], [1]):
        with pytest.raises(JsonRpcException, match="one argument object"):
            await s.client.workspace_execute_command_async(
                lsp.ExecuteCommandParams(command="oscova.runAgent", arguments=arguments))
    with pytest.raises(JsonRpcException, match="unknown command"):
        await s.client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="oscova.nothing"))


async def test_preview_lists_each_providers_contribution_in_the_default_order(s: Session):
    preview = await s.command("oscova.previewPrompt", {"agentId": "lead", "input": "Plan the launch",
                                                       "uri": s.uri("agents/lead.agent.yaml")})
    providers = preview["providers"]
    assert [p["type"] for p in providers] == ["environment", "tools", "personal", "private_notes", "agent_tools"]
    assert [p["position"] for p in providers] == sorted(p["position"] for p in providers)
    by_type = {p["type"]: p for p in providers}
    assert by_type["personal"]["instructions"] == "Delegate to echo.\n"
    assert by_type["agent_tools"]["tools"] == ["echo"]
    assert isinstance(preview["instructions"], str)
    assert preview["instructions"] == "\n".join(p["instructions"] for p in providers if p["instructions"])
    assert [t["name"] for t in preview["tools"]] == ["echo"]
    assert preview["messages"][0] == {"role": "user", "source": "External", "text": "Plan the launch"}
    assert s.fake.requests == []  # no model involved


async def test_preview_of_an_unknown_agent_is_an_error_in_words(s: Session):
    with pytest.raises(JsonRpcException, match="No agent definition has the id 'nobody'"):
        await s.command("oscova.previewPrompt", {"agentId": "nobody"})


# -- a run -----------------------------------------------------------------------------------------------


async def test_a_run_streams_its_events_with_progress(s: Session):
    s.fake.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "call_a")]),
                   Reply(text="The launch is on Tuesday.", chunk_size=4))
    result = await s.command("oscova.runAgent", {"agentId": "helper", "input": "When is the launch?",
                                                 "uri": s.uri("agents/helper.agent.yaml")})
    assert result["status"] == "completed" and result["text"] == "The launch is on Tuesday."
    assert [m["role"] for m in result["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert "error" not in result
    events = s.of_run(result["runId"])
    assert_well_formed(events)
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "started" and kinds[-1] == "completed"
    assert {"message", "delta", "toolCall", "toolResult"} <= set(kinds)
    assert kinds.index("toolCall") < kinds.index("toolResult") < kinds.index("delta")
    assert events[0]["agentName"] == "Helper" and events[0]["input"] == "When is the launch?"
    assert "".join(e["text"] for e in events if e["kind"] == "delta") == "The launch is on Tuesday."
    call = next(e for e in events if e["kind"] == "toolCall")
    assert (call["name"], call["arguments"]) == ("read_file", {"path": "data/notes.txt"})
    assert "Tuesday" in next(e for e in events if e["kind"] == "toolResult")["result"]

    (token, values), = s.progress_of("Running Helper")
    assert isinstance(values[0], lsp.WorkDoneProgressBegin) and values[0].cancellable is True
    assert any(isinstance(v, lsp.WorkDoneProgressReport) and v.message == "calling read_file" for v in values)
    assert isinstance(values[-1], lsp.WorkDoneProgressEnd) and values[-1].message == "completed"
    # The transcript: JSON lines under .oscova/runs/, the same events.
    transcript = Path(result["transcript"])
    assert transcript.is_file() and (s.root / ".oscova" / "runs") in transcript.parents
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [e["kind"] for e in lines if "kind" in e] == kinds  # and the recording lines (`record`)


async def test_a_session_continues_the_conversation(s: Session):
    s.fake.enqueue(Reply(text="Hello Alice."), Reply(text="You are Alice."))
    first = await s.command("oscova.runAgent", {"agentId": "helper", "input": "I am Alice."})
    second = await s.command("oscova.runAgent", {"agentId": "helper", "input": "Who am I?",
                                                 "sessionId": first["sessionId"]})
    assert second["sessionId"] == first["sessionId"] and second["text"] == "You are Alice."
    assert [m.get("content") for m in s.fake.requests[1].messages][1:] == ["I am Alice.", "Hello Alice.", "Who am I?"]


async def test_the_clients_work_done_token_is_used(s: Session):
    s.fake.enqueue(Reply(text="ok"))
    s.client.progress_reports.setdefault("client-token-1", [])
    result = await s.command("oscova.runAgent", {"agentId": "helper", "input": "token"},
                             work_done_token="client-token-1")
    assert result["status"] == "completed"
    values = s.client.progress_reports["client-token-1"]
    assert isinstance(values[0], lsp.WorkDoneProgressBegin) and values[0].title == "Running Helper"
    assert isinstance(values[-1], lsp.WorkDoneProgressEnd)


async def test_two_runs_at_once_keep_their_events_apart(s: Session):
    def respond(body: dict[str, Any]) -> Reply:
        question = body["messages"][-1]["content"]
        return Reply(text=f"Answer to {question}: " + "x" * 20, chunk_size=3, delay=0.01)

    s.fake.responder = respond
    first, second = await asyncio.gather(
        s.command("oscova.runAgent", {"agentId": "helper", "input": "one"}),
        s.command("oscova.runAgent", {"agentId": "lead", "input": "two"}))
    assert first["runId"] != second["runId"]
    for result, question in ((first, "one"), (second, "two")):
        assert result["status"] == "completed"
        events = s.of_run(result["runId"])
        assert_well_formed(events)
        assert "".join(e["text"] for e in events if e["kind"] == "delta") == f"Answer to {question}: " + "x" * 20
    # They overlapped (each started before the other ended), yet each run's seq is its own.
    position = {(e["runId"], e["kind"]): i for i, e in enumerate(s.events)}
    for one, other in ((first, second), (second, first)):
        assert position[(one["runId"], "started")] < position[(other["runId"], "completed")]


async def test_a_slow_run_does_not_delay_completion_or_diagnostics(s: Session):
    s.fake.enqueue(Reply(text="slow words " * 20, chunk_size=3, delay=0.05))
    run = asyncio.ensure_future(s.command("oscova.runAgent", {"agentId": "helper", "input": "slowly"}))
    await s.wait_event(lambda e: e["kind"] == "delta" and e["runId"] == s.run_id_for("slowly"))
    uri = s.uri("agents/echo.agent.yaml")
    s.client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="yaml", version=1, text="id: echo\ninstructions: Repeat {{ \n")))
    # Answered while the run still streams, not after it (how soon: benchmarks/responsiveness_bench.py `runs`).
    completion = await s.client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=1, character=24)))
    report = await s.client.text_document_diagnostic_async(lsp.DocumentDiagnosticParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert not run.done(), "the run should still be streaming"
    assert completion is not None and any(i.label == "user_name" for i in completion.items)
    assert report.kind == "full"
    result = await run
    assert result["status"] == "completed"
    s.client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))


# -- cancellation ------------------------------------------------------------------------------------------


async def _hanging_run(s: Session, input_text: str) -> tuple[str, Any]:
    s.fake.enqueue(Reply(text="first words then silence", chunk_size=6, hang=True))
    request = await s.raw_request("workspace/executeCommand", {
        "command": "oscova.runAgent", "arguments": [{"agentId": "helper", "input": input_text}]},
        f"run-{input_text}")
    event = await s.wait_event(lambda e: e["kind"] == "delta" and e["runId"] == s.run_id_for(input_text))
    return event["runId"], request


async def _assert_cancelled(s: Session, run_id: str, began: float) -> None:
    await s.wait_event(lambda e: e["runId"] == run_id and e["kind"] == "cancelled", timeout=1)
    assert time.monotonic() - began < 1
    assert_well_formed(s.of_run(run_id))
    request = s.fake.requests[0]
    assert await asyncio.to_thread(request.finished.wait, 1)
    assert request.closed_early


async def test_cancel_run_command(s: Session):
    run_id, request = await _hanging_run(s, "cancel by command")
    began = time.monotonic()
    assert await s.command("oscova.cancelRun", {"runId": run_id}) is None
    await _assert_cancelled(s, run_id, began)
    result = await asyncio.wait_for(request, 2)
    assert result["status"] == "cancelled" and result["text"] == "first "
    assert await s.command("oscova.cancelRun", {"runId": run_id}) is None  # over: still null


async def test_cancel_from_the_progress(s: Session):
    run_id, request = await _hanging_run(s, "cancel by progress")
    token = next(token for token, values in s.progress_of("Running Helper")
                 if not any(isinstance(v, lsp.WorkDoneProgressEnd) for v in values))
    began = time.monotonic()
    s.client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
    await _assert_cancelled(s, run_id, began)
    result = await asyncio.wait_for(request, 2)
    assert result["status"] == "cancelled"
    await asyncio.sleep(0.1)
    end = s.client.progress_reports[token][-1]
    assert isinstance(end, lsp.WorkDoneProgressEnd) and end.message == "cancelled"


async def test_cancel_request(s: Session):
    run_id, request = await _hanging_run(s, "cancel by request")
    began = time.monotonic()
    s.client.protocol.notify("$/cancelRequest", lsp.CancelParams(id="run-cancel by request"))
    await _assert_cancelled(s, run_id, began)
    result = await asyncio.wait_for(request, 2)  # the request is answered with the run's result
    assert result["status"] == "cancelled"


# -- approval ------------------------------------------------------------------------------------------------


def write_reply() -> Reply:
    return Reply(tool_calls=[ToolCall("write_file", {"path": "data/out.txt", "content": "hello"}, "w1")])


async def test_an_approved_tool_runs(s: Session):
    s.fake.enqueue(write_reply(), Reply(text="Written."))
    s.prompts.clear()
    result = await s.command("oscova.runAgent", {"agentId": "helper", "input": "write it"})
    assert result["status"] == "completed"
    prompt, = s.prompts
    assert [a.title for a in prompt.actions] == ["Approve", "Deny"]
    assert "write_file" in prompt.message and '"data/out.txt"' in prompt.message
    assert (s.root / "data" / "out.txt").read_text() == "hello"
    (s.root / "data" / "out.txt").unlink()


async def test_a_denied_tool_does_not_run_and_the_model_is_told(s: Session):
    s.fake.enqueue(write_reply(), Reply(text="Understood."))
    s.prompts.clear()
    s.answer = "Deny"
    result = await s.command("oscova.runAgent", {"agentId": "helper", "input": "write it"})
    assert result["status"] == "completed" and len(s.prompts) == 1
    assert not (s.root / "data" / "out.txt").exists()
    denied = next(e for e in s.of_run(result["runId"]) if e["kind"] == "toolResult")
    assert denied["denied"] is True
    assert s.fake.requests[1].messages[-1]["content"] == "The user denied this call."


async def test_a_dismissed_prompt_denies(s: Session):
    s.fake.enqueue(write_reply(), Reply(text="ok"))
    s.answer = None
    result = await s.command("oscova.runAgent", {"agentId": "helper", "input": "write it"})
    assert result["status"] == "completed" and not (s.root / "data" / "out.txt").exists()


# -- failures, secrets, cache ----------------------------------------------------------------------------------


async def test_an_unreachable_endpoint_says_so(s: Session):
    result = await s.command("oscova.runAgent", {"agentId": "offline", "input": "hi",
                                                 "uri": s.uri("offline/offline.agent.yaml")})
    assert result["status"] == "failed"
    assert "unreachable" in result["error"] and "Traceback" not in result["error"]
    assert s.of_run(result["runId"])[-1]["kind"] == "failed"
    (token, values), = s.progress_of("Running offline")
    assert values[-1].message.startswith("failed: ")


async def test_an_unset_key_names_the_variable(s: Session):
    result = await s.command("oscova.runAgent", {"agentId": "keyless", "input": "hi", "uri": s.uri("keyless")})
    assert result["status"] == "failed"
    assert UNSET_VARIABLE in result["error"] and "not set" in result["error"]
    assert s.fake.requests == []


async def test_an_unknown_agent_fails_in_words(s: Session):
    result = await s.command("oscova.runAgent", {"agentId": "nobody", "input": "hi"})
    assert result["status"] == "failed" and "No agent definition has the id 'nobody'" in result["error"]


async def test_evict_and_invalidate(s: Session):
    for name, argument in (("oscova.evictAgent", {"agentId": "helper"}),
                           ("oscova.evictAgent", {"agentId": "helper", "uri": s.uri()}),
                           ("oscova.invalidateAgents", {}), ("oscova.invalidateAll", {}),
                           ("oscova.invalidateAll", None)):
        assert await s.command(name, argument) is None
    s.fake.enqueue(Reply(text="still fine"))
    assert (await s.command("oscova.runAgent", {"agentId": "helper", "input": "after"}))["status"] == "completed"


async def test_saving_a_definition_evicts_it(s: Session):
    path = s.root / "agents" / "echo.agent.yaml"
    s.fake.enqueue(Reply(text="one"))
    await s.command("oscova.runAgent", {"agentId": "lead", "input": "first"})
    path.write_text(path.read_text().replace("Repeat the query.", "Repeat the query twice."))
    s.client.text_document_did_save(lsp.DidSaveTextDocumentParams(
        text_document=lsp.TextDocumentIdentifier(uri=s.uri("agents/echo.agent.yaml"))))
    preview = await s.command("oscova.previewPrompt", {"agentId": "echo"})
    assert "Repeat the query twice." in preview["instructions"]
    # A watched-file change (the file changed outside the editor) evicts as well.
    path.write_text(path.read_text().replace("twice", "thrice"))
    s.client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[
        lsp.FileEvent(uri=s.uri("agents/echo.agent.yaml"), type=lsp.FileChangeType.Changed)]))
    preview = await s.command("oscova.previewPrompt", {"agentId": "echo"})
    assert "Repeat the query thrice." in preview["instructions"]


async def test_the_key_never_reaches_the_editor(s: Session):
    """Runs above sent the key to the model (the fake server saw it) but never to the editor."""
    s.fake.enqueue(Reply(text=f"echoing {CANARY_KEY}"))
    result = await s.command("oscova.runAgent", {"agentId": "helper", "input": f"say {CANARY_KEY}"})
    assert s.fake.requests[0].headers["authorization"] == f"Bearer {CANARY_KEY}"
    assert result["status"] == "completed"
    seen = json.dumps([s.events, s.results], default=str)
    assert CANARY_KEY not in seen
    logs = [m.message for m in s.client.log_messages] + [m.message for m in s.client.messages]
    assert logs and not [m for m in logs if CANARY_KEY in m]
    for transcript in (s.root / ".oscova" / "runs").rglob("*"):
        if transcript.is_file():
            assert CANARY_KEY not in transcript.read_text()


# -- other clients ---------------------------------------------------------------------------------------------


@pytest_lsp.fixture(config=CONFIG, scope="module", loop_scope="module")
async def untrusted(lsp_client: LanguageClient, fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory):
    root = make_workspace(tmp_path_factory.mktemp("untrusted") / "ws", fake.base_url)
    lsp_client.session = await start_run_session(  # type: ignore[attr-defined]
        lsp_client, root, fake, with_trust(RUN_CLIENT, False))
    yield
    await lsp_client.shutdown_session()


async def test_an_untrusted_workspace_refuses_runs(untrusted: LanguageClient, fake: FakeOpenAI):
    fake.reset()
    session: Session = untrusted.session  # type: ignore[attr-defined]
    with pytest.raises(JsonRpcException, match="not trusted"):
        await session.command("oscova.runAgent", {"agentId": "helper", "input": "hi"})
    preview = await session.command("oscova.previewPrompt", {"agentId": "helper"})
    assert preview["providers"]
    assert fake.requests == [] and session.events == []


@pytest_lsp.fixture(config=CONFIG, scope="module", loop_scope="module")
async def bare(lsp_client: LanguageClient, fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory):
    """A client without `window/showMessageRequest` support (Emacs's preset)."""
    root = make_workspace(tmp_path_factory.mktemp("bare") / "ws", fake.base_url)
    capabilities = client_capabilities("emacs")
    assert capabilities.window is None or capabilities.window.show_message is None
    lsp_client.session = await start_run_session(  # type: ignore[attr-defined]
        lsp_client, root, fake, replace(RUN_CLIENT, client="emacs"))
    yield
    await lsp_client.shutdown_session()


async def test_a_client_that_does_not_declare_show_message_is_still_asked(bare: LanguageClient, fake: FakeOpenAI):
    """Emacs's preset declares no `window.showMessage`, yet eglot answers `window/showMessageRequest`."""
    fake.reset()
    session: Session = bare.session  # type: ignore[attr-defined]
    session.prompts.clear()
    session.answer = "Approve"
    fake.enqueue(write_reply(), Reply(text="Written."))
    result = await session.command("oscova.runAgent", {"agentId": "helper", "input": "write it"})
    assert result["status"] == "completed" and [e["kind"] for e in session.events][-1] == "completed"
    assert "write_file" in fake.requests[0].tool_names and len(session.prompts) == 1
    assert (session.root / "data" / "out.txt").read_text() == "hello"


async def test_shutdown_cancels_every_run(fake: FakeOpenAI, tmp_path: Path):
    """A server of its own: `shutdown` while a run streams ends the run as cancelled and closes the stream.
    Every wait is bounded (a fresh server's first run takes over 10 s on a loaded machine) and the server is
    ended whatever happens (`stop_server`), so a failure fails the test instead of hanging the suite."""
    fake.reset()
    root = make_workspace(tmp_path / "ws", fake.base_url)
    client = await CONFIG.start()
    try:
        session = await answered(start_run_session(client, root, fake), "initialize")
        fake.enqueue(Reply(text="first words then silence", chunk_size=6, hang=True))
        run = asyncio.ensure_future(session.command("oscova.runAgent", {"agentId": "helper", "input": "x"}))
        await session.wait_event(lambda e: e["kind"] == "delta", timeout=ANSWER_TIMEOUT)
        assert await answered(client.shutdown_async(None), "shutdown") is None
        await session.wait_event(lambda e: e["kind"] == "cancelled", timeout=ANSWER_TIMEOUT)
        assert await asyncio.to_thread(fake.requests[0].finished.wait, ANSWER_TIMEOUT) and fake.requests[0].closed_early
        with contextlib.suppress(JsonRpcException):  # the run's request: cancelled by `shutdown`
            await answered(run, "the run's request")
        client.exit(None)
        assert await answered(client._server.wait(), "exit") == 0
    finally:
        await stop_server(client)


async def test_shutdown_is_answered_while_requests_and_a_run_are_in_flight(fake: FakeOpenAI, tmp_path: Path):
    """An editor closing sends `shutdown` and waits for its answer: it comes while a run streams and other
    requests wait (a held workspace pull, commands, a symbol search, all sent in the same burst), each of
    those gets an answer too (a result or an error, never none), and `exit` then ends the server with 0."""
    fake.reset()
    root = make_workspace(tmp_path / "ws", fake.base_url)
    client = await CONFIG.start()
    try:
        session = await answered(start_run_session(client, root, fake), "initialize")
        first = await answered(client.workspace_diagnostic_async(lsp.WorkspaceDiagnosticParams(previous_result_ids=[])),
                               "workspace/diagnostic")
        previous = [lsp.PreviousResultId(uri=item.uri, value=item.result_id) for item in first.items]
        fake.enqueue(Reply(text="first words then silence", chunk_size=6, hang=True))
        run = asyncio.ensure_future(session.command("oscova.runAgent", {"agentId": "helper", "input": "x"}))
        await session.wait_event(lambda e: e["kind"] == "delta", timeout=ANSWER_TIMEOUT)
        in_flight = {what: asyncio.ensure_future(request) for what, request in {
            "a held workspace/diagnostic": client.workspace_diagnostic_async(
                lsp.WorkspaceDiagnosticParams(previous_result_ids=previous)),
            "oscova.previewPrompt": client.workspace_execute_command_async(lsp.ExecuteCommandParams(
                command="oscova.previewPrompt", arguments=[{"agentId": "helper"}])),
            "oscova.listAgents": client.workspace_execute_command_async(lsp.ExecuteCommandParams(
                command="oscova.listAgents", arguments=[{}])),
            "workspace/symbol": client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="")),
        }.items()}
        shutdown = asyncio.ensure_future(client.shutdown_async(None))  # sent right behind them, in the same burst
        assert await answered(shutdown, "shutdown") is None
        for what, request in [*in_flight.items(), ("the run's request", run)]:
            with contextlib.suppress(JsonRpcException):  # an error is an answer (cancelled by `shutdown`)
                await answered(request, what)
        await session.wait_event(lambda e: e["kind"] == "cancelled", timeout=ANSWER_TIMEOUT)
        client.exit(None)
        assert await answered(client._server.wait(), "exit") == 0
    finally:
        await stop_server(client)

