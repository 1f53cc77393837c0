"""What a prompt costs, in the editor through a real client: the hover on a definition's `id` shows its cost
(total, instructions / messages / tools, the cacheable prefix, the tokenizer; `≈` for an estimate), the hover on a
`context_providers` entry that provider's contribution and share, and the code lens on `id` says
"1,240 tokens · 1,020 cacheable" once resolved, opening the preview; while a file cannot be previewed (unsaved,
broken) both say they cannot count, never the last figures."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from oscova_runtime import tokens
from pytest_lsp import LanguageClient

from .conftest import Editor, SessionOptions, write_files

pytestmark = pytest.mark.asyncio(loop_scope="module")

HELPER = """\
id: helper
instructions: |
  You help {{ user_name }} of {{ team }}. Today is {{ current_date }}.
  Answer with care and cite the runbook.
tools: [current_datetime]
default_providers: false
context_providers:
  - tools
  - personal
  - type: todo
"""
FILES = {
    "oscova.toml": '[host]\nuser_id = "alice"\ntodo = true\n\n[user]\nname = "Alice Example"\n\n'
                   '[variables]\nteam = "Platform Support"\n\n[models.default]\nmodel = "gpt-4.1-mini"\n\n'
                   '[models.local]\nmodel = "llama3.1:8b"\nbase_url = "http://127.0.0.1:9/v1"\n',
    "agents/helper.agent.yaml": HELPER,
    "agents/local.agent.yaml": "id: local\nmodel: local\ninstructions: Summarize what you are given.\n",
    "agents/slow.agent.yaml": "id: slow\ninstructions: Wait.\ncontext_providers: [sleeper]\n",
    "sleeper.py": "import asyncio\nfrom oscova_runtime import AIContext, AIContextProvider\n\n\n"
                  "class Sleeper(AIContextProvider):\n    async def provide_ai_context(self, context):\n"
                  "        await asyncio.sleep(3600)\n        return AIContext()\n",
}
FILES["oscova.toml"] += '\n[providers.sleeper]\nclass = "sleeper:Sleeper"\ncontributes = ["instructions"]\n'


@pytest.fixture(scope="module")
def lsp_options() -> SessionOptions:
    return SessionOptions(client="vscode")


@pytest.fixture(scope="module")
def lsp_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_files(tmp_path_factory.mktemp("figures") / "ws", FILES)


def at(text: str, needle: str) -> lsp.Position:
    offset = text.index(needle) + 1
    return lsp.Position(line=text.count("\n", 0, offset), character=offset - (text.rfind("\n", 0, offset) + 1))


async def hover_text(client: LanguageClient, uri: str, position: lsp.Position) -> str:
    found = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=position))
    assert found is not None and isinstance(found.contents, lsp.MarkupContent)
    return found.contents.value


async def preview_tokens(client: LanguageClient, uri: str, agent_id: str) -> dict[str, Any]:
    result = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="oscova.previewPrompt", arguments=[{"agentId": agent_id, "uri": uri}]))
    return dict(result["tokens"])


async def token_lens(client: LanguageClient, uri: str) -> lsp.CodeLens:
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri)))
    unresolved = [lens for lens in lenses or [] if lens.command is None]
    assert len(unresolved) == 1, lenses  # `Run agent` and `Preview prompt` come with their commands
    assert unresolved[0].range.start.line == 0
    return await client.code_lens_resolve_async(unresolved[0])


async def test_the_hover_on_id_shows_what_the_prompt_costs(client: LanguageClient) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = editor.open("agents/helper.agent.yaml")
    counted = await preview_tokens(client, uri, "helper")
    assert counted["exact"] and counted["tokenizer"] == "o200k_base" and counted["tools"] > 0

    shown = await hover_text(client, uri, at(HELPER, "helper"))
    assert "**agent** `helper`" in shown  # the hover it had stays, the figures follow
    figures = shown.split("\n\n---\n\n")[-1]
    assert figures.startswith(
        f"**Tokens** {counted['total']:,} (counted with o200k_base): instructions {counted['instructions']:,} · "
        f"messages {counted['messages']:,} · tools {counted['tools']:,}"), figures
    cacheable = counted["cacheable"]
    assert 0 < cacheable["tokens"] < counted["total"]
    assert f"{cacheable['tokens']:,} cacheable: the prefix ends where `user_name` (personal) changes per user" in figures
    assert "≈" not in figures


async def test_the_hover_on_a_provider_entry_shows_its_share(client: LanguageClient) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = editor.uri("agents/helper.agent.yaml")
    preview = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="oscova.previewPrompt", arguments=[{"agentId": "helper", "uri": uri}]))
    total = preview["tokens"]["total"]
    personal = next(p for p in preview["providers"] if p["type"] == "personal")
    spent = tokens.tokenizer_for("gpt-4.1-mini").count(personal["instructions"])
    assert spent > 10

    shown = (await hover_text(client, uri, at(HELPER, "personal"))).split("\n\n---\n\n")
    assert shown[0].startswith("**provider** `personal`")
    assert shown[-1] == (f"**Tokens** `personal`: {spent} of {total} ({100 * spent / total:.0f} %; counted with "
                         f"o200k_base): instructions {spent} · messages 0 · tools 0")

    todo = next(p for p in preview["tokens"]["byProvider"] if p["type"] == "todo")
    assert todo["tools"] > 0 and todo["messages"] > 0
    shown = (await hover_text(client, uri, at(HELPER, "todo"))).split("\n\n---\n\n")[-1]
    assert f"instructions {todo['instructions']} · messages {todo['messages']} · tools {todo['tools']}" in shown


async def test_an_estimate_says_so(client: LanguageClient) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = editor.open("agents/local.agent.yaml")
    counted = await preview_tokens(client, uri, "local")
    assert not counted["exact"]
    figures = (await hover_text(client, uri, lsp.Position(line=0, character=5))).split("\n\n---\n\n")[-1]
    assert figures.startswith(f"**Tokens** ≈ {counted['total']:,} (estimated: no tokenizer is known for the model"), figures
    lens = await token_lens(client, uri)
    assert lens.command is not None
    assert lens.command.title == f"≈ {counted['total']:,} tokens · {counted['cacheable']['tokens']:,} cacheable"


async def test_the_lens_names_the_figures_and_opens_the_preview(client: LanguageClient) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = editor.uri("agents/helper.agent.yaml")
    counted = await preview_tokens(client, uri, "helper")
    lens = await token_lens(client, uri)
    assert lens.command is not None
    assert lens.command.title == f"{counted['total']:,} tokens · {counted['cacheable']['tokens']:,} cacheable"
    assert lens.command.command == "oscova.previewPrompt"
    assert list(lens.command.arguments or []) == [{"agentId": "helper", "uri": uri}]
    assert lens.command.tooltip == "counted with o200k_base"


async def test_a_file_that_cannot_be_previewed_gives_no_stale_figures(client: LanguageClient) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    rel = "agents/helper.agent.yaml"
    uri = editor.uri(rel)
    before = await preview_tokens(client, uri, "helper")
    assert (await token_lens(client, uri)).command.title.startswith(f"{before['total']:,} tokens")  # type: ignore[union-attr]

    longer = HELPER.replace("cite the runbook.", "cite the runbook. " + "Check every figure twice. " * 250)
    editor.replace(rel, longer)  # unsaved: a preview reads the saved files, so there is nothing to count
    lens = await token_lens(client, uri)
    assert lens.command is not None and lens.command.title == "Tokens: cannot count"
    assert "unsaved changes" in (lens.command.tooltip or "")
    figures = (await hover_text(client, uri, at(longer, "helper"))).split("\n\n---\n\n")[-1]
    assert figures.startswith("**Tokens: cannot count**: agents/helper.agent.yaml has unsaved changes"), figures

    (editor.root / rel).write_text(longer)
    asked = editor.code_lens_refreshes  # VS Code declares `refreshSupport`
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    await editor.wait_for(lambda: editor.code_lens_refreshes > asked)  # the editor asks for the lenses again
    after = await preview_tokens(client, uri, "helper")
    assert after["total"] > before["total"] + 1000
    title = (await token_lens(client, uri)).command.title  # type: ignore[union-attr]
    assert title == f"{after['total']:,} tokens · {after['cacheable']['tokens']:,} cacheable" and "," in title
    assert f"**Tokens** {after['total']:,} " in await hover_text(client, uri, at(longer, "helper"))

    broken = longer.replace("id: helper\n", "id: helper\nmax_prompt_tokens: many\n")
    (editor.root / rel).write_text(broken)
    editor.replace(rel, broken)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    lens = await token_lens(client, uri)
    assert lens.command is not None and lens.command.title == "Tokens: cannot count", lens.command
    assert "max_prompt_tokens" in (lens.command.tooltip or ""), lens.command.tooltip
    figures = (await hover_text(client, uri, at(broken, "helper"))).split("\n\n---\n\n")[-1]
    assert figures.startswith("**Tokens: cannot count**") and f"{after['total']:,}" not in figures


async def test_a_lens_without_its_data_is_left_as_it_came(client: LanguageClient) -> None:
    lens = lsp.CodeLens(range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=1)),
                        data={"agentId": 3})
    resolved = await client.code_lens_resolve_async(lens)
    assert resolved.command is None


async def test_a_provider_that_never_answers_does_not_hold_the_hover(client: LanguageClient) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = editor.open("agents/slow.agent.yaml")
    began = time.monotonic()
    figures = (await hover_text(client, uri, lsp.Position(line=0, character=5))).split("\n\n---\n\n")
    assert figures[0].startswith("**agent** `slow`")
    assert figures[-1] == ("**Tokens: cannot count**: still counting after 5 s (a provider or a template is slow); "
                           "ask again later")
    assert time.monotonic() - began < 15
    local = editor.uri("agents/local.agent.yaml")  # the others are counted meanwhile
    assert "**Tokens** ≈ " in await hover_text(client, local, lsp.Position(line=0, character=5))
