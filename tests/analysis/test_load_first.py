"""The opened files first: `Analysis.load_first` reads only what the wanted files' diagnostics depend on, and
what it says of them is what the whole workspace says (every file of the examples, each wanted alone; files
of generated workspaces, as on disk and with edited texts)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from oscova_lsp.analysis.engine import Analysis

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from workspace_gen import generate  # noqa: E402

EXAMPLES = ROOT / "examples"


def whole(root: Path, documents: dict[str, str] | None = None) -> dict[str, list]:
    analysis = Analysis(str(root))
    analysis.load(jobs=1, cache=False)
    for path, text in (documents or {}).items():
        analysis.update(path, text)
    return {path: analysis.diagnostics(path) for path in analysis.workspace.files}


def first(root: Path, wanted: list[str], documents: dict[str, str] | None = None) -> tuple[Analysis, set[str]]:
    analysis = Analysis(str(root))
    return analysis, analysis.load_first(wanted, documents, cache=False)


@pytest.mark.parametrize(("workspace", "files"), [(".", 10), ("broken", 10), ("broken/lint-only", 2)])
def test_each_file_alone_gets_the_whole_workspaces_diagnostics(tmp_path: Path, workspace: str, files: int):
    shutil.copytree(EXAMPLES, tmp_path / "ws")
    root = tmp_path / "ws" / workspace
    settled = whole(root)
    assert len(settled) >= files
    for path, expected in settled.items():
        analysis, final = first(root, [path])
        assert final == {path}
        assert analysis.diagnostics(path) == expected, path


def test_a_generated_workspace_reads_a_small_part_and_agrees(tmp_path: Path):
    root = generate(tmp_path / "gen", 300)
    settled = whole(root)
    opened = [str(root / "templates/agent_5.j2"), str(root / "agents/agent_5.agent.yaml"),
              str(root / "templates/partials/persona_1.j2"), str(root / "templates/agent_97.j2"),
              str(root / "templates/tickets.j2")]
    host_file = str(root / "oscova.toml")  # every definition read: the host configuration may name any
    host_analysis, _ = first(root, [host_file])
    assert host_analysis.diagnostics(host_file) == settled[host_file]
    analysis, final = first(root, opened)
    assert final == set(opened)
    for path in opened:
        assert analysis.diagnostics(path) == settled[path], path
    templates = [p for p in analysis.workspace.files if p.endswith(".j2")]
    assert len(templates) < 120  # two partials, the templates including them and the opened ones: not all 300
    assert sum(1 for p in settled if p.endswith(".j2")) > 290
    # For templates alone: the definitions naming a template read (their uses), not all 300; a definition reads
    # every agent it reaches through `agent_tools` (here a random graph reaching most of them).
    analysis, _ = first(root, [p for p in opened if p.endswith(".j2")])
    assert sum(1 for p in analysis.workspace.files if p.endswith(".agent.yaml")) < 120


def test_an_open_documents_text_is_read_instead_of_the_files(tmp_path: Path):
    root = generate(tmp_path / "gen", 120)
    # A definition naming the partial in a YAML escape (its file name is not in its text): a use all the same.
    (root / "agents/escaped.agent.yaml").write_text(
        'id: escaped\ninstructions_file: "../templates/partials/persona_\\x30.j2"\ncontext_providers: [vision]\n')
    partial = str(root / "templates/partials/persona_0.j2")
    agent = str(root / "agents/agent_3.agent.yaml")
    template = str(root / "templates/agent_4.j2")
    documents = {
        # the partial now sets a name its includers use; the agent renders another template
        partial: "{% set team = 'x' %}Persona {{ agent_name }} {{ unheard_of }}.\n",
        agent: Path(agent).read_text().replace("agent_3.j2", "agent_4.j2"),
        template: "{% include 'templates/partials/persona_0.j2' %}{{ team }} {{ nope }}\n",
    }
    settled = whole(root, documents)
    analysis, final = first(root, list(documents), documents)
    assert final == set(documents)
    for path in documents:
        assert analysis.diagnostics(path) == settled[path], path
