"""The host takes an edit at once; only its publication waits for the debounce.

With a long debounce (3 s), a request right after an edit answers about the edited text (no reader has to
flush anything first), while the diagnostics of the edit go out only once the document rested.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from .conftest import Editor, SessionOptions, answered

pytestmark = pytest.mark.asyncio(loop_scope="module")

DEBOUNCE_MS = 3000
TEMPLATE = "templates/environment.j2"


@pytest.fixture(scope="module")
def lsp_options() -> SessionOptions:
    return SessionOptions(client="neovim@v0.7.0", client_name="neovim", settings={"debounce": DEBOUNCE_MS})


async def test_a_hover_right_after_an_edit_is_about_the_edited_text_and_publication_waits(editor: Editor,
                                                                                        lsp_workspace: Path):
    uri = editor.open(TEMPLATE, "{{ first_name }}\n")
    await editor.wait_for(lambda: editor.published_versions.get(uri) == 1, timeout=30)

    edited = editor.replace(TEMPLATE, "{{ renamed_value }} {% if %}\n")
    asked = time.monotonic()
    hover = await answered(editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=0, character=5))), "hover")
    assert hover is not None and "renamed_value" in str(hover.contents)  # the edit, taken at once
    if time.monotonic() - asked < DEBOUNCE_MS / 1000 - 0.5:  # a loaded machine may answer late: then say nothing
        assert editor.published_versions.get(uri) == 1, "the edit's diagnostics went out before the debounce"

    await editor.wait_for(lambda: editor.published_versions.get(uri) == edited, timeout=30)
    assert "OSC100" in {str(d.code) for d in editor.client.diagnostics[uri]}  # the edited text's syntax error
