"""The `oscova-check` pre-commit hook of `.pre-commit-hooks.yaml`, run by pre-commit itself in a temporary git
repository, and `python -m oscova_lsp` (the Python linting ecosystem's conventions)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.support.host_files import MODELS

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd, check=True,
                   capture_output=True, timeout=60)


def pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("pre-commit", path=str(BIN))
    assert exe, "pre-commit is installed (the `test` extra)"
    # PIP_COMPILE=0: the hook's environment is installed without writing bytecode for its ~90 packages (a third
    # of the install's CPU); the hook runs the same from the sources.
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PRE_COMMIT_HOME": str(home),
           "NO_COLOR": "1", "PRE_COMMIT_COLOR": "never", "PIP_COMPILE": "0"}
    return subprocess.run([exe, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_hook_checks_the_workspaces_of_the_files(tmp_path: Path) -> None:
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "oscova-check" and hook["entry"].startswith("oscova-lsp check")
    # The hook as this repository publishes it; `system` runs the `oscova-lsp` of this checkout's environment
    # instead of installing the package again (no network).
    local = {key: hook[key] for key in ("id", "name", "entry", "files", "require_serial") if key in hook}
    config = {"repos": [{"repo": "local", "hooks": [{**local, "language": "system"}]}]}
    repo = tmp_path / "repo"
    (repo / "team-a" / "agents").mkdir(parents=True)
    (repo / "team-b" / "agents").mkdir(parents=True)
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    (repo / "team-a" / "oscova.toml").write_text(MODELS)
    (repo / "team-a" / "agents" / "caller.agent.yaml").write_text("id: caller\nagent_tools: [helper]\n")
    (repo / "team-a" / "agents" / "helper.agent.yaml").write_text("id: helper\nexposed_as_tool: true\n")
    (repo / "team-b" / "oscova.toml").write_text(MODELS)
    (repo / "team-b" / "agents" / "b.agent.yaml").write_text("id: b\n")
    (repo / "README.md").write_text("not checked\n")
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    home = tmp_path / "pre-commit-home"

    clean = pre_commit("run", "--all-files", cwd=repo, home=home)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "oscova-lsp check" in clean.stdout and "Passed" in clean.stdout

    # Only the helper changes (it stops being exposed); the hook still checks its whole workspace, so the
    # caller's new problem is found although the caller did not change.
    git("commit", "-q", "-m", "clean", cwd=repo)
    (repo / "team-a" / "agents" / "helper.agent.yaml").write_text("id: helper\n")
    (repo / "team-a" / "oscova.toml").write_text(MODELS + '[lint.severity]\nOSC02 = "error"\n')
    git("add", "-A", cwd=repo)
    changed = pre_commit("run", cwd=repo, home=home)
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "team-a/agents/caller.agent.yaml:2:15: OSC021" in changed.stdout
    assert "Failed" in changed.stdout and "team-b" not in changed.stdout

    everything = pre_commit("run", "--all-files", cwd=repo, home=home)
    assert everything.returncode == 1 and "OSC021" in everything.stdout


def test_the_published_hook_installs_and_runs(tmp_path: Path) -> None:
    """`language: python` as users get it: pre-commit installs this checkout (dependencies from PyPI) into its
    own environment and runs the hook from `.pre-commit-hooks.yaml` (`try-repo` takes the working tree)."""
    repo = tmp_path / "repo"
    (repo / "agents").mkdir(parents=True)
    (repo / "oscova.toml").write_text(MODELS)
    (repo / "agents" / "a.agent.yaml").write_text("id: a\ncontext_providers: [null]\n")
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    result = pre_commit("try-repo", str(ROOT), "oscova-check", "--all-files", cwd=repo, home=tmp_path / "home")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "agents/a.agent.yaml:2:21: OSC010" in result.stdout


def test_python_dash_m_runs_the_command_line(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "oscova_lsp", "rule", "OSC042"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("OSC042: No model is configured")


def test_the_hook_pattern_takes_every_kind_of_workspace_file_and_nothing_else() -> None:
    """pre-commit passes the hook the changed files its `files` pattern matches (`re.search` on the path): each
    kind of file the checker reads (definitions, templates, evaluations, oscova.toml) must pass it. A
    pyproject.toml is a host file only with `[tool.oscova]`, which a name cannot tell: it is left out, so a Python
    project's own pyproject.toml does not run the hook."""
    import re

    from oscova_lsp.analysis.disk import DEFINITION_SUFFIXES, EVAL_SUFFIXES, TEMPLATE_SUFFIXES, file_kind

    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    pattern = re.compile(hook["files"])
    kinds = [f"team/sub/name{suffix}" for suffix in (*DEFINITION_SUFFIXES, *TEMPLATE_SUFFIXES, *EVAL_SUFFIXES)]
    kinds += ["oscova.toml", "team/oscova.toml"]
    assert all(file_kind(path) is not None for path in kinds)
    assert [path for path in kinds if not pattern.search(path)] == []
    others = ["README.md", "team/x.yaml", "team/notoscova.toml", "team/x.eval.json", "team/x.j2.bak", "pyproject.toml"]
    assert [path for path in others if pattern.search(path)] == []
