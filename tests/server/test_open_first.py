"""The files the editor has open first: on a cold start of a large workspace the open documents' diagnostics
go out before the rest of the workspace is read, and they are final (no later publication changes them); so
for a document opened while the initial scan runs.

`OSCOVA_LSP_TEST_SCAN_GATE` holds the reading of the whole workspace back until the test opens the gate, so
"before the rest" is certain however loaded the machine is: what a publication says then can only come from
what was read for the open documents.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from oscova_lsp.analysis import cache_files
from oscova_lsp.analysis.host import SCAN_GATE_ENV
from oscova_lsp.lsp.early import EARLY_LOAD_FILES
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from .conftest import SERVER_COMMAND, stop_server

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from workspace_gen import generate  # noqa: E402

COUNT = 400
"""Definitions and templates generated: more files than the phase before pygls reads whole."""
WAIT = 120


async def start(root: Path, env: dict[str, str]) -> tuple[LanguageClient, list[tuple[str, Any]]]:
    client = make_test_lsp_client()
    publications: list[tuple[str, Any]] = []
    client.protocol.fm._features.pop(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, None)  # every publication, in order

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def published(params: lsp.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        publications.append((params.uri, sorted(map(repr, client.protocol._converter.unstructure(params.diagnostics)))))

    @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:
        return None

    await client.start_io(*SERVER_COMMAND, env={**os.environ, **env}, cwd=str(root))
    folder = lsp.WorkspaceFolder(uri=from_fs_path(str(root)), name="ws")
    await client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("neovim@v0.7.0"), root_uri=folder.uri, workspace_folders=[folder]))
    return client, publications


def open_document(client: LanguageClient, path: Path) -> str:
    uri = from_fs_path(str(path))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="jinja" if path.suffix == ".j2" else "yaml", version=1, text=path.read_text())))
    return uri


async def until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


def scan_ended(client: LanguageClient) -> bool:
    return any(isinstance(r, lsp.WorkDoneProgressEnd) for reports in client.progress_reports.values() for r in reports)


@pytest.mark.parametrize("pull_gate", [False, True], ids=["pygls-ready", "before-pygls"])
async def test_open_documents_get_their_final_diagnostics_before_the_rest_is_read(
        tmp_path: Path, pull_gate: bool):
    root = generate(tmp_path / "ws", COUNT)
    assert COUNT * 2 > EARLY_LOAD_FILES
    gate = tmp_path / "gate"
    env = {cache_files.ENV_DIR: str(tmp_path / "cache"), SCAN_GATE_ENV: str(gate)}
    if pull_gate:  # the pygls server is held back too: what comes is the phase before pygls's
        env["OSCOVA_LSP_TEST_IMPORT_GATE"] = str(tmp_path / "import")
    client, publications = await start(root, env)
    try:
        agent = open_document(client, root / "agents/agent_97.agent.yaml")
        template = open_document(client, root / "templates/agent_97.j2")  # its `unbound_variable`: an OSC101
        await until(lambda: {agent, template} <= {uri for uri, _ in publications}, "no early publication")
        assert {uri for uri, _ in publications} == {agent, template}, "only the open documents, the rest held back"
        assert not scan_ended(client)
        first = dict(publications)
        assert first[template], "the unbound variable found before the workspace was read"

        partial = open_document(client, root / "templates/partials/persona_3.j2")  # while the scan is held
        await until(lambda: partial in {uri for uri, _ in publications}, "no publication of the document opened later")
        assert {uri for uri, _ in publications} == {agent, template, partial}
        first[partial] = dict(publications)[partial]

        (tmp_path / "import").touch()
        gate.touch()
        await until(lambda: scan_ended(client), "the initial scan never ended")
        await asyncio.sleep(1.0)  # the last publications follow the progress end
        others = {uri for uri, _ in publications} - set(first)
        assert len(others) > 10, "the rest of the workspace published once read"
        for uri, diagnostics in publications:
            if uri in first:
                assert diagnostics == first[uri], f"a later publication changed {uri}"
        assert {uri: client.diagnostics[uri] for uri in first} and all(
            sorted(map(repr, client.protocol._converter.unstructure(client.diagnostics[uri]))) == first[uri]
            for uri in first)
    finally:
        try:
            await client.shutdown_session()
        finally:
            await stop_server(client)
