"""The assembled instructions: each built-in provider's text is a block that ends with a newline, so the next one
starts after a blank line (merging joins with one newline, as the framework does) and never continues the last
line, or the last list item, of the block before it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.analysis.test_examples import run_cli

HOST = ('[host]\nuser_id = "me"\ntodo = true\n\n[models.default]\nkind = "offline"\nmodel = "offline"\n\n'
        '[providers.oncall]\nclass = "providers.oncall:OnCall"\ntemplate = "oncall.j2"\nvariables = ["engineer"]\n')
AGENT = """\
id: lead
instructions: You are Lead.
memory: true
todo: true
skills: [triage]
context_providers: [oncall]
"""
ONCALL = """\
from oscova_runtime import AIContextProvider


class OnCall(AIContextProvider):
    async def template_variables(self, context):
        return {"engineer": "Ada"}
"""
SKILL = "---\nname: triage\ndescription: Sorts requests.\n---\nSort them.\n"


def test_each_providers_block_ends_with_a_newline_and_the_next_starts_after_a_blank_line(tmp_path: Path) -> None:
    files = {"oscova.toml": HOST, "agents/lead.agent.yaml": AGENT, "oncall.j2": "On call: {{ engineer }}.", "providers/oncall.py": ONCALL,
             "skills/triage/SKILL.md": SKILL}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    shown = run_cli("preview", "lead", "--input", "hi", "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    preview = json.loads(shown.stdout)
    blocks = [(p["type"], p["instructions"]) for p in preview["providers"] if p.get("instructions")]
    assert [kind for kind, _ in blocks] == ["environment", "personal", "skills", "memory", "todo", "oncall"]
    assert [kind for kind, text in blocks if not text.endswith("\n")] == []
    instructions = preview["instructions"]
    assert instructions == "\n".join(text for _, text in blocks)
    assert "- none configured\n\nYou are Lead.\n\n" in instructions  # not a continuation of the list's last item
    assert "</agent_memory>\n\n" in instructions
