"""Templates nobody on the team wrote: each fixture is a few lines of a public repository's template (named in
its comment), made an agent's instructions, where the checker once reported what Jinja does not do."""

from __future__ import annotations

from pathlib import Path

from .support import make_workspace

AGENT = "id: a\ninstructions_file: ../templates/t.j2\n"


def check(tmp_path: Path, template: str) -> tuple[list[tuple[str, object]], list[object]]:
    """The template's diagnostics as (code, range), and the ranges marked in it."""
    ws = make_workspace(tmp_path, {"agents/a.agent.yaml": AGENT, "templates/t.j2": template})
    found = [(d.code, d.range) for d in ws.diagnostics("templates/t.j2")]
    return found, list(ws.marked("templates/t.j2"))


# --------------------------------------------------------------------------------------------------
# Positions after a character outside the Basic Multilingual Plane (two UTF-16 code units)


def test_a_variable_after_an_emoji_is_reported_on_its_name(tmp_path: Path) -> None:
    # bmad-code-org/BMAD-METHOD, src/bmm/workflows/4-implementation/dev-story/checklist.md
    found, marked = check(tmp_path, "📊 **Completion Score:** {{⟨completed_items⟩}}/{{⟨total_items⟩}} items passed\n")
    assert found == [("OSC101", marked[0]), ("OSC101", marked[1])]


def test_a_syntax_error_after_an_emoji_is_reported_on_its_construct(tmp_path: Path) -> None:
    # bmad-code-org/BMAD-METHOD, src/bmm/workflows/4-implementation/epic-execute/steps/step-05-summary.md
    found, marked = check(tmp_path, "📈 | Statements | ⟨{%} | n |⟩\n")
    assert found == [("OSC100", marked[0])]


def test_a_missing_include_after_an_emoji_is_reported_on_its_path(tmp_path: Path) -> None:
    found, marked = check(tmp_path, "🚀 {% include ⟨'parts/missing.j2'⟩ %}\n")
    assert [code for code, _ in found] == ["OSC040"]
    assert found[0][1] == marked[0]


def test_a_variable_after_an_emoji_in_inline_instructions_is_reported_on_its_name(tmp_path: Path) -> None:
    # oxy-hq/oxy, examples/agents/*.agent.yml: `system_instructions: |` blocks, here with an emoji before a value
    ws = make_workspace(tmp_path, {"agents/a.agent.yaml": "id: a\ninstructions: |\n  📊 Today: {{ ⟨date⟩ }}\n"})
    assert [(d.code, d.range) for d in ws.diagnostics("agents/a.agent.yaml")] == [
        ("OSC101", ws.marked("agents/a.agent.yaml")[0])]
