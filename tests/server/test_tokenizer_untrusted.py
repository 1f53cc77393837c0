"""In an untrusted folder the token figures never load the workspace's own `tokenizer.json` (its patterns are the
workspace's: one that backtracks held another file's hover for half a minute): they are the estimate, saying why,
through a real client."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.runs.test_tokenizer_boundary import tokenizer_json

from .conftest import Editor, SessionOptions, with_trust, write_files
from .test_token_figures import hover_text, token_lens

pytestmark = pytest.mark.asyncio(loop_scope="module")

STALLS = "(a|aa)+b"
"""A Split pattern whose matching time doubles with each `a` of a text with no `b`."""
FILES = {
    "oscova.toml": '[host]\nuser_id = "alice"\n\n[models.default]\nmodel = "own-model"\ntokenizer = "tok.json"\n'
                   'base_url = "http://127.0.0.1:9/v1"\n',
    "agents/helper.agent.yaml": "id: helper\ninstructions: Say " + "a" * 60 + "!\n",
    "agents/other.agent.yaml": "id: other\ninstructions: Be brief.\n",
    "tok.json": tokenizer_json(STALLS),
}


@pytest.fixture(scope="module")
def lsp_options() -> SessionOptions:
    return with_trust(SessionOptions(client="vscode"), False)


@pytest.fixture(scope="module")
def lsp_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_files(tmp_path_factory.mktemp("untrusted-tokenizer") / "ws", FILES)


async def test_an_untrusted_folder_counts_by_the_estimate_and_says_why(client: LanguageClient) -> None:
    editor: Editor = client.editor  # type: ignore[attr-defined]
    uri = editor.open("agents/helper.agent.yaml")
    began = time.monotonic()
    figures = (await hover_text(client, uri, lsp.Position(line=0, character=5))).split("\n\n---\n\n")[-1]
    assert figures.startswith("**Tokens** ≈ "), figures
    assert "the tokenizer tok.json is not loaded: the workspace is not trusted" in figures
    lens = await token_lens(client, uri)
    assert lens.command is not None and lens.command.title.startswith("≈ ")
    other = editor.open("agents/other.agent.yaml")
    assert (await hover_text(client, other, lsp.Position(line=0, character=5))).startswith("**agent** `other`")
    assert time.monotonic() - began < 15
