"""The run host: a run's workspace code executes in a child process of the language server, never in the server;
the child is restarted when the workspace's Python code changes, or on the next run after it dies (`kill -9`:
the run fails with a sentence, the editor goes on); its memory is its own. The model is the offline one."""

from __future__ import annotations

import asyncio
import os
import signal
import textwrap
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient

from .conftest import ANSWER_TIMEOUT, RUN_CLIENT, SERVER_COMMAND, answered, start_session

pytestmark = pytest.mark.asyncio(loop_scope="module")

MEMORY_MB = 900
CONFIG = ClientServerConfig(server_command=SERVER_COMMAND,
                            server_env={**os.environ, "OSCOVA_LSP_RUN_HOST_MEMORY_MB": str(MEMORY_MB)})

PROBE = '''\
import os
import time

VERSION = "{version}"


def whoami() -> str:
    """Says which code and which process answer."""
    return f"{{VERSION}} pid={{os.getpid()}}"


def hog(megabytes: int) -> str:
    """Holds this much memory."""
    return str(len(bytearray(megabytes * 1024 * 1024)))


def stall() -> str:
    """Never ends by itself."""
    time.sleep(3600)
    return "woke"
'''

FILES = {
    "oscova.toml": """\
        [host]
        user_id = "me"

        [models.default]
        kind = "offline"
        model = "offline"
        script = "offline.yaml"

        [tools.whoami]
        callable = "tools.probe:whoami"
        [tools.hog]
        callable = "tools.probe:hog"
        [tools.stall]
        callable = "tools.probe:stall"
        """,
    "offline.yaml": """\
        replies:
          - when: who
            call: {tool: whoami}
            then: "{result}"
          - when: hog
            call: {tool: hog, arguments: {megabytes: 2000}}
            then: "held {result}"
          - when: stall
            call: {tool: stall}
        """,
    "agents/probe.agent.yaml": "id: probe\ninstructions: Use your tools.\ntools: [whoami, hog, stall]\n",
    "tools/__init__.py": "",
}


class Runs:
    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client, self.root = client, root
        self.events: list[dict[str, Any]] = []

    async def run(self, text: str) -> dict[str, Any]:
        result = await self.client.workspace_execute_command_async(lsp.ExecuteCommandParams(
            command="oscova.runAgent", arguments=[{"agentId": "probe", "input": text, "uri": self.uri()}]))
        return dict(result._asdict()) if hasattr(result, "_asdict") else dict(result)

    def uri(self, rel: str = "") -> str:
        return from_fs_path(str(self.root / rel) if rel else str(self.root))

    async def hover(self) -> Any:
        params = lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=self.uri("agents/probe.agent.yaml")),
                                 position=lsp.Position(line=2, character=9))
        return await answered(self.client.text_document_hover_async(params), "hover", 5)


@pytest_lsp.fixture(config=CONFIG, scope="module", loop_scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("run-host") / "ws"
    for rel, text in {**FILES, "tools/probe.py": PROBE.format(version="v1")}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text) if not rel.endswith(".py") else text)
    found = Runs(lsp_client, root)

    @lsp_client.feature("oscova/runEvent")
    def on_event(params: Any) -> None:
        found.events.append(dict(params._asdict()) if hasattr(params, "_asdict") else dict(params))

    await start_session(lsp_client, root, RUN_CLIENT)
    lsp_client.runs = found  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def runs(client: LanguageClient) -> Runs:
    return client.runs  # type: ignore[attr-defined]


def pid_of(result: dict[str, Any]) -> int:
    return int(result["text"].rsplit("pid=", 1)[1])


def server_pid(client: LanguageClient) -> int:
    return int(client._server.pid)  # type: ignore[attr-defined]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def test_the_workspace_code_runs_in_the_run_host_not_in_the_server(runs: Runs):
    result = await answered(runs.run("who are you"), "the run", ANSWER_TIMEOUT)
    assert result["status"] == "completed", result
    assert result["text"].startswith("v1 pid=")
    child = pid_of(result)
    assert child != server_pid(runs.client)
    assert b"run-host" in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")


async def test_saving_the_workspaces_python_code_restarts_the_run_host_with_it(runs: Runs):
    first = pid_of(await answered(runs.run("who are you"), "the run", ANSWER_TIMEOUT))
    probe = runs.root / "tools/probe.py"
    probe.write_text(PROBE.format(version="v2"))
    runs.client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(
        changes=[lsp.FileEvent(uri=runs.uri("tools/probe.py"), type=lsp.FileChangeType.Changed)]))
    await asyncio.sleep(0.2)
    again = await answered(runs.run("who are you"), "the run", ANSWER_TIMEOUT)
    assert again["text"].startswith("v2 pid=") and pid_of(again) != first


async def test_a_run_host_killed_mid_run_fails_its_run_with_a_sentence_and_the_next_run_works(runs: Runs):
    child = pid_of(await answered(runs.run("who are you"), "the run", ANSWER_TIMEOUT))
    stalled = asyncio.ensure_future(runs.run("stall now"))
    for _ in range(200):
        if any(e.get("kind") == "toolCall" and e.get("name") == "stall" for e in runs.events):
            break
        await asyncio.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    result = await answered(stalled, "the stalled run", ANSWER_TIMEOUT)
    assert result["status"] == "failed"
    assert result["error"].startswith("the run host stopped (it was killed (SIGKILL)")
    assert "the next run starts a new one" in result["error"]
    assert await runs.hover() is not None  # the editor goes on
    after = await answered(runs.run("who are you"), "the next run", ANSWER_TIMEOUT)
    assert after["status"] == "completed" and pid_of(after) != child


async def test_the_run_host_has_a_memory_limit_and_the_server_keeps_its_own(runs: Runs):
    result = await answered(runs.run("hog it"), "the run", ANSWER_TIMEOUT)
    failed = [e for e in runs.events if e.get("kind") == "toolResult" and e.get("name") == "hog"]
    assert failed and "error" in failed[-1], failed  # 2,000 MB is past the limit of 900: the tool failed
    assert result["status"] == "completed"  # the model was told, as the framework tells it
    assert rss_mb(server_pid(runs.client)) < 300
    assert await runs.hover() is not None
