"""`oscova-lsp init`: a workspace that checks clean and whose run, agent test and evaluation pass on the offline
model, with no endpoint and no key; it never overwrites anything."""

from __future__ import annotations

import json
from pathlib import Path

from tests.analysis.test_examples import run_cli


def test_init_then_check_run_test_and_eval_on_no_endpoint(tmp_path: Path) -> None:
    made = run_cli("init", "demo", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    root = tmp_path / "demo"
    assert made.stdout == ""  # what init did is said on stderr
    assert "oscova.toml" in made.stderr and ".oscova/tests/assistant/hello.jsonl" in made.stderr
    check = run_cli("check", cwd=root)
    assert (check.returncode, check.stdout) == (0, "All checks passed (4 files of 1 workspace checked).\n"), check.stdout
    ran = run_cli("run", "assistant", "--input", "Hello", "--json", cwd=root)
    assert ran.returncode == 0, ran.stderr
    end = json.loads(ran.stdout.splitlines()[-1])
    assert end["kind"] == "completed" and end["text"].startswith("Hello! I am the assistant")
    tested = run_cli("test", cwd=root)
    assert tested.returncode == 0 and "1 case: 1 passed" in tested.stdout, tested.stdout + tested.stderr
    evaluated = run_cli("eval", cwd=root)
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    assert "2 of 2 case × model cells met their pass rate" in evaluated.stdout
    assert (root / ".gitignore").read_text() == ".oscova/*\n!.oscova/tests/\n"


def test_init_writes_nothing_where_any_of_its_files_exists(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents/assistant.agent.yaml").write_text("id: mine\n")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    refused = run_cli("init", cwd=tmp_path)
    assert refused.returncode == 2
    assert "already has agents/assistant.agent.yaml" in refused.stderr and "nothing was written" in refused.stderr
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_init_keeps_a_projects_own_gitignore(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("node_modules/\n")
    assert run_cli("init", cwd=tmp_path).returncode == 0
    assert (tmp_path / ".gitignore").read_text() == "node_modules/\n"


def test_init_inside_a_workspace_is_refused(tmp_path: Path) -> None:
    (tmp_path / "oscova.toml").write_text('[models.default]\nmodel = "m"\n')
    refused = run_cli("init", "sub", cwd=tmp_path)
    assert refused.returncode == 2 and "is inside the workspace" in refused.stderr
    assert not (tmp_path / "sub").exists()


def test_check_outside_a_workspace_points_at_init(tmp_path: Path) -> None:
    (tmp_path / "a.agent.yaml").write_text("id: a\n")
    done = run_cli("check", cwd=tmp_path)
    assert done.returncode == 2 and "`oscova-lsp init` writes one" in done.stderr
