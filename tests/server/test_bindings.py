"""Through a real client, the diagnostics and the editor features agree on which names a template's
renderer binds. A macro file imported without context sees no provider variable: the server reports
`user_name` there as unbound, so hover, inlay hints and completion must not present it as bound; a
`[variables]` key used in the environment template is named with its binder by the diagnostic as by hover."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.support.host_files import MODELS

from .conftest import Editor, SessionOptions, write_files

pytestmark = pytest.mark.asyncio(loop_scope="module")

FILES = {
    "oscova.toml": '[variables]\nteam = "Platform"\n\n[environment]\ntemplate = "env.j2"\n\n' + MODELS,
    "a.agent.yaml": "id: a\ninstructions_file: instructions.j2\n",
    "instructions.j2": '{% import "macros.j2" as m %}{{ m.greet() }} of {{ team }}\n',
    "macros.j2": "{% macro greet() %}Hello {{ user_name }} {{  }}{% endmacro %}\n",
    "env.j2": "On {{ os }} for {{ team }}.\n",
}


@pytest.fixture(scope="module")
def lsp_options() -> SessionOptions:
    return SessionOptions(client="vscode")


@pytest.fixture(scope="module")
def lsp_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_files(tmp_path_factory.mktemp("bindings") / "ws", FILES)


def _at(rel: str, needle: str, shift: int = 0) -> lsp.Position:
    text = FILES[rel]
    offset = text.index(needle) + shift
    line = text.count("\n", 0, offset)
    return lsp.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


async def test_a_template_imported_without_context_is_unbound_everywhere(client: LanguageClient) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = editor.open("macros.j2")
    found = await editor.wait_diagnostics("macros.j2", lambda d: any(x.code == "OSC101" for x in d))
    [diag] = [d for d in found if d.code == "OSC101"]
    assert diag.range.start == _at("macros.j2", "user_name") and "without context" in diag.message

    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=_at("macros.j2", "user_name", 2)))
    assert hover is not None
    assert isinstance(hover.contents, lsp.MarkupContent)
    own = hover.contents.value.split("\n\n---\n\n")[0]
    assert "bound by `personal`" not in own and "without context" in own, own

    hints = await client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=1, character=0))))
    assert not hints, hints

    result = await client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=_at("macros.j2", "{{  }}", 3)))
    items = result.items if isinstance(result, lsp.CompletionList) else result or []
    labels = {item.label for item in items}
    assert {"range", "namespace", "greet"} <= labels  # Jinja globals and the template's own names
    assert not labels & {"user_name", "agent_name", "team"}, labels


async def test_a_variables_key_outside_agent_instructions_names_its_binder(client: LanguageClient) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = editor.open("env.j2")
    found = await editor.wait_diagnostics("env.j2", lambda d: any(x.code == "OSC101" for x in d))
    [diag] = [d for d in found if d.code == "OSC101"]
    assert diag.range.start == _at("env.j2", "team")
    assert "the `personal` provider binds it" in diag.message, diag.message
    assert [(r.location.uri, r.location.range.start.line) for r in diag.related_information or []] == [
        (editor.uri("oscova.toml"), 1)]
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=diag.range.start))
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert "the `personal` provider binds it" in hover.contents.value
