"""Completion and hover in evaluation files (`*.eval.yaml`): keys, assertion keys, agent ids, the agent's
tools, model names, and what each assertion checks (`oscova_runtime.evaluation.ASSERTION_DOCS`).

Read from the line being typed and the keys above it (a file mid-edit does not parse), like definitions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import get_args

from oscova_runtime.catalogue import agent_tool_names
from oscova_runtime.evaluation import (
    ASSERTION_DOCS,
    EvalCase,
    Evaluation,
    RunOutcome,
    ToolSequence,
    ToolsMode,
)

from ..analysis.files import EvalFile
from ..analysis.text import Position, Range
from ..analysis.workspace import Workspace
from .model import CompletionItem, Hover, ItemKind

_KEY_RE = re.compile(r"^(\s*)(-\s+)?([A-Za-z_]*)$")
_VALUE_RE = re.compile(r"^(\s*)(?:-\s+)?([A-Za-z_]+):\s*(.*)$")
_ITEM_RE = re.compile(r"^(\s*)-\s+([\w.-]*)$")
_PARENT_RE = re.compile(r"^(\s*)(?:-\s+)?([A-Za-z_]+):")
_WORD_RE = re.compile(r"[\w.-]+")
_AGENT_RE = re.compile(r"^agent:\s*['\"]?([A-Za-z0-9][A-Za-z0-9_.-]*)", re.MULTILINE)


def _parent(parsed: EvalFile, line: int, indent: int) -> tuple[str, int] | None:
    """The nearest key above `line` written left of `indent`, and its column."""
    for n in range(line - 1, -1, -1):
        match = _PARENT_RE.match(parsed.lines.line_text(n))
        if match is not None and len(match.group(1)) < indent:
            return match.group(2), len(match.group(1))
    return None


def _keys(names: list[str], docs: dict[str, str], replace: Range) -> list[CompletionItem]:
    return [CompletionItem(name, ItemKind.PROPERTY, documentation=docs.get(name), insert_text=f"{name}: ",
                           replace=replace) for name in names]


def _field_docs(model: type[Evaluation] | type[EvalCase]) -> dict[str, str]:
    return {name: f.description or "" for name, f in model.model_fields.items()}


def _agent_tools(ws: Workspace, parsed: EvalFile) -> list[str]:
    """The tools of the agent the file names (read from the text: a file being typed seldom parses)."""
    named = _AGENT_RE.search(parsed.text)
    target = ws.definition_by_id(named.group(1)) if named is not None else None
    if target is None or target.definition is None:
        return []
    return agent_tool_names(target.definition, ws.host)


def _values(ws: Workspace, parsed: EvalFile, key: str, rest: str, replace: Range, top: bool) -> list[CompletionItem]:
    if key == "agent" and top:
        return [CompletionItem(a, ItemKind.AGENT, replace=replace) for a in sorted(ws.defs_by_id)]
    if key == "models" or key == "judge" and top:
        return [CompletionItem(m, ItemKind.MODEL, replace=replace) for m in ws.host.models]
    if key == "no_tool" or key == "tools" and re.search(r"calls:\s*\[[^\]]*$", rest) or \
            key == "tool_called" and re.search(r"name:\s*[\w.-]*$", rest) or key in ("calls", "name") and not top:
        return [CompletionItem(t, ItemKind.TOOL, replace=replace) for t in _agent_tools(ws, parsed)]
    if key == "status":
        return [CompletionItem(s, ItemKind.VALUE, replace=replace) for s in get_args(RunOutcome)]
    if key == "tools" and re.search(r"mode:\s*\w*$", rest) or key == "mode":
        return [CompletionItem(m, ItemKind.VALUE, replace=replace) for m in get_args(ToolsMode)]
    return []


MAX_COMPLETED_LINE = 2_000
"""The longest text before the cursor on its line that completion reads: a key or value being typed is never
longer, and the patterns below on a line of 210,000 characters would take minutes."""
_WORD_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _typed(before: str) -> int:
    """The length of the word being typed at the end of `before` (letters, digits, `_`, `.`, `-`)."""
    at = len(before)
    while at and (before[at - 1] in _WORD_CHARACTERS or before[at - 1].isalnum()):
        at -= 1
    return len(before) - at


def complete(ws: Workspace, parsed: EvalFile, pos: Position) -> list[CompletionItem]:
    lines = parsed.lines
    offset = lines.offset(pos)
    line_start = lines.line_start(pos.line)
    if offset - line_start > MAX_COMPLETED_LINE:
        return []
    before = parsed.text[line_start:offset]
    start = offset - _typed(before)
    replace = lines.range(start, offset)
    key = _KEY_RE.match(before)
    if key is not None:
        indent = len(key.group(1)) + len(key.group(2) or "")
        parent = _parent(parsed, pos.line, indent) if indent else None
        if parent is None:
            return _keys(list(Evaluation.model_fields), _field_docs(Evaluation), replace)
        if parent[0] == "expect":
            return _keys(list(ASSERTION_DOCS), ASSERTION_DOCS, replace) if key.group(2) else []
        if parent[0] in ("cases", "name", "input") or parent[0] in EvalCase.model_fields:
            return _keys(list(EvalCase.model_fields), _field_docs(EvalCase), replace)
        item = _ITEM_RE.match(before)
        return _values(ws, parsed, parent[0], "", replace, parent[1] == 0) if item else []
    value = _VALUE_RE.match(before)
    if value is not None:
        return _values(ws, parsed, value.group(2), value.group(3), replace, not value.group(1))
    return []


def hover(ws: Workspace, parsed: EvalFile, pos: Position, agent_text: Callable[[Workspace, str], str],
          tool_text: Callable[[Workspace, str], str]) -> Hover | None:
    """An assertion's or a key's meaning; an agent id or a tool, in the words of `hover.py` (passed in)."""
    text = parsed.lines.line_text(pos.line)
    for match in _WORD_RE.finditer(text):
        if match.start() <= pos.character <= match.end():
            break
    else:
        return None
    word = match.group(0)
    rng = Range(Position(pos.line, match.start()), Position(pos.line, match.end()))
    is_key = text[match.end():].startswith(":")
    docs = {**_field_docs(Evaluation), **_field_docs(EvalCase),
            **{k: f.description or "" for k, f in ToolSequence.model_fields.items()}}
    if is_key and word in ASSERTION_DOCS:
        return Hover(f"**{word}** (assertion)\n\n{ASSERTION_DOCS[word]}", rng)
    if is_key and word in docs:
        return Hover(f"**{word}**\n\n{docs[word]}", rng)
    if text.lstrip().startswith("agent:") and word in ws.defs_by_id:
        return Hover(agent_text(ws, word), rng)
    if not is_key and word in _agent_tools(ws, parsed):
        return Hover(tool_text(ws, word), rng)
    return None
