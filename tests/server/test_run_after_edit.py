"""A run started right after an edit runs what the editor shows or says why not.

Runs read the saved files (docs/editors.md, "Which text a run uses"): a definition or template open with
unsaved changes makes the run refuse with a sentence that names the file; once saved, a run started at once
uses the saved text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.run_workspace import write_workspace

from .test_runs import CONFIG, KEY_VARIABLE, Session, host_toml, start_run_session

pytestmark = pytest.mark.asyncio(loop_scope="module")

WRITER = "id: writer\nname: Writer\ninstructions_file: ../templates/writer.j2\n"
TEMPLATE = "Write in English for {{ user_name }}.\n"


@pytest_lsp.fixture(config=CONFIG, scope="module", loop_scope="module")
async def client(lsp_client: LanguageClient, fake: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("edits") / "ws"
    write_workspace(root, host_toml(fake.base_url, KEY_VARIABLE), {"writer": WRITER})
    (root / "templates").mkdir()
    (root / "templates" / "writer.j2").write_text(TEMPLATE)
    lsp_client.session = await start_run_session(lsp_client, root, fake)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


class Buffer:
    def __init__(self, s: Session, rel: str) -> None:
        self.s, self.rel, self.version = s, rel, 1
        self.uri = from_fs_path(str(s.root / rel))
        s.client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
            uri=self.uri, language_id="yaml" if rel.endswith(".yaml") else "jinja", version=1,
            text=(s.root / rel).read_text())))

    def type(self, text: str) -> None:
        self.version += 1
        self.s.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))

    def save(self, text: str) -> None:
        """As an editor saves: the file written, `didSave`, then the watcher's change."""
        Path(self.s.root / self.rel).write_text(text)
        self.s.client.text_document_did_save(lsp.DidSaveTextDocumentParams(
            text_document=lsp.TextDocumentIdentifier(uri=self.uri)))
        self.s.client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=self.uri, type=lsp.FileChangeType.Changed)]))


async def run(s: Session) -> dict[str, Any]:
    return await s.command("oscova.runAgent", {"agentId": "writer", "input": "Hello",
                                               "uri": s.uri("agents/writer.agent.yaml")})


def system_prompt(s: Session) -> str:
    return str(s.fake.requests[-1].messages[0]["content"])


async def test_a_run_right_after_an_edit_is_refused_until_saved_then_sees_the_edit(client: LanguageClient):
    s: Session = client.session  # type: ignore[attr-defined]
    s.fake.reset()
    template = Buffer(s, "templates/writer.j2")
    definition = Buffer(s, "agents/writer.agent.yaml")

    s.fake.enqueue(Reply(text="Hi."))
    first = await run(s)
    assert first["status"] == "completed", first
    assert "Write in English" in system_prompt(s)

    french = TEMPLATE.replace("English", "French")
    template.type(french)
    refused = await run(s)
    assert refused["status"] == "failed"
    assert "templates/writer.j2 has unsaved changes; save it to run what the editor shows" in refused["error"]
    assert len(s.fake.requests) == 1  # the model was never asked

    template.save(french)
    s.fake.enqueue(Reply(text="Bonjour."))
    saved = await run(s)
    assert saved["status"] == "completed", saved
    assert "Write in French" in system_prompt(s)

    definition.type(WRITER.replace("Writer", "Scribe"))
    refused = await run(s)
    assert refused["status"] == "failed" and "agents/writer.agent.yaml has unsaved changes" in refused["error"]

    definition.save(WRITER.replace("Writer", "Scribe"))
    s.fake.enqueue(Reply(text="Hi."))
    saved = await run(s)
    assert saved["status"] == "completed", saved
    started = next(e for e in s.of_run(saved["runId"]) if e["kind"] == "started")
    assert started["agentName"] == "Scribe"


async def test_list_agents_and_the_run_see_the_same_agents(client: LanguageClient):
    s: Session = client.session  # type: ignore[attr-defined]
    listed = await s.command("oscova.listAgents", {"uri": s.uri()})
    assert [a["id"] for a in listed] == ["writer"]
    s.fake.enqueue(Reply(text="ok"))
    assert (await run(s))["status"] == "completed"
