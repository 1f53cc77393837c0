"""Starting the server or the checker never imports a file of the folder it is started in.

`python -m` puts the current directory first on `sys.path`, and a worker process that multiprocessing
starts with `python -c` does too: a workspace holding `uuid.py`, `yaml.py`, `pydantic.py`, `hashlib.py`,
`lsprotocol.py` (or any module the server imports) would run at server start, trusted or not. Here every
module the server and the checker import is shadowed by a file that writes a marker when imported, and
each start path runs in that folder: no marker may appear.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import client_capabilities, make_test_lsp_client

from .conftest import stop_server

PYTHON = sys.executable
CONSOLE_SCRIPT = str(Path(sys.executable).with_name("oscova-lsp"))
ALWAYS = ("uuid", "yaml", "pydantic", "hashlib", "lsprotocol", "multiprocessing", "concurrent", "jinja2", "pygls")
TEMPLATES = 420
"""Above the engine's parallel threshold: the templates are parsed in worker processes."""

IMPORTED_BY_THE_SERVER = textwrap.dedent("""\
    import sys, multiprocessing.forkserver, multiprocessing.spawn, multiprocessing.resource_tracker
    from oscova_lsp.cli import main
    import oscova_lsp.lsp.server, oscova_lsp.runs.service
    main(["check", "--jobs", "2", sys.argv[1]])
    print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
""")


@pytest.fixture(scope="module")
def module_names(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Every top-level module the server and the checker import (found with `-P`, from a neutral folder)."""
    folder = tmp_path_factory.mktemp("neutral")
    make_workspace(folder / "ws", templates=TEMPLATES)
    out = subprocess.run([PYTHON, "-P", "-c", IMPORTED_BY_THE_SERVER, str(folder / "ws")], cwd=folder,
                         capture_output=True, text=True, timeout=120)
    names = out.stdout.split("\n")[-2].split()
    assert {"yaml", "pydantic", "jinja2", "lsprotocol", "pygls", "multiprocessing"} <= set(names), out.stderr
    return sorted({*names, *ALWAYS} - {"__main__", "__mp_main__", "oscova_lsp", "builtins", "sys"})


def make_workspace(root: Path, templates: int = 0) -> Path:
    (root / "agents").mkdir(parents=True)
    (root / "templates").mkdir()
    (root / "oscova.toml").write_text('[host]\nuser_id = "alice"\n')
    (root / "agents" / "broken.agent.yaml").write_text("id: broken\ninstructions: Help.\nmemory: maybe\n")
    for i in range(templates):
        (root / "templates" / f"t{i}.j2").write_text(f"Template {i}: {{{{ user_name }}}}\n")
    return root


def shadow(folder: Path, names: list[str]) -> Path:
    """Files named like the modules that write a marker (outside the folder) when imported."""
    markers = folder.parent / f"{folder.name}-markers"
    markers.mkdir()
    for name in names:
        (folder / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').close()\n")
    return markers


def imported(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


@pytest.mark.parametrize("argv", [["--help"], ["check", "."], ["check", "--jobs", "2", "--format", "json", "."]],
                         ids=["help", "check", "check-in-workers"])
def test_python_m_in_a_workspace_folder_imports_nothing_from_it(argv: list[str], module_names: list[str],
                                                                  tmp_path: Path):
    root = make_workspace(tmp_path / "ws", templates=TEMPLATES if "--jobs" in argv else 0)
    markers = shadow(root, module_names)
    out = subprocess.run([PYTHON, "-m", "oscova_lsp", *argv], cwd=root, capture_output=True, text=True, timeout=120)
    assert imported(markers) == []
    if argv[0] == "check":
        assert out.returncode == 1 and "OSC002" in out.stdout, out.stderr
    else:
        assert out.returncode == 0 and "check" in out.stdout


@pytest.mark.parametrize("command", [
    [PYTHON, "-m", "oscova_lsp"],
    [CONSOLE_SCRIPT],
    [PYTHON, "-P", "-m", "oscova_lsp"],
], ids=["python-m", "console-script", "python-P-m"])
async def test_a_server_started_in_a_workspace_folder_imports_nothing_from_it(
        command: list[str], module_names: list[str], tmp_path: Path):
    """The extension's start paths, in the workspace folder; its templates are parsed by worker processes
    (a fork server started with `python -c`), so they must not import from it either."""
    root = make_workspace(tmp_path / "ws", templates=TEMPLATES)
    markers = shadow(root, module_names)
    client = make_test_lsp_client()

    @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:
        return None

    await client.start_io(*command, env={**os.environ, "OSCOVA_LSP_JOBS": "2"}, cwd=str(root))
    try:
        folder = lsp.WorkspaceFolder(uri=from_fs_path(str(root)), name="ws")
        await client.initialize_session(lsp.InitializeParams(
            capabilities=client_capabilities("neovim@v0.7.0"), root_uri=folder.uri, workspace_folders=[folder],
            initialization_options={"workspaceTrusted": False}))
        uri = from_fs_path(str(root / "agents" / "broken.agent.yaml"))
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
            uri=uri, language_id="yaml", version=1, text=(root / "agents" / "broken.agent.yaml").read_text())))
        for _ in range(1200):  # diagnostics still arrive (at most 60 s)
            if any(d.code == "OSC002" for d in client.diagnostics.get(uri, [])):
                break
            await asyncio.sleep(0.05)
        assert any(d.code == "OSC002" for d in client.diagnostics.get(uri, [])), client.diagnostics.get(uri)
        await client.shutdown_session()
    finally:
        await stop_server(client)
    assert imported(markers) == []
