"""An untrusted folder cannot make the editor deaf (issue 20, items 1 and 10): cases and transcripts that are
links to `/proc/self/fd/0` (the server's own stdin), `/dev/zero` or `/etc/shadow`, or a FIFO, get a refusal
each from `oscova.listTests` and `oscova.compareRuns`, at once; the server never reads its stdin through
them, its memory does not grow, and a hover sent while the listing runs is answered within 100 ms.

The server is a subprocess over stdio (pytest-lsp, VS Code 1.139's capabilities) in an untrusted workspace:
listing cases is allowed in Restricted Mode, which is why it must be safe.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
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
from tests.support.special_files import READ_ONLY_WORDS, read_only

from .conftest import SERVER_COMMAND, vscode_capabilities
from .test_runs import plain

pytestmark = pytest.mark.asyncio(loop_scope="module")

DEFINITION = "agents/echo.agent.yaml"
HOVER_AT = lsp.Position(line=0, character=1)  # the `id` key
HOVER_BUDGET = 0.100
"""Seconds: a hover sent while the hostile listing runs is answered within this (the acceptance)."""
ANSWER_BUDGET = 5.0
"""Seconds: listTests and compareRuns answer within this; on the unchanged code they never did."""


def transcript_lines(run_id: str) -> str:
    """A small version-2 transcript of a completed run of `echo` (a header and the final event)."""
    header = {"record": "header", "version": 2, "runId": run_id, "agentId": "echo", "input": "hi", "approvals": False}
    final = {"runId": run_id, "seq": 1, "kind": "completed", "text": "hi"}
    return json.dumps(header) + "\n" + json.dumps(final) + "\n"


def hostile_workspace(base: Path) -> Path:
    """`.oscova/tests/` with a good case and, sorted first, the hostile ones; `.oscova/runs/` with a good
    transcript and a later one of the same agent that is a link to `/dev/zero`."""
    root = base / "ws"
    (root / "agents").mkdir(parents=True)
    (root / "oscova.toml").write_text('[models.default]\nmodel = "m"\n')
    (root / DEFINITION).write_text("id: echo\ninstructions: Repeat the query.\n")
    tests = root / ".oscova" / "tests"
    tests.mkdir(parents=True)
    os.symlink("/proc/self/fd/0", tests / "a-stdin.jsonl")  # first: the unchanged code read its stdin here
    os.mkfifo(tests / "b-fifo.jsonl")
    os.symlink("/dev/zero", tests / "c-zero.jsonl")
    os.symlink("/etc/shadow", tests / "d-shadow.jsonl")
    (tests / "good.jsonl").write_text(transcript_lines("r1"))
    runs = root / ".oscova" / "runs"
    runs.mkdir()
    (runs / "20260101T000000-echo-r1.jsonl").write_text(transcript_lines("r1"))
    os.symlink("/dev/zero", runs / "20260101T000001-echo-zero.jsonl")
    os.mkfifo(runs / "20260101T000002-echo-fifo.jsonl")
    return root


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND), scope="module", loop_scope="module")
async def editor(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    root = hostile_workspace(tmp_path_factory.mktemp("hostile-cases"))

    @lsp_client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:
        return None

    folder = lsp.WorkspaceFolder(uri=from_fs_path(str(root)), name="ws")
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=vscode_capabilities(lsp_client.protocol._converter), root_uri=folder.uri, workspace_folders=[folder],
        initialization_options={"workspaceTrusted": False}, client_info=lsp.ClientInfo(name="test")))
    uri = from_fs_path(str(root / DEFINITION))
    lsp_client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="yaml", version=1, text=(root / DEFINITION).read_text())))
    lsp_client.root = root  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


async def command(client: LanguageClient, name: str, argument: dict[str, Any]) -> Any:
    return plain(await asyncio.wait_for(client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=name, arguments=[argument])), ANSWER_BUDGET))


async def timed_hover(client: LanguageClient) -> float:
    root: Path = client.root  # type: ignore[attr-defined]
    start = time.perf_counter()
    found = await asyncio.wait_for(client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=from_fs_path(str(root / DEFINITION))), position=HOVER_AT)),
        ANSWER_BUDGET)
    assert found is not None and "id" in str(found.contents)
    return time.perf_counter() - start


def resident_bytes(client: LanguageClient) -> int:
    """The server process's resident set size, from /proc."""
    pid = client._server.pid  # type: ignore[union-attr]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS line")


