"""Diagnostics that survive typing: files typed one keystroke at a time through the language server (a
subprocess, driven by pytest-lsp with VS Code's pull and Neovim's push diagnostics). After every keystroke the
diagnostics that do not depend on the typed line are still there, and a syntax error sits on the typed line."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from .conftest import Editor

pytestmark = pytest.mark.asyncio(loop_scope="module")

Seen = list[tuple[str, int, str]]


async def _type_line(editor: Editor, rel: str, head: str, line: str) -> list[Seen]:
    """Types `line` after `head`, one character per change; the diagnostics after each keystroke."""
    uri = editor.uri(rel)
    row = head.count("\n")
    states: list[Seen] = []
    for n, ch in enumerate(line):
        version = editor.edit(rel, (row, n), (row, n), ch)
        if editor.mode == "push":
            await editor.wait_for(lambda v=version: editor.published_versions.get(uri) == v)  # type: ignore[misc]
        found = await editor.current(rel)
        states.append(_seen(found))
    return states


def _seen(found: list[lsp.Diagnostic]) -> Seen:
    return sorted((str(d.code), d.range.start.line, d.message) for d in found)


async def _open(editor: Editor, rel: str, text: str) -> Seen:
    uri = editor.open(rel, text)
    if editor.mode == "push":
        await editor.wait_for(lambda: editor.published_versions.get(uri) == 1)
    return _seen(await editor.current(rel))


async def test_typing_a_template_line_keeps_the_other_lines_diagnostics(editor: Editor):
    rel = "templates/later.j2"  # the instructions of agents/watched.agent.yaml, not on disk yet
    head = "Hello {{ region_name }}.\nContext: {{ user_context }}\n"
    baseline = await _open(editor, rel, head)
    assert {(code, row) for code, row, _ in baseline} >= {("OSC101", 0), ("OSC103", 1)}
    line = "Sign as {{ agent_name | upper }} for {{ company }}."
    states = await _type_line(editor, rel, head, line)
    broken = 0
    for typed, state in zip(range(1, len(line) + 1), states, strict=True):
        assert [d for d in state if d[1] != 2] == baseline, line[:typed]
        assert all(row == 2 for code, row, _ in state if code == "OSC100"), line[:typed]
        broken += any(code == "OSC100" for code, _, _ in state)
    assert broken >= 20  # most intermediate states do not parse: `{{ agent_`, `{{ agent_name |`, ...
    assert [code for code, row, _ in states[-1] if row == 2] == ["OSC101"]  # `company`, once typed
    editor.close(rel)


async def test_typing_an_agent_tools_list_never_reports_the_agents_it_names(editor: Editor):
    rel = "agents/typist.agent.yaml"
    head = "id: typist\nmodel: nomodel\n"
    baseline = await _open(editor, rel, head)
    assert [(code, row) for code, row, _ in baseline] == [("OSC041", 1)]
    for line in ("agent_tools: [research, caller]", "agent_tools: {research: 1}"):
        states = await _type_line(editor, rel, head, line)
        for typed, state in zip(range(1, len(line) + 1), states, strict=True):
            assert [d for d in state if d[1] != 2] == baseline, line[:typed]
            assert all(row == 2 for code, row, _ in state if code == "OSC001"), line[:typed]
            named = [message for code, _, message in state if code == "OSC020"]
            assert not [m for m in named if "`research`" in m or "`caller`" in m], line[:typed]
        editor.edit(rel, (2, 0), (2, len(line)), "")
    editor.close(rel)


async def test_a_definition_mid_edit_keeps_its_dependents(editor: Editor):
    """`minion` is typed a new line; `boss` and `caller`, which name it, never flip to OSC020."""
    boss, caller, minion = "agents/boss.agent.yaml", "agents/caller.agent.yaml", "agents/minion.agent.yaml"
    head = "id: minion\ndescription: Does the legwork.\n"
    if editor.mode == "pull":
        editor.open(boss)
        editor.open(caller)
    before = {rel: _seen(await editor.current(rel)) for rel in (boss, caller)}
    assert [code for code, _, _ in before[boss]] == ["OSC021"]
    await _open(editor, minion, head)
    line = 'model: "default"'
    uri = editor.uri(minion)
    for n, ch in enumerate(line):
        version = editor.edit(minion, (2, n), (2, n), ch)
        if editor.mode == "push":
            await editor.wait_for(lambda v=version: editor.published_versions.get(uri) == v)  # type: ignore[misc]
        own = _seen(await editor.current(minion))
        assert all(row == 2 for code, row, _ in own if code == "OSC001"), line[:n + 1]
        for rel in (boss, caller):
            assert _seen(await editor.current(rel)) == before[rel], line[:n + 1]
    editor.close(minion)
    if editor.mode == "pull":
        editor.close(boss)
        editor.close(caller)
