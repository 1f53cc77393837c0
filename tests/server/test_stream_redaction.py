"""A key the endpoint splits across stream chunks never reaches an `oscova/runEvent`, the run's answer or
its transcript: the server as a subprocess, the real `openai` client, the local server."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.run_workspace import host_toml, write_workspace

from .conftest import RUN_CLIENT, SERVER_COMMAND, start_session
from .test_runs import plain

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEY = "sk-split-canary-93b1e7c4d2a05f68"
KEY_VARIABLE = "OSCOVA_SPLIT_KEY_TEST"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND,
                                              server_env={**os.environ, KEY_VARIABLE: KEY}),
                    scope="module", loop_scope="module")
async def client(lsp_client: LanguageClient, endpoint: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory):
    root = write_workspace(tmp_path_factory.mktemp("split") / "ws", host_toml(endpoint.base_url, KEY_VARIABLE))
    events: list[dict[str, Any]] = []

    @lsp_client.feature("oscova/runEvent")
    def on_run_event(params: Any) -> None:
        events.append(plain(params))

    await start_session(lsp_client, root, RUN_CLIENT)
    lsp_client.events = events  # type: ignore[attr-defined]
    lsp_client.root = root  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.mark.parametrize("chunk_size", [1, 4, 9])
async def test_a_key_split_across_chunks_never_reaches_run_events(client: LanguageClient, endpoint: FakeOpenAI,
                                                                  chunk_size: int):
    events: list[dict[str, Any]] = client.events  # type: ignore[attr-defined]
    events.clear()
    text = f"The key is {KEY} ... and once more: {KEY}"
    endpoint.enqueue(Reply(text=text, chunk_size=chunk_size, delay=0.002))
    root: Path = client.root  # type: ignore[attr-defined]
    result = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="oscova.runAgent", arguments=[{"agentId": "echo", "input": "tell me",
                                                "uri": from_fs_path(str(root))}]))
    redacted = text.replace(KEY, "***")
    assert result["status"] == "completed" and result["text"] == redacted
    mine = [e for e in events if e["runId"] == result["runId"]]
    deltas = [e["text"] for e in mine if e["kind"] == "delta"]
    assert len(deltas) > 1  # it really streamed in pieces
    assert "".join(deltas) == redacted
    assert KEY not in json.dumps(mine) and KEY not in json.dumps(result)
    assert KEY not in Path(result["transcript"]).read_text()