async def test_list_tests_refuses_each_hostile_case_at_once_and_hovers_stay_fast(editor: LanguageClient):
    await timed_hover(editor)  # the document is read
    # ... and the pygls server loaded (the first hover may be answered before it: lsp/early.py)
    await asyncio.wait_for(editor.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="")), ANSWER_BUDGET)
    before = resident_bytes(editor)
    listing = asyncio.ensure_future(command(editor, "oscova.listTests", {}))
    hovers = [await timed_hover(editor) for _ in range(10)]  # sent while the listing runs
    listed = await listing
    by_name = {case["name"]: case for case in listed}
    assert sorted(by_name) == ["a-stdin", "b-fifo", "c-zero", "d-shadow", "good"]
    assert by_name["good"]["agentId"] == "echo" and "error" not in by_name["good"]
    assert "it is a FIFO, not a regular file" in by_name["b-fifo"]["error"]
    for name in ("a-stdin", "c-zero", "d-shadow"):
        assert "it is a symlink that leads outside the workspace root" in by_name[name]["error"], by_name[name]
    # Measured on 2 shared cores: 1 to 35 ms. One sample may meet a scheduling hiccup of the machine.
    assert sum(h < HOVER_BUDGET for h in hovers) >= 9 and max(hovers) < 10 * HOVER_BUDGET, hovers
    assert resident_bytes(editor) - before < 50_000_000  # nothing was read whole
    again = await command(editor, "oscova.listTests", {})  # the server's stdin is still its own
    assert [case["name"] for case in again] == sorted(by_name)


async def test_compare_runs_refuses_a_hostile_transcript_with_its_reason(editor: LanguageClient):
    runs: Path = editor.root / ".oscova" / "runs"  # type: ignore[attr-defined]
    before = resident_bytes(editor)
    with pytest.raises(JsonRpcException, match="it is a symlink that leads outside the workspace root"):
        await command(editor, "oscova.compareRuns", {"transcript": str(runs / "20260101T000001-echo-zero.jsonl")})
    with pytest.raises(JsonRpcException, match="it is a FIFO, not a regular file"):
        await command(editor, "oscova.compareRuns", {"transcript": str(runs / "20260101T000002-echo-fifo.jsonl"),
                                                     "previous": str(runs / "20260101T000000-echo-r1.jsonl")})
    assert resident_bytes(editor) - before < 50_000_000
    assert await timed_hover(editor) < ANSWER_BUDGET


async def test_compare_runs_with_a_nul_byte_in_a_path_is_invalid_params_with_a_sentence(editor: LanguageClient):
    runs: Path = editor.root / ".oscova" / "runs"  # type: ignore[attr-defined]
    for argument in ({"transcript": str(runs / "a\x00b.jsonl")},
                     {"transcript": str(runs / "20260101T000000-echo-r1.jsonl"), "previous": "x\x00y"}):
        with pytest.raises(JsonRpcException) as refused:
            await command(editor, "oscova.compareRuns", argument)
        assert refused.value.code == lsp.ErrorCodes.InvalidParams, refused.value
        assert "NUL" in str(refused.value) and "embedded null byte" not in str(refused.value)


# ------------------------------------------------------------------------- a run that cannot record

KEY_VARIABLE = "OSCOVA_LSP_HOSTILE_KEY"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND,
                                              server_env={**os.environ, KEY_VARIABLE: "sk-hostile-0123"}),
                    scope="module", loop_scope="module")
async def trusted(lsp_client: LanguageClient, fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory):
    root = write_workspace(tmp_path_factory.mktemp("read-only-runs") / "ws", host_toml(fake.base_url, KEY_VARIABLE))

    @lsp_client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:
        return None

    @lsp_client.feature("oscova/runEvent")
    def on_run_event(params: Any) -> None:
        return None

    folder = lsp.WorkspaceFolder(uri=from_fs_path(str(root)), name="ws")
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=vscode_capabilities(lsp_client.protocol._converter), root_uri=folder.uri, workspace_folders=[folder],
        initialization_options={"workspaceTrusted": True}, client_info=lsp.ClientInfo(name="test")))
    lsp_client.root = root  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_run_agent_completes_and_says_its_transcript_could_not_be_written(trusted: LanguageClient,
                                                                                fake: FakeOpenAI):
    root: Path = trusted.root  # type: ignore[attr-defined]
    fake.enqueue(Reply(text="hello"))
    with read_only(root / ".oscova" / "runs"):
        result = plain(await asyncio.wait_for(trusted.workspace_execute_command_async(lsp.ExecuteCommandParams(
            command="oscova.runAgent", arguments=[{"agentId": "echo", "input": "Say hello"}])), 30))
    assert result["status"] == "completed" and result["text"] == "hello", result
    assert result["transcript"] is None
    assert result["transcriptError"].startswith("the transcript could not be written: "), result
    assert READ_ONLY_WORDS[os.geteuid() == 0] in result["transcriptError"]
