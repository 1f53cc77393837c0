"""Which files a workspace holds: roots, never-scanned folders, `[host] exclude`, nested workspaces."""

from __future__ import annotations

from pathlib import Path

from oscova_lsp.analysis.disk import find_root
from oscova_lsp.analysis.engine import Analysis, analysis_for


def names(analysis: Analysis) -> set[str]:
    return {str(Path(p).relative_to(analysis.root)) for p in analysis.workspace.files}


def test_never_scanned_folders_exclude_and_nested_workspaces(tmp_path: Path) -> None:
    (tmp_path / "oscova.toml").write_text('[host]\nexclude = ["build"]\n')
    for folder in (".git", "node_modules", ".venv", "venv", "__pycache__", ".oscova", "build", "agents",
                   "nested"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.agent.yaml").write_text("id: [broken\n")
    (tmp_path / "nested" / "oscova.toml").write_text("")
    analysis = Analysis(str(tmp_path))
    analysis.load(jobs=1)
    assert names(analysis) == {"oscova.toml", "agents/a.agent.yaml"}


def test_root_is_the_nearest_folder_with_host_configuration(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.oscova.host]\nuser_id = "u"\n')
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "a.agent.yaml").write_text("id: a\nmemory: true\n")
    assert find_root(str(tmp_path / "deep" / "er" / "a.agent.yaml")) == str(tmp_path)
    analysis = analysis_for(str(tmp_path / "deep" / "er"))
    analysis.load(jobs=1)
    assert analysis.workspace.host.host.user_id == "u"


def test_a_pyproject_without_tool_oscova_is_not_a_root(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (tmp_path / "a.agent.yaml").write_text("id: a\n")
    assert find_root(str(tmp_path / "a.agent.yaml")) is None
    analysis = analysis_for(str(tmp_path))
    analysis.load(jobs=1)
    assert names(analysis) == set()  # not a workspace: nothing is read
    assert analysis.diagnostics(str(tmp_path / "a.agent.yaml")) == []
