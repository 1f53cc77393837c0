"""A folder without oscova.toml opened in an editor: the server checks every workspace nested in it, as
`oscova-lsp check FOLDER` does (issue 11), and skips what a workspace's `[host] exclude` leaves out."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.support.host_files import MODELS

from .conftest import SERVER_COMMAND, Editor, codes

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILES = {
    "README.md": "a monorepo\n",
    "team-a/oscova.toml": '[host]\nexclude = ["fixtures"]\n' + MODELS,
    "team-a/agents/a.agent.yaml": "id: a\n",
    "team-a/fixtures/bad/oscova.toml": MODELS,
    "team-a/fixtures/bad/bad.agent.yaml": "id: bad\nmemory: maybe\n",
    "team-b/oscova.toml": MODELS,
    "team-b/agents/b.agent.yaml": "id: b\nmemory: maybe\n",
    "team-b/deeper/oscova.toml": MODELS,
    "team-b/deeper/c.agent.yaml": "id: c\ncontext_providers: [null]\n",
}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND), scope="module", loop_scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("nested") / "monorepo"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    ed = Editor(lsp_client, Path(root), "push")
    lsp_client.set_configuration({"debounce": 50}, section="oscova")
    folder = lsp.WorkspaceFolder(uri=from_fs_path(str(root)), name="monorepo")
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("neovim@v0.7.0"), root_uri=folder.uri, workspace_folders=[folder]))
    await ed.wait_checked()
    lsp_client.editor = ed  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


async def test_every_nested_workspace_is_checked_without_opening_a_file(client: LanguageClient):
    editor: Editor = client.editor  # type: ignore[attr-defined]
    assert codes(await editor.wait_diagnostics("team-b/agents/b.agent.yaml", lambda d: bool(d))) == ["OSC002"]
    assert codes(await editor.wait_diagnostics("team-b/deeper/c.agent.yaml", lambda d: bool(d))) == ["OSC010"]
    assert await editor.current("team-a/agents/a.agent.yaml") == []
    assert editor.uri("team-a/fixtures/bad/bad.agent.yaml") not in client.diagnostics  # excluded by team-a
