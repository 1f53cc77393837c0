"""Requests sent right after start-up get the answer they get once the workspace is read.

The server starts on a fresh workspace, the editor opens an agent and a template and asks at once (after a
random 0–500 ms) for the definition, hover, references and rename of an `agent_tools` item and for
completion in the template: each answer must equal the settled one, computed by a server that waited for
its initial scan. `OSCOVA_LSP_TEST_SCAN_DELAY` (read by the server for tests only) slows the scan down, so
the requests surely arrive before it ends.
"""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from oscova_lsp.lsp.server import READY_TIMEOUT_ENV
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from tests.support.host_files import MODELS

from .conftest import SERVER_COMMAND, stop_server

HOST = """\
[host]
user_id = "alice"

[variables]
team = "Platform"
region = "eu"

""" + MODELS
FRONTLINE = """\
id: frontline
instructions_file: ../templates/frontline.j2
agent_tools:
  - refunds
  - lookup
"""
FRONTLINE_TEMPLATE = "You help {{ user_name }}.\n{{  }}\n"
COMPLETION_AT = lsp.Position(line=1, character=3)
REFUNDS_ITEM = lsp.Position(line=3, character=5)  # `  - refunds`


def make_workspace(root: Path, extra_agents: int = 0, extra_templates: int = 0) -> Path:
    files = {
        "oscova.toml": HOST,
        "agents/frontline.agent.yaml": FRONTLINE,
        "agents/refunds.agent.yaml": "id: refunds\nexposed_as_tool: true\ninstructions: Refund orders.\n",
        "agents/lookup.agent.yaml": "id: lookup\nexposed_as_tool: true\ninstructions_file: ../templates/lookup.j2\n",
        "agents/escalation.agent.yaml": "id: escalation\nagent_tools: [refunds]\ninstructions: Escalate.\n",
        "agents/billing.agent.yaml": "id: billing\nagent_tools: [refunds, lookup]\ninstructions: Bill.\n",
        "agents/triage.agent.yaml": "id: triage\ninstructions_file: ../templates/triage.j2\n",
        "templates/frontline.j2": FRONTLINE_TEMPLATE,
        "templates/lookup.j2": "Look up orders for {{ team }}.\n",
        "templates/triage.j2": "{% include 'templates/common.j2' %}\nTriage.\n",
        "templates/common.j2": "Team: {{ team }} in {{ region }}\n",
        "templates/unused.j2": "Nobody renders me.\n",
    }
    for i in range(extra_agents):
        files[f"agents/gen/a{i}.agent.yaml"] = (f"id: a{i}\nexposed_as_tool: true\nagent_tools: [refunds]\n"
                                               f"instructions_file: ../../templates/gen/t{i}.j2\n")
    for i in range(extra_templates):
        files[f"templates/gen/t{i}.j2"] = f"Generated {i} for {{{{ team }}}}.\n"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


class Started:
    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root

    def uri(self, rel: str) -> str:
        return from_fs_path(str(self.root / rel))

    def open(self, rel: str) -> None:
        language = "yaml" if rel.endswith(".yaml") else "jinja"
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
            uri=self.uri(rel), language_id=language, version=1, text=(self.root / rel).read_text())))

    async def answers(self) -> dict[str, Any]:
        """Every question, asked at once; answers as plain JSON (so they compare across servers)."""
        client = self.client
        agent = lsp.TextDocumentIdentifier(uri=self.uri("agents/frontline.agent.yaml"))
        template = lsp.TextDocumentIdentifier(uri=self.uri("templates/frontline.j2"))
        asked = {
            "definition": client.text_document_definition_async(
                lsp.DefinitionParams(text_document=agent, position=REFUNDS_ITEM)),
            "hover": client.text_document_hover_async(lsp.HoverParams(text_document=agent, position=REFUNDS_ITEM)),
            "references": client.text_document_references_async(lsp.ReferenceParams(
                text_document=agent, position=REFUNDS_ITEM, context=lsp.ReferenceContext(include_declaration=True))),
            "prepareRename": client.text_document_prepare_rename_async(
                lsp.PrepareRenameParams(text_document=agent, position=REFUNDS_ITEM)),
            "rename": _rename(client, agent),
            "completion": client.text_document_completion_async(
                lsp.CompletionParams(text_document=template, position=COMPLETION_AT)),
        }
        values = await asyncio.gather(*asked.values())
        converter = client.protocol._converter
        out = dict(zip(asked, (converter.unstructure(v) for v in values), strict=True))
        out["references"] = sorted(out["references"] or [], key=repr)
        return out


async def _rename(client: LanguageClient, agent: lsp.TextDocumentIdentifier) -> Any:
    try:
        return await client.text_document_rename_async(
            lsp.RenameParams(text_document=agent, position=REFUNDS_ITEM, new_name="refunds2"))
    except Exception as error:  # an error answer is an answer: it must not differ from the settled one
        return f"error: {error}"


