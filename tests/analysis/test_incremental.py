"""A change re-checks exactly the changed file and its dependents, without re-reading the workspace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from oscova_lsp.analysis import workspace as workspace_module
from oscova_lsp.analysis.engine import Analysis

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Analysis, list[str]]:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns("broken"))
    analysis = Analysis(str(root))
    analysis.load(jobs=1)
    parsed: list[str] = []
    real_parse = workspace_module.parse_file

    def counting_parse(path: str, *args: object) -> object:
        parsed.append(path)
        return real_parse(path, *args)

    def no_reads(path: str) -> object:
        raise AssertionError(f"the workspace was re-read: {path}")

    monkeypatch.setattr(workspace_module, "parse_file", counting_parse)
    monkeypatch.setattr(workspace_module, "read_text", no_reads)
    return root, analysis, parsed


def rel(root: Path, paths: set[str]) -> set[str]:
    return {str(Path(p).relative_to(root)) for p in paths}


def test_editing_a_template_rechecks_it_and_what_includes_it(example) -> None:
    root, analysis, parsed = example
    style = root / "templates/partials/style.j2"
    affected = analysis.update(str(style), "Keep a {{ mood }} tone.")
    assert parsed == [str(style)]
    assert rel(root, affected) == {
        "templates/partials/style.j2", "templates/partials/persona.j2", "agents/writer.agent.yaml",
    }
    assert [d.code for d in analysis.diagnostics(str(style))] == ["OSC101"]


def test_flipping_exposed_as_tool_rechecks_the_callers(example) -> None:
    root, analysis, parsed = example
    writer = root / "agents/writer.agent.yaml"
    text = writer.read_text().replace("exposed_as_tool: true", "exposed_as_tool: false")
    affected = analysis.update(str(writer), text)
    assert parsed == [str(writer)]
    assert rel(root, affected) == {
        "agents/writer.agent.yaml", "agents/concierge.agent.yaml", "agents/release-notes.agent.yaml",
        "templates/partials/persona.j2", "templates/partials/style.j2",
    }
    for caller in ("concierge", "release-notes"):
        codes = [d.code for d in analysis.diagnostics(str(root / f"agents/{caller}.agent.yaml"))]
        assert codes == ["OSC021"]


def test_flipping_shared_rechecks_the_agents_templates(example) -> None:
    root, analysis, _ = example
    lookup = root / "agents/ticket-lookup.agent.yaml"
    affected = analysis.update(str(lookup), lookup.read_text().replace("shared: true", "shared: false"))
    assert "templates/ticket_lookup.j2" in rel(root, affected)
    codes = [d.code for d in analysis.diagnostics(str(root / "templates/ticket_lookup.j2"))]
    assert codes == ["OSC103"]


def test_editing_the_host_configuration_rechecks_everything(example) -> None:
    root, analysis, _ = example
    host = root / "oscova.toml"
    affected = analysis.update(str(host), host.read_text().replace('team = "Platform Support"\n', ""))
    assert affected == set(analysis.workspace.files)
    persona = [d.code for d in analysis.diagnostics(str(root / "templates/partials/persona.j2"))]
    assert persona == ["OSC101"]


def test_deleting_and_recreating_a_definition(example) -> None:
    root, analysis, _ = example
    summarizer = root / "agents/summarizer.agent.yaml"
    text = summarizer.read_text()
    affected = analysis.update(str(summarizer), None)
    assert {"agents/researcher.agent.yaml", "agents/release-notes.agent.yaml"} <= rel(root, affected)
    assert [d.code for d in analysis.diagnostics(str(root / "agents/researcher.agent.yaml"))] == ["OSC020"]
    analysis.update(str(summarizer), text)
    assert analysis.diagnostics(str(root / "agents/researcher.agent.yaml")) == []


def test_unrelated_files_are_not_rechecked(example) -> None:
    root, analysis, _ = example
    memory = root / "templates/memory.j2"
    affected = analysis.update(str(memory), memory.read_text() + "\nMore.\n")
    assert rel(root, affected) == {"templates/memory.j2"}


def test_an_edit_other_files_cannot_see_rechecks_only_that_file(example) -> None:
    root, analysis, _ = example
    writer = root / "agents/writer.agent.yaml"
    text = writer.read_text().replace("Write short, plain replies.", "Write short replies, {{ nobody }}.")
    assert rel(root, analysis.update(str(writer), text)) == {"agents/writer.agent.yaml"}
    assert [d.code for d in analysis.diagnostics(str(writer))] == ["OSC101"]


def test_moving_the_id_line_rechecks_the_files_whose_fixes_point_there(example) -> None:
    root, analysis, _ = example
    writer = root / "agents/writer.agent.yaml"
    affected = analysis.update(str(writer), "# a comment moves every line down\n" + writer.read_text())
    assert rel(root, affected) == {
        "agents/writer.agent.yaml", "agents/concierge.agent.yaml", "agents/release-notes.agent.yaml",
    }
