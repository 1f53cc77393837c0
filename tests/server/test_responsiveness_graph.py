"""Responsiveness with an include clique: 30 templates that all include each other, the server as a
subprocess (Neovim 0.7's capabilities, pushed diagnostics). Hover answers while the clique loads, an edit's
diagnostics arrive, and hover and completion answer, right, while the clique is being edited. (On main the
clique's uses were enumerated as paths: 9 templates blocked hover for 49 s.) How fast (p95 < 50 ms) is
measured by `benchmarks/responsiveness_bench.py --scenario clique`: on a shared machine a test's timing is
luck; here a request that does not come back within ANSWER_SECONDS fails."""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.uris import from_fs_path

from tests.support.include_graph import clique, template_text, write_include_graph

from .conftest import Editor, SessionOptions

pytestmark = pytest.mark.asyncio(loop_scope="module")

N = 30
EDITED = [1, 7, 13, 19, 25]  # the templates the test types into
USER_NAME = lsp.Position(line=0, character=30)  # inside `{{ user_name }}` (see `template_text`)
ANSWER_SECONDS = 30


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1]


class Clique:
    def __init__(self, editor: Editor) -> None:
        self.editor = editor
        self.client = editor.client
        self.root = editor.root
        self.versions: dict[str, int] = {}
        self.hover_during_load: float | None = None

    @property
    def published(self) -> dict[str, tuple[int | None, list[lsp.Diagnostic]]]:
        """Each template's last published diagnostics, with the version they were for."""
        return {uri: (version, list(self.client.diagnostics.get(uri, [])))
                for uri, version in self.editor.published_versions.items()}

    def uri(self, node: int) -> str:
        return from_fs_path(str(self.root / "templates" / f"t{node:03d}.j2"))

    def open(self, node: int) -> None:
        uri = self.uri(node)
        self.versions[uri] = 1
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
            uri=uri, language_id="jinja", version=1, text=(self.root / "templates" / f"t{node:03d}.j2").read_text())))

    def replace(self, node: int, text: str) -> int:
        uri = self.uri(node)
        self.versions[uri] += 1
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))
        return self.versions[uri]

    async def timed(self, request: str, node: int, position: lsp.Position) -> tuple[float, object]:
        ident = lsp.TextDocumentIdentifier(uri=self.uri(node))
        started = time.perf_counter()
        if request == "hover":
            sent = self.client.text_document_hover_async(lsp.HoverParams(text_document=ident, position=position))
        else:
            sent = self.client.text_document_completion_async(
                lsp.CompletionParams(text_document=ident, position=position))
        result = await asyncio.wait_for(sent, ANSWER_SECONDS)  # a stalled server fails the test, not hangs it
        return time.perf_counter() - started, result

    async def wait_published(self, node: int, predicate, timeout: float = 20) -> list[lsp.Diagnostic]:  # noqa: ANN001
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.published.get(self.uri(node))
            if found is not None and predicate(found[0], found[1]):
                return found[1]
            await asyncio.sleep(0.02)
        raise AssertionError(f"t{node:03d}.j2: the expected diagnostics never arrived; last {self.published.get(self.uri(node))}")


@pytest.fixture(scope="module")
def lsp_options() -> SessionOptions:
    return SessionOptions(client="neovim@v0.7.0", wait_checked=None)  # asked at once, while the clique loads


@pytest.fixture(scope="module")
def lsp_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("clique") / "ws"
    write_include_graph(root, clique(N))
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def state(editor: Editor) -> Clique:
    clique_state = Clique(editor)
    # At once, while the background check loads and checks the clique.
    clique_state.open(EDITED[0])
    try:
        clique_state.hover_during_load, _ = await clique_state.timed("hover", EDITED[0], USER_NAME)
    except TimeoutError:
        clique_state.hover_during_load = None
    return clique_state


async def test_hover_answers_while_the_clique_loads_and_every_template_is_checked(state: Clique):
    # Answered within ANSWER_SECONDS while the clique loaded (main: 49 s); how soon (budget 10 s) is measured by
    # benchmarks/responsiveness_bench.py `clique`.
    assert state.hover_during_load is not None
    for node in range(N):  # the background check reaches every template: its unbound variable, the cycle
        found = await state.wait_published(node, lambda _v, d: any(x.code == "OSC101" for x in d))
        assert [x.message.split("`")[1] for x in found if x.code == "OSC101"] == [f"missing{node % 3}"]
    cycle = [x for x in await state.wait_published(0, lambda _v, d: bool(d)) if x.code == "OSC040"]
    assert len(cycle) == 1 and "closes a cycle" in cycle[0].message


async def test_an_edit_to_a_clique_template_gets_its_diagnostics(state: Clique):
    node = EDITED[1]
    state.open(node)
    version = state.replace(node, template_text(node, [j for j in range(N) if j != node], " {{ fresh }}"))
    found = await state.wait_published(node, lambda v, d: v == version, timeout=20)
    assert any(x.code == "OSC101" and "`fresh`" in x.message for x in found)
    # The templates it includes are re-checked too (their uses changed with the includer's names).
    await state.wait_published((node + 1) % N, lambda _v, d: any(x.code == "OSC101" for x in d))


async def test_hover_and_completion_answer_while_the_clique_is_edited(state: Clique):
    for node in EDITED:
        if state.uri(node) not in state.versions:
            state.open(node)
    typing = True
    last: dict[int, int] = {}

    async def type_into_the_clique() -> None:
        k = 0
        while typing:
            node = EDITED[k % len(EDITED)]
            extra = f" {{{{ typed{k} }}}}" if k % 2 else ""
            last[node] = state.replace(node, template_text(node, [j for j in range(N) if j != node], extra))
            k += 1
            await asyncio.sleep(0.1)

    editor = asyncio.create_task(type_into_the_clique())
    hovers: list[float] = []
    completions: list[float] = []
    try:
        await asyncio.sleep(0.3)
        for k in range(150):  # about 4 s of requests at the client's pace
            node = EDITED[k % len(EDITED)]
            elapsed, result = await state.timed("hover", node, USER_NAME)
            assert isinstance(result, lsp.Hover) and "user_name" in str(result.contents)
            hovers.append(elapsed)
            elapsed, result = await state.timed("completion", node, USER_NAME)
            assert isinstance(result, lsp.CompletionList) and any(i.label == "user_name" for i in result.items)
            completions.append(elapsed)
    finally:
        typing = False
        await editor
    # The server kept up: the last edit of each template got its diagnostics.
    for node, version in last.items():
        await state.wait_published(node, lambda v, _d, version=version: v == version)
    figures = (f"hover p50 {statistics.median(hovers) * 1000:.1f} ms p95 {p95(hovers) * 1000:.1f} ms; "
               f"completion p50 {statistics.median(completions) * 1000:.1f} ms p95 {p95(completions) * 1000:.1f} ms")
    print(figures)
