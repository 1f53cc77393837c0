"""Folders that are not oscova workspaces, opened in an editor: other tools' `*.agent.yaml` (BMAD-METHOD's
personas, Oxy's agents) and an Ansible role's `.j2` templates get no diagnostic, opened or not, while a
workspace beside them is checked as usual."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.support.foreign_files import ANSIBLE, BMAD, OXY
from tests.support.host_files import MODELS

from .conftest import Editor, SessionOptions, codes, write_files

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILES = {
    **{f"bmad-project/{rel}": text for rel, text in BMAD.items()},
    **{f"ansible/{rel}": text for rel, text in ANSIBLE.items()},
    **{f"oxy/{rel}": text for rel, text in OXY.items()},
    "ours/oscova.toml": MODELS,
    "ours/agents/a.agent.yaml": "id: a\nmemory: maybe\n",
}


@pytest.fixture(scope="module")
def lsp_options() -> SessionOptions:
    return SessionOptions(client="vscode")  # pull diagnostics: "nothing" is an answer, not a silence


@pytest.fixture(scope="module")
def lsp_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_files(tmp_path_factory.mktemp("foreign") / "repo", FILES)


async def test_only_the_workspace_is_checked(client: LanguageClient):
    editor: Editor = client.editor  # type: ignore[attr-defined]
    assert codes(await editor.wait_diagnostics("ours/agents/a.agent.yaml", lambda d: bool(d))) == ["OSC002"]
    report = await client.workspace_diagnostic_async(lsp.WorkspaceDiagnosticParams(previous_result_ids=[]))
    reported = {item.uri for item in report.items if item.kind == "full" and item.items}
    assert reported == {editor.uri("ours/agents/a.agent.yaml")}


@pytest.mark.parametrize("rel", ["bmad-project/bmad/bmm/agents/analyst.agent.yaml",
                                 "ansible/roles/nginx/templates/nginx.conf.j2", "oxy/agents/sql.agent.yml"])
async def test_an_opened_file_outside_every_workspace_gets_no_diagnostic(client: LanguageClient, rel: str):
    editor: Editor = client.editor  # type: ignore[attr-defined]
    editor.open(rel)
    assert await editor.current(rel) == []
    # Typing in it changes nothing, and hover still answers.
    editor.edit(rel, (0, 0), (0, 0), "{{ nobody }}\n" if rel.endswith(".j2") else "# a comment\n")
    assert await editor.current(rel) == []
    editor.close(rel)
