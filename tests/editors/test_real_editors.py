"""Real editors drive the server over stdio: Neovim 0.7 headless (Debian `neovim`) and Emacs 28 in batch
mode with eglot 1.9 (Debian `emacs-nox elpa-eglot`) open a broken definition of `examples/broken`.

In CI (`CI` set) a missing editor is a failure; elsewhere the test is skipped."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
BROKEN = HERE.parent.parent / "examples" / "broken"
SERVER_CMD = f"{sys.executable} -m oscova_lsp"
CALLS = "agents/calls.agent.yaml"


def require(binary: str, packages: str) -> str:
    found = shutil.which(binary)
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail(f"`{binary}` is not installed; CI must `apt-get install -y --no-install-recommends {packages}`")
    pytest.skip(f"`{binary}` is not installed (apt-get install {packages}); set CI to make this a failure")


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """A copy of examples/broken, so nothing an editor does can touch the repository."""
    root = tmp_path / "broken"
    shutil.copytree(BROKEN, root)
    return root


def run(command: list[str], root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ, ROOT=str(root), SERVER_CMD=SERVER_CMD, HOME=str(root.parent), **env)
    proc = subprocess.run(command, cwd=root, env=environment, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=90)
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def test_neovim_receives_diagnostics_and_an_edit_clears_one(broken: Path):
    nvim = require("nvim", "neovim")
    target = broken / CALLS
    lines = target.read_text().splitlines()
    edit_line = next(i for i, line in enumerate(lines) if line.startswith("agent_tools:"))
    proc = run([nvim, "--headless", "--clean", "-u", str(HERE / "nvim_roundtrip.lua"), str(target)], broken,
               TARGET=str(target), EDIT_LINE=str(edit_line), EDIT_TEXT="agent_tools: [hidden, loop-a]",
               EXPECT_GONE="OSC020")
    before = re.findall(r"^BEFORE (\d+):(\d+) (OSC\d+) ", proc.stdout, re.MULTILINE)
    after = re.findall(r"^AFTER (\d+):(\d+) (OSC\d+) ", proc.stdout, re.MULTILINE)
    assert [code for *_, code in before] == ["OSC020", "OSC021"]
    assert before[0][:2] == (str(edit_line), "14")  # `ghost`, exactly
    assert [code for *_, code in after] == ["OSC021"]  # the edit removed `ghost`; `hidden` stays
    assert after[0][:2] == (str(edit_line), "14")  # and moved left with the edit
    assert "AFTER END" in proc.stdout


def test_emacs_eglot_receives_diagnostics(broken: Path):
    emacs = require("emacs", "emacs-nox elpa-eglot")
    if not Path("/usr/share/emacs/site-lisp/elpa").is_dir() and not os.environ.get("CI"):
        pytest.skip("eglot is not installed (apt-get install elpa-eglot)")
    target = broken / CALLS
    proc = run([emacs, "--batch", "-Q", "-l", str(HERE / "eglot_diagnostics.el")], broken,
               TARGET=str(target), EXPECT="OSC020,OSC021")
    found = re.findall(r"^DIAG (\d+) (\S+) oscova \[(OSC\d+)\]: (.*)$", proc.stdout, re.MULTILINE)
    assert [(line, kind, code) for line, kind, code, _ in found] == [
        ("3", "eglot-warning", "OSC020"), ("3", "eglot-warning", "OSC021")]
    assert "`ghost`" in found[0][3]
