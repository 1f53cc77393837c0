"""A folder without oscova.toml opened in an editor: the server checks every workspace nested in it, as
`oscova-lsp check FOLDER` does, and skips what a workspace's `[host] exclude` leaves out."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.support.host_files import MODELS

from .conftest import Editor, SessionOptions, codes, write_files

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


@pytest.fixture(scope="module")
def lsp_options() -> SessionOptions:
    return SessionOptions(client="neovim@v0.7.0")


@pytest.fixture(scope="module")
def lsp_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_files(tmp_path_factory.mktemp("nested") / "monorepo", FILES)


async def test_every_nested_workspace_is_checked_without_opening_a_file(client: LanguageClient):
    editor: Editor = client.editor  # type: ignore[attr-defined]
    assert codes(await editor.wait_diagnostics("team-b/agents/b.agent.yaml", lambda d: bool(d))) == ["OSC002"]
    assert codes(await editor.wait_diagnostics("team-b/deeper/c.agent.yaml", lambda d: bool(d))) == ["OSC010"]
    assert await editor.current("team-a/agents/a.agent.yaml") == []
    assert editor.uri("team-a/fixtures/bad/bad.agent.yaml") not in client.diagnostics  # excluded by team-a
