"""Seed *Context Providers*: "The agent editor intentionally does not offer current_time." """

from __future__ import annotations

from pathlib import Path

from oscova_lsp.analysis.engine import Analysis
from oscova_lsp.analysis.text import LineIndex
from oscova_lsp.ide import completion

from tests.support.host_files import MODELS


def labels(tmp_path: Path, rel: str, marked: str) -> set[str]:
    offset = marked.index("‸")
    text = marked.replace("‸", "")
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text(text)
    if not (tmp_path / "oscova.toml").exists():
        (tmp_path / "oscova.toml").write_text(MODELS)
    analysis = Analysis(str(tmp_path))
    analysis.load(jobs=1)
    ws = analysis.workspace
    parsed = ws.files[str(tmp_path / rel)]
    return {item.label for item in completion.complete(ws, parsed, LineIndex(text).position(offset)).items}


def test_current_time_is_not_offered_in_standing_instructions(tmp_path: Path) -> None:
    """"The agent editor intentionally does not offer current_time. A minute-changing value in standing
    instructions destabilizes local-model prompt-cache prefixes." — the other personal variables are offered."""
    offered = labels(tmp_path, "a.agent.yaml", "id: a\ninstructions: Hi {{ ‸ }}\n")
    assert {"current_date", "agent_name", "user_name"} <= offered
    assert "current_time" not in offered


def test_current_time_is_offered_where_a_custom_provider_binds_it(tmp_path: Path) -> None:
    """Only the standing-instruction binding is held back: a custom provider declaring `current_time` still
    gets it offered in its own template."""
    (tmp_path / "oscova.toml").write_text(
        '[providers.clock]\nclass = "clock:Clock"\ntemplate = "clock.j2"\nvariables = ["current_time"]\n')
    (tmp_path / "a.agent.yaml").write_text("id: a\ncontext_providers: [clock]\n")
    assert "current_time" in labels(tmp_path, "clock.j2", "Now {{ ‸ }}")
