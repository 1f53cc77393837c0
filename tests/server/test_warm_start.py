"""The language server starts from the cache: the stored results of the last whole check are
published before the workspace is read when they hold for its files on disk, and a start that reads the
workspace stores its results for the next start or `oscova-lsp check`.

`OSCOVA_LSP_TEST_SCAN_GATE` holds the reading of the workspace back until the test opens the gate, so
"before it is read" is certain however loaded the machine is.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from oscova_lsp.analysis import cache_files
from oscova_lsp.analysis.engine import Analysis
from oscova_lsp.analysis.host import SCAN_GATE_ENV
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from tests.support.cli_zygote import module_command

from .conftest import SERVER_COMMAND, stop_server

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BROKEN = "agents/duplicate-a.agent.yaml"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    target = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", target)
    return target


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cache-home"
    monkeypatch.setenv(cache_files.ENV_DIR, str(home))  # the servers and checks started here inherit it
    monkeypatch.delenv(cache_files.ENV_OFF, raising=False)
    return home


def check(root: Path, *extra: str) -> str:
    return subprocess.run(module_command("check", "--format", "json", *extra, str(root)),
                          capture_output=True, text=True, timeout=300).stdout


async def start(root: Path, env: dict[str, str] | None = None) -> LanguageClient:
    client = make_test_lsp_client()

    @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:
        return None

    await client.start_io(*SERVER_COMMAND, env={**os.environ, **(env or {})}, cwd=str(root))
    folder = lsp.WorkspaceFolder(uri=from_fs_path(str(root)), name="ws")
    await client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("neovim@v0.7.0"), root_uri=folder.uri, workspace_folders=[folder]))
    return client


async def stop(client: LanguageClient) -> None:
    try:
        await client.shutdown_session()
    finally:
        await stop_server(client)


async def scan_ended(client: LanguageClient, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(isinstance(r, lsp.WorkDoneProgressEnd) for reports in client.progress_reports.values()
               for r in reports):
            await asyncio.sleep(0.3)  # the last publications follow the progress end
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the initial scan never ended")


def shown(client: LanguageClient) -> dict[str, Any]:
    """What the client shows: each file's diagnostics as plain data (files shown nothing left out)."""
    converter = client.protocol._converter
    return {uri: sorted(map(repr, converter.unstructure(items))) for uri, items in client.diagnostics.items() if items}


async def settled(root: Path) -> dict[str, Any]:
    """What a server without any cache shows once it has read the workspace."""
    client = await start(root, {cache_files.ENV_OFF: "1"})
    try:
        await scan_ended(client)
        return shown(client)
    finally:
        await stop(client)


async def test_a_warm_start_shows_the_stored_findings_before_the_workspace_is_read(root: Path, cache_home: Path):
    expected = await settled(root)
    assert from_fs_path(str(root / BROKEN)) in expected
    check(root)  # stores the results of this workspace as it is
    gate = root.parent / "gate"
    client = await start(root, {SCAN_GATE_ENV: str(gate)})
    try:
        began = time.monotonic()
        while shown(client) != expected and time.monotonic() - began < 30:
            await asyncio.sleep(0.05)
        assert shown(client) == expected, "every finding is shown while the workspace is still being read"
        assert not any(isinstance(r, lsp.WorkDoneProgressEnd) for reports in client.progress_reports.values()
                       for r in reports)
        gate.touch()
        await scan_ended(client)
        assert shown(client) == expected  # the workspace read: the same findings, still shown
    finally:
        await stop(client)


async def test_stored_results_that_no_longer_hold_are_not_shown(root: Path, cache_home: Path):
    check(root)
    broken = root / BROKEN
    broken.write_text(broken.read_text().replace("id: duplicate", "id: unique-now", 1))  # fixed on disk
    expected = await settled(root)
    gate = root.parent / "gate"
    client = await start(root, {SCAN_GATE_ENV: str(gate)})
    try:
        began = time.monotonic()
        while not shown(client) and time.monotonic() - began < 30:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # anything else that start would publish early has had its chance
        early = shown(client)
        # The nested workspace `lint-only/` did not change: its results still hold and are shown. Those of
        # the changed workspace are computed for other files: none of its files shows anything yet.
        assert early and all("/lint-only/" in uri for uri in early), early
        gate.touch()
        await scan_ended(client)
        assert shown(client) == expected
    finally:
        await stop(client)


async def test_a_start_that_reads_the_workspace_stores_its_results(root: Path, cache_home: Path):
    expected = check(root, "--no-cache")
    client = await start(root)
    try:
        await scan_ended(client)
        began = time.monotonic()  # the results are written after the last publication
        while Analysis(str(root)).stored_results() is None and time.monotonic() - began < 30:
            await asyncio.sleep(0.1)
    finally:
        await stop(client)
    assert Analysis(str(root)).stored_results() is not None, "the start stored the results"
    assert check(root) == expected  # and `check` prints them as a check without any cache does