async def start(root: Path, env: dict[str, str] | None = None) -> Started:
    client = make_test_lsp_client()

    @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:
        return None

    client.set_configuration({"debounce": 50}, section="oscova")
    await client.start_io(*SERVER_COMMAND, env={**os.environ, **(env or {})}, cwd=str(root))
    folder = lsp.WorkspaceFolder(uri=from_fs_path(str(root)), name="ws")
    await client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("neovim@v0.7.0"), root_uri=folder.uri, workspace_folders=[folder]))
    return Started(client, root)


async def stop(started: Started) -> None:
    try:
        await started.client.shutdown_session()
    finally:
        await stop_server(started.client)


async def wait_checked(started: Started, timeout: float = 60) -> None:
    for _ in range(int(timeout / 0.05)):
        for reports in started.client.progress_reports.values():
            if any(isinstance(r, lsp.WorkDoneProgressEnd) for r in reports):
                return
        await asyncio.sleep(0.05)
    raise AssertionError("the initial scan never ended")


async def settled(root: Path) -> dict[str, Any]:
    started = await start(root)
    try:
        await wait_checked(started)
        started.open("agents/frontline.agent.yaml")
        started.open("templates/frontline.j2")
        return await started.answers()
    finally:
        await stop(started)


async def right_after_open(root: Path, delay: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    started = await start(root, env)
    try:
        started.open("agents/frontline.agent.yaml")
        started.open("templates/frontline.j2")
        await asyncio.sleep(delay)
        return await started.answers()
    finally:
        await stop(started)


def check_settled(answers: dict[str, Any], root: Path) -> None:
    """The settled answers are the right ones (so equal answers are right answers too)."""
    assert [Path(from_fs_path(str(root / "agents/refunds.agent.yaml")))] == [
        Path(loc["uri"]) for loc in answers["definition"]]
    labels = {item["label"] for item in answers["completion"]["items"]}
    assert {"team", "region"} <= labels, labels
    assert answers["hover"] is not None and "refunds" in str(answers["hover"])
    assert len(answers["references"]) >= 4
    assert answers["prepareRename"] is not None
    assert isinstance(answers["rename"], dict), answers["rename"]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_workspace(tmp_path_factory.mktemp("race") / "ws")


async def test_answers_right_after_open_equal_the_settled_answers(small: Path):
    expected = await settled(small)
    check_settled(expected, small)
    rng = random.Random(10)
    for attempt in range(20):
        delay = rng.uniform(0, 0.5)
        assert await right_after_open(small, delay) == expected, f"attempt {attempt} after {delay:.3f} s"


async def test_answers_while_a_slow_scan_runs_equal_the_settled_answers(small: Path):
    expected = await settled(small)
    got = await right_after_open(small, 0, {"OSCOVA_LSP_TEST_SCAN_DELAY": "2"})
    assert got == expected


async def test_answers_right_after_open_on_a_larger_workspace(tmp_path: Path):
    root = make_workspace(tmp_path / "ws", extra_agents=400, extra_templates=400)
    expected = await settled(root)
    check_settled(expected, root)
    rng = random.Random(11)
    for _ in range(2):
        assert await right_after_open(root, rng.uniform(0, 0.5)) == expected


async def test_past_the_wait_bound_a_request_is_refused_never_answered_from_a_partial_index(small: Path):
    """A scan slower than the bound a request waits for: the request gets ContentModified (the editor asks
    again) instead of an empty or partial answer; a pull for diagnostics is cancelled with
    `retriggerRequest`; asked again once the scan ended, both are right."""
    expected = await settled(small)
    started = await start(small, {"OSCOVA_LSP_TEST_SCAN_DELAY": "4", READY_TIMEOUT_ENV: "0.5"})
    try:
        started.open("agents/frontline.agent.yaml")
        agent = lsp.TextDocumentIdentifier(uri=started.uri("agents/frontline.agent.yaml"))
        with pytest.raises(JsonRpcException) as refused:
            await started.client.text_document_definition_async(
                lsp.DefinitionParams(text_document=agent, position=REFUNDS_ITEM))
        assert refused.value.code == lsp.LSPErrorCodes.ContentModified
        assert "still being read" in refused.value.message
        with pytest.raises(JsonRpcException) as cancelled:
            await started.client.text_document_diagnostic_async(lsp.DocumentDiagnosticParams(text_document=agent))
        assert cancelled.value.code == lsp.LSPErrorCodes.ServerCancelled
        assert cancelled.value.data == {"retriggerRequest": True}
        await wait_checked(started)
        again = await started.client.text_document_definition_async(
            lsp.DefinitionParams(text_document=agent, position=REFUNDS_ITEM))
        assert started.client.protocol._converter.unstructure(again) == expected["definition"]
    finally:
        await stop(started)
