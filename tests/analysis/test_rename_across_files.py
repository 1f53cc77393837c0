"""Renaming an agent id edits every file that names it: definitions, `agent_tools`, and the evaluations (the
agent they evaluate, and tool assertions naming it where another agent calls it as a tool)."""

from __future__ import annotations

from pathlib import Path

from oscova_lsp.analysis.diagnostics import Fix
from oscova_lsp.analysis.text import Position
from oscova_lsp.ide import navigation

from .support import apply_fix, make_workspace

FILES = {
    "agents/minion.agent.yaml": "id: minion\nexposed_as_tool: true\ninstructions: Do the small job.\n",
    "agents/boss.agent.yaml": "id: boss\nagent_tools: [minion]\ninstructions: Delegate.\n",
    "evals/minion.eval.yaml": "agent: minion\ncases:\n  - name: one\n    input: hi\n    expect:\n      - status: completed\n",
    "evals/boss.eval.yaml": """\
agent: boss
cases:
  - name: delegates
    input: do it
    expect:
      - tool_called: {name: minion}
      - tools: {mode: in_order, calls: [minion]}
  - name: alone
    input: say hi
    expect:
      - no_tool: [minion]
""",
}


def test_rename_edits_the_evaluations_too(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, FILES)
    assert ws.codes("evals/minion.eval.yaml") == [] and ws.codes("evals/boss.eval.yaml") == []
    parsed = ws.analysis.workspace.files[ws.path("agents/minion.agent.yaml")]
    edits = navigation.rename(ws.analysis.workspace, parsed, Position(0, 5), "helper")
    where = sorted((Path(e.path).name, e.range.start.line) for e in edits)
    assert where == [("boss.agent.yaml", 1), ("boss.eval.yaml", 5), ("boss.eval.yaml", 6), ("boss.eval.yaml", 10),
                     ("minion.agent.yaml", 0), ("minion.eval.yaml", 0)]
    apply_fix(ws, Fix("rename", tuple(edits)))
    assert (tmp_path / "evals/minion.eval.yaml").read_text().startswith("agent: helper\n")
    assert "tool_called: {name: helper}" in (tmp_path / "evals/boss.eval.yaml").read_text()
    found = [d for d in ws.diagnostics() if d.severity.label in ("error", "warning")]
    assert found == [], [(d.path, d.code, d.message) for d in found]
