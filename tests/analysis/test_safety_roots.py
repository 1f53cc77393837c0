"""The workspace boundary for configured folders: a `[memory] root` that leads outside the
workspace root (an absolute path, `..`, a symlink) is an OSC040 from `oscova-lsp check`; the runtime never reads
or writes memory there (tests/runtime/test_boundary_providers.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .safety_support import HOST, assert_no_traceback, check


@pytest.mark.parametrize("memory_root", ["../outside", "ABSOLUTE", "link", ".oscova/../../outside"])
def test_a_memory_root_outside_the_workspace_is_osc040(tmp_path: Path, memory_root: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "ws"
    (root / "agents").mkdir(parents=True)
    os.symlink(outside, root / "link")
    value = str(outside) if memory_root == "ABSOLUTE" else memory_root
    (root / "oscova.toml").write_text(HOST + f'\n[host]\nuser_id = "u"\n\n[memory]\nroot = "{value}"\n')
    (root / "agents/a.agent.yaml").write_text("id: a\ninstructions: hi\nmemory: true\n")
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert result.returncode == 1
    found = [line for line in result.stdout.splitlines() if "oscova.toml:" in line and "OSC040" in line]
    assert len(found) == 1, result.stdout
    assert f"`[memory] root` `{value}` leads outside the workspace root: memory is never read or written " \
           "there" in found[0]
    assert found[0].split(":")[1] == "8"  # on the `root = ...` line


def test_a_memory_root_inside_the_workspace_is_fine(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "agents").mkdir(parents=True)
    (root / "oscova.toml").write_text(HOST + '\n[host]\nuser_id = "u"\n\n[memory]\nroot = "state/../memory"\n')
    (root / "agents/a.agent.yaml").write_text("id: a\ninstructions: hi\nmemory: true\n")
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert "OSC040" not in result.stdout and result.returncode == 0, result.stdout


def test_a_host_configuration_linked_from_outside_is_not_read_even_for_its_excludes(tmp_path: Path) -> None:
    """Its `[host] exclude` would hide the workspace's own definitions from the check."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "oscova.toml").write_text(HOST + '\n[host]\nexclude = ["agents"]\n')
    root = tmp_path / "ws"
    (root / "agents").mkdir(parents=True)
    os.symlink(outside / "oscova.toml", root / "oscova.toml")
    (root / "agents/a.agent.yaml").write_text("id: a\ninstructions: hi\ntoolz: []\n")
    result = check(".", cwd=root)
    assert_no_traceback(result)
    [host] = [line for line in result.stdout.splitlines() if "oscova.toml:" in line]
    assert "OSC001" in host and "symlink that leads outside the workspace root" in host
    assert any("a.agent.yaml:" in line and "OSC003" in line for line in result.stdout.splitlines()), result.stdout
