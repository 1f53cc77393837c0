"""A workspace is what `oscova.toml` (or `[tool.oscova]`) says it is: other projects' `*.agent.yaml` and
`.j2` files get no diagnostic, and a template nothing renders is not checked as agent instructions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.foreign_files import ANSIBLE, BMAD, OXY
from tests.support.host_files import MODELS

from .support import make_workspace
from .test_examples import run_cli


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("files", [BMAD, ANSIBLE, OXY], ids=["bmad", "ansible", "oxy"])
def test_check_outside_any_workspace_says_there_is_nothing_to_check(tmp_path: Path, files: dict[str, str]) -> None:
    root = write(tmp_path / "project", files)
    result = run_cli("check", ".", cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert "not an oscova workspace" in result.stderr
    assert "an oscova.toml makes a folder a workspace" in result.stderr
    assert "Traceback" not in result.stderr
    # A file given by path: the same sentence.
    one = run_cli("check", next(iter(files)), cwd=root)
    assert one.returncode == 2 and one.stdout == "" and "not an oscova workspace" in one.stderr


def test_check_of_a_folder_holding_workspaces_checks_only_them(tmp_path: Path) -> None:
    root = write(tmp_path / "mono", {**BMAD, "team/oscova.toml": MODELS, "team/agents/a.agent.yaml": "id: a\n"})
    result = run_cli("check", ".", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "bmad" not in result.stdout
    assert result.stdout == "All checks passed (2 files of 1 workspace checked).\n"


def test_a_template_nothing_renders_is_not_checked_as_agent_instructions(tmp_path: Path) -> None:
    """A vendored Ansible role inside a workspace: each template gets OSC107's hint, nothing else."""
    ws = make_workspace(tmp_path, {"agents/a.agent.yaml": "id: a\ninstructions: Hello.\n", **ANSIBLE})
    template = "roles/nginx/templates/nginx.conf.j2"
    assert ws.codes(template) == ["OSC107"]
    assert ws.codes("roles/nginx/templates/vhost.j2") == ["OSC107"]
    assert "renders this template, so only its syntax is checked" in ws.diagnostics(template)[0].message


def test_a_template_nothing_renders_still_reports_its_syntax_errors(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"templates/orphan.j2": "Hello {{ name }\n"})
    assert sorted(ws.codes("templates/orphan.j2")) == ["OSC100", "OSC107"]
