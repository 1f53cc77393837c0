"""An untrusted folder cannot make the editor deaf: cases and transcripts that are
links to `/proc/self/fd/0` (the server's own stdin), `/dev/zero` or `/etc/shadow`, or a FIFO, get a refusal
each from `oscova.listTests` and `oscova.compareRuns`, at once; the server never reads its stdin through
them, its memory does not grow, and hovers sent while the listing runs are answered (within 100 ms, measured by
`benchmarks/responsiveness_bench.py --scenario hostile`: on a shared machine a test's timing is luck).

The server is a subprocess over stdio (pytest-lsp, VS Code 1.139's capabilities) in an untrusted workspace:
listing cases is allowed in Restricted Mode, which is why it must be safe.
"""

from __future__ import annotations

import asyncio
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
from tests.support.hostile_cases import DEFINITION, hostile_workspace
from tests.support.run_workspace import host_toml, write_workspace
from tests.support.special_files import READ_ONLY_WORDS, read_only

from .conftest import RUN_CLIENT, SERVER_COMMAND, start_session, with_trust
from .test_runs import plain

pytestmark = pytest.mark.asyncio(loop_scope="module")

HOVER_AT = lsp.Position(line=0, character=1)  # the `id` key
ANSWER_BUDGET = 30.0
"""Seconds: listTests, compareRuns and hovers answer within this; on the unchanged code they never did."""


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND), scope="module", loop_scope="module")
async def editor(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    root = hostile_workspace(tmp_path_factory.mktemp("hostile-cases"))
    session = await start_session(lsp_client, root, with_trust(RUN_CLIENT, False))
    session.open(DEFINITION)
    lsp_client.root = root  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


async def command(client: LanguageClient, name: str, argument: dict[str, Any]) -> Any:
    return plain(await asyncio.wait_for(client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=name, arguments=[argument])), ANSWER_BUDGET))


async def hover(client: LanguageClient) -> None:
    root: Path = client.root  # type: ignore[attr-defined]
    found = await asyncio.wait_for(client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=from_fs_path(str(root / DEFINITION))), position=HOVER_AT)),
        ANSWER_BUDGET)
    assert found is not None and "id" in str(found.contents)


def resident_bytes(client: LanguageClient) -> int:
    """The server process's resident set size, from /proc."""
    pid = client._server.pid  # type: ignore[union-attr]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS line")


async def test_list_tests_refuses_each_hostile_case_at_once_and_hovers_are_answered(editor: LanguageClient):
    await hover(editor)  # the document is read
    # ... and the pygls server loaded (the first hover may be answered before it: lsp/early.py)
    await asyncio.wait_for(editor.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="")), ANSWER_BUDGET)
    before = resident_bytes(editor)
    listing = asyncio.ensure_future(command(editor, "oscova.listTests", {}))
    for _ in range(10):  # sent while the listing runs: a server that reads its own stdin answers none
        await hover(editor)
    listed = await listing
    by_name = {case["name"]: case for case in listed}
    assert sorted(by_name) == ["a-stdin", "b-fifo", "c-zero", "d-shadow", "good"]
    assert by_name["good"]["agentId"] == "echo" and "error" not in by_name["good"]
    assert "it is a FIFO, not a regular file" in by_name["b-fifo"]["error"]
    for name in ("a-stdin", "c-zero", "d-shadow"):
        assert "it is a symlink that leads outside the workspace root" in by_name[name]["error"], by_name[name]
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
    await hover(editor)


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

    @lsp_client.feature("oscova/runEvent")
    def on_run_event(params: Any) -> None:
        return None

    await start_session(lsp_client, root, with_trust(RUN_CLIENT, True))
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
