"""`oscova_runtime.paths.is_inside`, the one "is this path inside that folder" test, as written (`real=False`)
and through its users."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from oscova_lsp.reporting import display_path
from oscova_runtime.paths import is_inside


def test_as_written_a_symlink_counts_where_it_stands(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "root/link")
    root = tmp_path / "root"
    assert is_inside(root / "link/a.j2", root, real=False)
    assert not is_inside(root / "link/a.j2", root)  # the real path leaves the root
    assert not is_inside(tmp_path / "rootless", root, real=False)  # a shared prefix is not a parent
    assert not is_inside(root / "sub/../../elsewhere", root, real=False)
    assert is_inside(str(root) + os.sep, root, real=False) and is_inside(root, str(root) + os.sep, real=False)


def test_a_diagnostic_path_below_the_current_directory_is_shown_relative(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # a folder whose name begins with two dots is still below the current directory
    assert display_path(str(tmp_path / "..drafts" / "a.agent.yaml")) == os.path.join("..drafts", "a.agent.yaml")
    assert display_path(str(tmp_path / "agents" / "a.agent.yaml")) == os.path.join("agents", "a.agent.yaml")
    outside = str(tmp_path.parent / "other" / "a.agent.yaml")
    assert display_path(outside) == outside
