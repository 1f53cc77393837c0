"""`oscova_runtime.paths.is_inside`, the one "is this path inside that folder" test, as written (`real=False`)
and through its users."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from oscova_lsp.reporting import display_path
from oscova_runtime.paths import Boundary, is_inside


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


def test_a_boundary_answers_as_is_inside_for_every_kind_of_path(tmp_path: Path) -> None:
    """`Boundary` (one pass over a workspace: folders resolved once) gives `is_inside`'s answer for folders,
    files, links leading in and out (of files and of folders, chained), missing paths, `..` and the root."""
    root = tmp_path / "root"
    for folder in ("root/agents/deep", "root/templates", "elsewhere/sub"):
        (tmp_path / folder).mkdir(parents=True)
    for file in ("root/agents/a.agent.yaml", "root/templates/t.j2", "elsewhere/x.j2", "elsewhere/sub/y.j2"):
        (tmp_path / file).write_text("x")
    os.symlink(tmp_path / "elsewhere", root / "out")  # a folder leading out
    os.symlink(tmp_path / "elsewhere/x.j2", root / "templates/out.j2")  # a file leading out
    os.symlink(root / "templates", root / "agents/in")  # a folder leading in
    os.symlink(root / "templates/out.j2", root / "agents/chained.j2")  # in, then out
    os.symlink(root / "agents", tmp_path / "elsewhere/back")  # from outside back in
    candidates = [root, str(root) + os.sep]
    for base in (root, root / "agents", root / "agents/deep", root / "templates", root / "out", root / "agents/in",
                 tmp_path / "elsewhere", tmp_path / "elsewhere/back", tmp_path):
        for name in ("", "a.agent.yaml", "t.j2", "out.j2", "chained.j2", "x.j2", "sub/y.j2", "missing.j2",
                     "../templates/t.j2", "../../elsewhere/x.j2", "..", "deep/../a.agent.yaml"):
            candidates.append(base / name if name else base)
    boundary = Boundary(root)
    for _ in range(2):  # the second round answers from the folders it resolved in the first
        for path in candidates:
            assert boundary.contains(path) == is_inside(path, root), path
    assert sum(boundary.contains(p) for p in candidates) not in (0, len(candidates))
