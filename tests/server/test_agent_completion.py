"""`agent_tools` completion reads an index of the agent ids kept per workspace state. Whatever
the edits (an agent exposed or hidden, renamed, its id changed, a duplicate id, a definition deleted), the
items are those a listing of the workspace as it is now gives: narrowed to the word typed, exposed agents
first, capped at `LIMIT` and marked incomplete past it."""

from __future__ import annotations

import random
from pathlib import Path

from oscova_lsp.analysis.engine import Analysis
from oscova_lsp.analysis.files import DefinitionFile
from oscova_lsp.analysis.text import LineIndex
from oscova_lsp.ide import completion

from tests.support.host_files import MODELS

COUNT = 80  # more than `completion.LIMIT`, so narrowing and capping apply


def _definition(agent_id: str, exposed: bool, name: str | None = None) -> str:
    return (f"id: {agent_id}\n" + (f"name: {name}\n" if name else "")
            + f"exposed_as_tool: {'true' if exposed else 'false'}\n")


def _expected(analysis: Analysis, own: str, typed: str) -> tuple[list[tuple[str, str]], bool]:
    """What completion must offer, from the definitions as they are now (no index)."""
    rows = []
    for parsed in analysis.workspace.files.values():
        if not isinstance(parsed, DefinitionFile) or not parsed.raw_id or parsed.raw_id == own:
            continue
        if analysis.workspace.definition_by_id(parsed.raw_id) is not parsed:
            continue  # a duplicate id: the first definition by path stands for it
        definition = parsed.definition
        exposed = bool(definition and definition.exposed_as_tool)
        detail = (definition.display_name if definition else parsed.raw_id) + ("" if exposed else " (not exposed_as_tool)")
        rows.append((parsed.raw_id, detail, ("0" if exposed else "1") + parsed.raw_id))
    if len(rows) <= completion.LIMIT:
        return sorted((i, d) for i, d, _ in rows), False

    def letters_in_order(label: str) -> bool:
        rest = iter(label)
        return all(ch in rest for ch in typed)

    kept = [r for r in rows if letters_in_order(r[0].lower())]
    kept.sort(key=lambda r: (not r[0].lower().startswith(typed), r[2]))
    return [(i, d) for i, d, _ in kept[:completion.LIMIT]], True


def test_agent_ids_follow_every_edit(tmp_path: Path) -> None:
    rng = random.Random(10)
    (tmp_path / "oscova.toml").write_text(MODELS)
    for n in range(COUNT):
        (tmp_path / f"a{n}.agent.yaml").write_text(_definition(f"agent-{n}", n % 3 != 0))
    analysis = Analysis(str(tmp_path))
    analysis.load(jobs=1)
    caller = str(tmp_path / "caller.agent.yaml")
    for step in range(80):
        n = rng.randrange(COUNT)
        path = str(tmp_path / f"a{n}.agent.yaml")
        action = rng.choice(["expose", "rename", "new id", "duplicate", "delete", "restore"])
        if action == "delete":
            analysis.update(path, None)
        else:
            agent_id = {"new id": f"renamed-{n}", "duplicate": f"agent-{rng.randrange(COUNT)}"}.get(action, f"agent-{n}")
            analysis.update(path, _definition(agent_id, rng.random() < 0.5, f"Agent {step}" if action == "rename" else None))
        typed = rng.choice(["", "a", "agent-1", "ren", "ag7", "zz"])
        own = f"agent-{rng.randrange(COUNT)}"
        text = f"id: {own}\nagent_tools: [{typed}"
        analysis.update(caller, text)
        parsed = analysis.workspace.files[caller]
        found = completion.complete(analysis.workspace, parsed, LineIndex(text).position(len(text)))
        items, incomplete = _expected(analysis, own, typed)
        got = [(item.label, item.detail) for item in found.items]
        assert (sorted(got) if not incomplete else got, found.incomplete) == (items, incomplete), (step, action, typed)
        assert all(item.replace is not None and item.replace.end.character == len(text.splitlines()[-1])
                   for item in found.items)
