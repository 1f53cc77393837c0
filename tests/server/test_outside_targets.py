"""Editor features never point at, or read, a template outside the workspace root: go to
definition, document links and hover on an `instructions_file`, an `include` or an `oscova.toml` template path
that leaves the root (`..`, an absolute path, a symlink leading out) offer nothing; the same features on a
template inside the root still work. Through the real server (a subprocess over stdio, pytest-lsp)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from oscova_runtime.paths import is_inside
from pygls.uris import to_fs_path

from tests.support.host_files import MODELS

from .conftest import Editor, SessionOptions

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "outside-secret-5e0c"


def layout(base: Path) -> tuple[Path, Path]:
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.j2").write_text(f"{SECRET}\n")
    root = base / "ws"
    (root / "agents").mkdir(parents=True)
    (root / "templates").mkdir()
    (root / "templates/ok.j2").write_text("inside\n")
    os.symlink(outside / "secret.j2", root / "templates/link.j2")
    (root / "oscova.toml").write_text(MODELS + '\n[environment]\ntemplate = "../outside/secret.j2"\n')
    files = {
        "up": "../../outside/secret.j2",
        "abs": str(outside / "secret.j2"),
        "link": "../templates/link.j2",
        "ok": "../templates/ok.j2",
    }
    for name, target in files.items():
        (root / f"agents/{name}.agent.yaml").write_text(f"id: {name}\ninstructions_file: {target}\n")
    (root / "templates/main.j2").write_text('{% include "../outside/secret.j2" %}\n{% include "templates/ok.j2" %}\n')
    return root, outside


@pytest.fixture(scope="module")
def lsp_options() -> SessionOptions:
    return SessionOptions(client="visual-studio-code", wait_checked=60)


@pytest.fixture(scope="module")
def lsp_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return layout(tmp_path_factory.mktemp("targets"))[0]


def inside(editor: Editor, uri: str) -> bool:
    return is_inside(to_fs_path(uri) or "", editor.root)


async def definition_at(editor: Editor, rel: str, line: int, character: int) -> list[lsp.Location]:
    editor.open(rel)
    found = await editor.client.text_document_definition_async(lsp.DefinitionParams(
        text_document=lsp.TextDocumentIdentifier(uri=editor.uri(rel)), position=lsp.Position(line, character)))
    if found is None:
        return []
    return [found] if isinstance(found, lsp.Location) else list(found)  # type: ignore[arg-type]


async def links_of(editor: Editor, rel: str) -> list[str]:
    editor.open(rel)
    links = await editor.client.text_document_document_link_async(lsp.DocumentLinkParams(
        text_document=lsp.TextDocumentIdentifier(uri=editor.uri(rel))))
    return [link.target or "" for link in links or []]


async def hover_at(editor: Editor, rel: str, line: int, character: int) -> str:
    found = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=editor.uri(rel)), position=lsp.Position(line, character)))
    if found is None:
        return ""
    contents = found.contents
    return contents.value if isinstance(contents, lsp.MarkupContent) else str(contents)


@pytest.mark.parametrize("name", ["up", "abs", "link"])
async def test_an_instructions_file_outside_the_root_is_never_offered(editor: Editor, name: str) -> None:
    assert await definition_at(editor, f"agents/{name}.agent.yaml", 1, 22) == []
    assert await links_of(editor, f"agents/{name}.agent.yaml") == []
    assert SECRET not in await hover_at(editor, f"agents/{name}.agent.yaml", 1, 22)


async def test_an_instructions_file_inside_the_root_is_still_offered(editor: Editor) -> None:
    [location] = await definition_at(editor, "agents/ok.agent.yaml", 1, 22)
    assert location.uri == editor.uri("templates/ok.j2")
    assert await links_of(editor, "agents/ok.agent.yaml") == [editor.uri("templates/ok.j2")]


async def test_includes_and_host_templates_outside_the_root_are_never_offered(editor: Editor) -> None:
    assert await definition_at(editor, "templates/main.j2", 0, 15) == []
    [inside_link] = await links_of(editor, "templates/main.j2")
    assert inside_link == editor.uri("templates/ok.j2")
    assert await definition_at(editor, "oscova.toml", 4, 15) == []
    assert all(inside(editor, target) for target in await links_of(editor, "oscova.toml"))
