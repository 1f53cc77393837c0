"""Workspace trust: in a workspace the client has not trusted (`initializationOptions.workspaceTrusted:
false`, as VS Code's Restricted Mode sends), nothing imports or runs the workspace's code.

The workspace's custom tool and provider modules, and modules shadowing ones the server imports lazily,
write a marker file when imported: none may appear while the workspace is untrusted, and a preview still
shows what the built-in providers render.
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

from .conftest import SERVER_COMMAND, SessionOptions, start_session, stop_server, with_trust

pytestmark = pytest.mark.asyncio(loop_scope="module")

CONFIG = ClientServerConfig(server_command=SERVER_COMMAND, server_env=dict(os.environ))
NOT_TRUSTED = "not loaded: workspace not trusted"
VSCODE_1_65 = SessionOptions(client="visual-studio-code", settings=None, wait_checked=None)

HOST = """\
[host]
user_id = "alice"

[user]
name = "Alice Example"
timezone = "Europe/Paris"

[tools.stamp]
callable = "evil_tool:stamp"
description = "Stamps a document."

[providers.stamper]
class = "evil_provider:Stamper"
contributes = ["instructions"]
"""

AGENT = """\
id: helper
name: Helper
instructions: You help {{ user_name }}.
tools: [current_datetime, stamp]
context_providers: [stamper]
"""

MARKER_MODULE = """\
import pathlib
pathlib.Path({marker!r}).write_text("imported")
"""

PROVIDER = MARKER_MODULE + """\
from oscova_runtime import AIContext, AIContextProvider


class Stamper(AIContextProvider):
    async def provide_ai_context(self, context):
        return AIContext(instructions="Stamped by the workspace's provider.")
"""

TOOL = MARKER_MODULE + """\

def stamp(text: str) -> str:
    \"\"\"Stamps a document.\"\"\"
    return "stamped " + text
"""

SHADOWS = ("uuid", "yaml", "pydantic", "hashlib", "lsprotocol", "zoneinfo", "json", "openai", "httpx")
"""Modules the server imports (some lazily, during a preview): a workspace file of that name is code too."""


def make_workspace(root: Path) -> tuple[Path, Path]:
    """The workspace and the folder its import markers go to (outside it)."""
    markers = root.parent / "markers"
    markers.mkdir(parents=True)
    (root / "agents").mkdir(parents=True)
    (root / "oscova.toml").write_text(HOST)
    (root / "agents" / "helper.agent.yaml").write_text(AGENT)
    (root / "evil_tool.py").write_text(TOOL.format(marker=str(markers / "evil_tool")))
    (root / "evil_provider.py").write_text(PROVIDER.format(marker=str(markers / "evil_provider")))
    for name in SHADOWS:
        (root / f"{name}.py").write_text(MARKER_MODULE.format(marker=str(markers / name)))
    (root / "templates").mkdir()
    for i in range(420):  # a large workspace: the server reads it with worker processes
        (root / "templates" / f"t{i}.j2").write_text("{{ user_name }}")
    return root, markers


def imported(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


async def start(client: LanguageClient, root: Path, trust: bool) -> None:
    await start_session(client, root, with_trust(VSCODE_1_65, trust))


async def command(client: LanguageClient, name: str, argument: dict[str, Any]) -> Any:
    """A command's answer; 60 s without one fails (a large workspace once hung the first preview)."""
    request = client.workspace_execute_command_async(lsp.ExecuteCommandParams(command=name, arguments=[argument]))
    return await asyncio.wait_for(request, 60)


@pytest_lsp.fixture(config=CONFIG, scope="module", loop_scope="module")
async def untrusted(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    root, markers = make_workspace(tmp_path_factory.mktemp("untrusted") / "ws")
    lsp_client.paths = (root, markers)  # type: ignore[attr-defined]
    await start(lsp_client, root, trust=False)
    yield
    await lsp_client.shutdown_session()


async def test_an_untrusted_preview_shows_the_built_in_rendering_and_imports_nothing(untrusted: LanguageClient):
    root, markers = untrusted.paths  # type: ignore[attr-defined]
    preview = await command(untrusted, "oscova.previewPrompt", {"agentId": "helper", "uri": from_fs_path(str(root))})
    assert "You help Alice Example." in preview["instructions"]
    assert "Stamped" not in preview["instructions"]
    stamper = [p for p in preview["providers"] if p["type"] == "stamper"]
    assert stamper and stamper[0]["active"] is False and stamper[0]["inactiveReason"] == NOT_TRUSTED
    assert stamper[0]["instructions"] is None
    assert [t["name"] for t in preview["tools"]] == ["current_datetime"]
    assert {"kind": "tool", "name": "stamp", "source": "evil_tool:stamp", "reason": NOT_TRUSTED} in preview["notLoaded"]
    assert {"kind": "provider", "name": "stamper", "source": "evil_provider:Stamper",
            "reason": NOT_TRUSTED} in preview["notLoaded"]
    assert preview["trusted"] is False
    assert imported(markers) == []


async def test_an_untrusted_workspace_refuses_runs_and_offers_no_run_lens(untrusted: LanguageClient):
    root, markers = untrusted.paths  # type: ignore[attr-defined]
    with pytest.raises(JsonRpcException, match="not trusted"):
        await command(untrusted, "oscova.runAgent", {"agentId": "helper", "input": "hi"})
    uri = from_fs_path(str(root / "agents" / "helper.agent.yaml"))
    untrusted.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="yaml", version=1, text=AGENT)))
    lenses = await untrusted.text_document_code_lens_async(lsp.CodeLensParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert [lens.command.command for lens in lenses or [] if lens.command] == ["oscova.previewPrompt"]
    agents = await command(untrusted, "oscova.listAgents", {"uri": uri})
    assert [a["id"] for a in agents] == ["helper"]
    assert imported(markers) == []


async def test_a_trusted_preview_loads_the_workspace_code(tmp_path: Path):
    """The same workspace, trusted: its provider and tool are imported (so the markers above can appear)."""
    root, markers = make_workspace(tmp_path / "ws")
    client = await CONFIG.start()
    try:
        await start(client, root, trust=True)
        preview = await command(client, "oscova.previewPrompt", {"agentId": "helper", "uri": from_fs_path(str(root))})
        assert "Stamped by the workspace's provider." in preview["instructions"]
        assert [t["name"] for t in preview["tools"]] == ["current_datetime", "stamp"]
        assert preview["notLoaded"] == [] and preview["trusted"] is True
        assert {"evil_provider", "evil_tool"} <= set(imported(markers))
        uri = from_fs_path(str(root / "agents" / "helper.agent.yaml"))
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
            uri=uri, language_id="yaml", version=1, text=AGENT)))
        lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri)))
        assert [lens.command.command for lens in lenses or [] if lens.command] == [
            "oscova.runAgent", "oscova.previewPrompt"]
        await client.shutdown_session()
    finally:
        await stop_server(client)
