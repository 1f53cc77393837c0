"""`oscova.review` through the server as a subprocess (pytest-lsp, VS Code 1.139's capabilities): the JSON
shape of `oscova-lsp review`, in trusted and untrusted workspaces, and its errors as LSP errors."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.review.conftest import workspace_files
from tests.review.support import git, init, write

from .conftest import SERVER_COMMAND
from .test_agent_tests_lsp import command, start

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _repository(folder: Path) -> Path:
    # The review's process gets a fixed environment (the process gateway), so the marker's path is in the code.
    files = {name: text.replace('os.environ.get("REVIEW_IMPORT_MARKER")', repr(str(MARKER)))
             .replace('os.environ["REVIEW_IMPORT_MARKER"]', repr(str(MARKER))) for name, text in workspace_files().items()}
    repo = init(folder / "repo", files)
    git(repo, "checkout", "-q", "-b", "change")
    write(repo, {"templates/partials/persona.j2": "You are {{ agent_name }}, reply in French.\n"})
    return repo


MARKER = Path(tempfile.mkdtemp(prefix="review-lsp-")) / "imported.txt"
"""Written by the workspace's own modules when imported."""
atexit.register(shutil.rmtree, MARKER.parent, True)  # made as each worker collects this module
CONFIG = ClientServerConfig(server_command=SERVER_COMMAND, server_env={**os.environ, "REVIEW_IMPORT_MARKER": str(MARKER)})


@pytest_lsp.fixture(config=CONFIG, scope="module", loop_scope="module")
async def untrusted(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    repo = _repository(tmp_path_factory.mktemp("review-untrusted"))
    await start(lsp_client, repo, trust=False)
    lsp_client.root = repo  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG, scope="module", loop_scope="module")
async def trusted(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    repo = _repository(tmp_path_factory.mktemp("review-trusted"))
    await start(lsp_client, repo, trust=True)
    lsp_client.root = repo  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_an_untrusted_workspace_is_reviewed_without_its_code_and_refuses_trust(untrusted: LanguageClient):
    repo: Path = untrusted.root  # type: ignore[attr-defined]
    found: dict[str, Any] = await command(untrusted, "oscova.review", {"uri": from_fs_path(str(repo))})
    assert found["version"] == 1 and found["trusted"] is False and found["base"]["ref"] == "main"
    changed = {a["id"]: a for a in found["workspaces"][0]["agents"]}
    assert sorted(changed) == ["triage", "writer"]
    assert changed["writer"]["causes"] == ["templates/partials/persona.j2"]
    assert "+You are writer, reply in French." in changed["writer"]["changes"][0]["diff"]
    assert {n["name"] for n in found["workspaces"][0]["notLoaded"]} == {"tickets"}
    with pytest.raises(JsonRpcException, match="not trusted"):
        await command(untrusted, "oscova.review", {"trust": True})
    with pytest.raises(JsonRpcException, match="the base 'nope' is not a commit, branch or tag"):
        await command(untrusted, "oscova.review", {"base": "nope"})
    with pytest.raises(JsonRpcException, match="`trust` must be true or false"):
        await command(untrusted, "oscova.review", {"trust": "yes"})
    assert not MARKER.exists()


async def test_a_trusted_workspace_may_ask_for_its_code_to_be_imported(trusted: LanguageClient):
    found: dict[str, Any] = await command(trusted, "oscova.review", {"trust": True, "base": "main"})
    assert found["trusted"] is True and found["workspaces"][0]["notLoaded"] == []
    assert sorted(a["id"] for a in found["workspaces"][0]["agents"]) == ["triage", "writer"]
    assert "providers.tickets" in MARKER.read_text()


async def test_the_repositorys_own_git_programs_never_run_in_restricted_mode(untrusted: LanguageClient,
                                                                              tmp_path: Path):
    from tests.review.test_hostile_git import _script

    repo: Path = untrusted.root  # type: ignore[attr-defined]
    ran = tmp_path / "ran.txt"
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[filter "x"]\n\tclean = {_script(tmp_path / "clean", ran, passthrough=True)}\n'
                     f'[core]\n\tfsmonitor = {_script(tmp_path / "monitor", ran)}\n')
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* filter=x\n")
    _script(repo / ".git" / "hooks" / "post-index-change", ran)
    os.utime(repo / "templates" / "intro.j2")
    found: dict[str, Any] = await command(untrusted, "oscova.review", {"uri": from_fs_path(str(repo))})
    assert sorted(a["id"] for a in found["workspaces"][0]["agents"]) == ["triage", "writer"]
    assert not ran.exists()
