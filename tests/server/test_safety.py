"""Safe to open any folder, in the language server: a workspace with a FIFO, links to `/dev/stdin`
and `/dev/zero`, a template path leaving the root, a UTF-16 definition and a nested root whose `oscova.toml`
nests 1,000 arrays. The server (a subprocess over stdio, driven by pytest-lsp with Neovim's capabilities)
finishes its background check, gives each file a diagnostic that says why, and keeps answering."""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.support.host_files import MODELS

from .conftest import SERVER_COMMAND, Editor, SessionOptions, start_session

pytestmark = pytest.mark.asyncio(loop_scope="module")

HOST = MODELS
SECRET = "outside-secret-7f3a"


def special_workspace(base: Path) -> Path:
    """A FIFO and links to `/dev/stdin` and `/dev/zero` named like definitions, beside one that is fine."""
    root = base / "ws"
    (root / "agents").mkdir(parents=True)
    (root / "oscova.toml").write_text(HOST)
    (root / "agents/a.agent.yaml").write_text("id: a\ninstructions: Answer.\n")
    os.mkfifo(root / "agents/fifo.agent.yaml")
    os.symlink("/dev/stdin", root / "agents/stdin.agent.yaml")
    os.symlink("/dev/zero", root / "agents/zero.agent.yaml")
    return root


def other_workspace(base: Path) -> Path:
    """A template path leaving the root, a UTF-16 definition, a nested root whose `oscova.toml` nests deep."""
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.j2").write_text(f"{SECRET} {{{{ outside_only_variable }}}}\n")
    root = base / "ws"
    (root / "agents").mkdir(parents=True)
    (root / "oscova.toml").write_text(HOST)
    (root / "agents/outside.agent.yaml").write_text("id: outside\ninstructions_file: ../../outside/secret.j2\n")
    (root / "agents/utf16.agent.yaml").write_bytes(
        codecs.BOM_UTF16_LE + "id: utf16\ninstructions: Grüße\ntoolz: []\n".encode("utf-16-le"))
    (root / "deep/agents").mkdir(parents=True)
    (root / "deep/oscova.toml").write_text(HOST + "\n[variables]\nx = " + "[" * 1000 + "]" * 1000 + "\n")
    (root / "deep/agents/d.agent.yaml").write_text("id: d\ninstructions: Answer.\n")
    return root


NEOVIM = SessionOptions(client="neovim@v0.7.0", wait_checked=60)  # a reader blocked on a FIFO never ends the check


@pytest.fixture(scope="module")
def lsp_options() -> SessionOptions:
    return NEOVIM


@pytest.fixture(scope="module")
def lsp_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return other_workspace(tmp_path_factory.mktemp("other"))


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND), scope="module", loop_scope="module")
async def special(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    """A second server of the module's, on the workspace of special files."""
    await start_session(lsp_client, special_workspace(tmp_path_factory.mktemp("special")), NEOVIM)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def special_editor(special: LanguageClient) -> Editor:
    return special.editor  # type: ignore[attr-defined]


async def command(editor: Editor, name: str, argument: dict[str, Any]) -> Any:
    return await editor.client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=name, arguments=[argument]))


def messages(diagnostics: list[lsp.Diagnostic], code: str) -> list[str]:
    return [d.message for d in diagnostics if d.code == code]


async def test_special_files_are_refused_with_a_reason_and_the_server_keeps_answering(special_editor: Editor) -> None:
    editor = special_editor
    fifo = await editor.wait_diagnostics("agents/fifo.agent.yaml", lambda ds: bool(messages(ds, "OSC001")))
    assert messages(fifo, "OSC001") == ["it is a FIFO, not a regular file, and was not read"]
    for name in ("stdin", "zero"):
        found = await editor.wait_diagnostics(f"agents/{name}.agent.yaml", lambda ds: bool(messages(ds, "OSC001")))
        assert messages(found, "OSC001") == ["it is a symlink that leads outside the workspace root; only files "
                                             "inside it are read"]
    agents = await command(editor, "oscova.listAgents", {"uri": editor.uri("agents/a.agent.yaml")})
    assert [a["id"] for a in agents] == ["a"]


async def test_a_fifo_created_later_is_refused_on_the_file_watch(special_editor: Editor) -> None:
    editor = special_editor
    os.mkfifo(editor.root / "agents/late.agent.yaml")
    editor.client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[
        lsp.FileEvent(uri=editor.uri("agents/late.agent.yaml"), type=lsp.FileChangeType.Created)]))
    found = await editor.wait_diagnostics("agents/late.agent.yaml", lambda ds: bool(messages(ds, "OSC001")))
    assert messages(found, "OSC001") == ["it is a FIFO, not a regular file, and was not read"]


async def test_a_template_outside_the_root_is_osc040_and_preview_never_reads_it(editor: Editor) -> None:
    found = await editor.wait_diagnostics("agents/outside.agent.yaml", lambda ds: bool(messages(ds, "OSC040")))
    assert messages(found, "OSC040") == ["template `../../outside/secret.j2` is outside the workspace root; only "
                                         "files inside it are read"]
    with pytest.raises(JsonRpcException) as refused:
        await command(editor, "oscova.previewPrompt", {"agentId": "outside", "uri": editor.uri("agents/outside.agent.yaml")})
    assert "outside the workspace root" in str(refused.value)
    assert SECRET not in str(refused.value)


async def test_a_toml_nesting_1000_arrays_is_osc001_and_its_root_still_answers(editor: Editor) -> None:
    found = await editor.wait_diagnostics("deep/oscova.toml", lambda ds: bool(messages(ds, "OSC001")))
    assert messages(found, "OSC001") == ["the document nests deeper than 100 levels (arrays, inline tables or "
                                         "dotted keys)"]
    agents = await command(editor, "oscova.listAgents", {"uri": editor.uri("deep/agents/d.agent.yaml")})
    assert [a["id"] for a in agents] == ["d"]


async def test_a_utf16_definition_with_a_byte_order_mark_is_read_as_text(editor: Editor) -> None:
    found = await editor.wait_diagnostics("agents/utf16.agent.yaml", lambda ds: bool(messages(ds, "OSC003")))
    assert not messages(found, "OSC001")
    assert [d.range.start.line for d in found if d.code == "OSC003"] == [2]
