"""A repository's own git settings are inert in a review: the folder's `.git/config` (clean filters, a hooks path,
a file-system monitor, an external diff, textconv), the hooks it ships and a `.git` file that sends git to another
repository run nothing and touch nothing; the review reads objects and never writes the index."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from .support import agents, commit, git, init, review, review_json, write


def _script(path: Path, marker: Path, passthrough: bool = False) -> str:
    """An executable that appends its name to `marker` (and, as a filter, passes its input through)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {path.name} >> {marker}\n" + ("cat\n" if passthrough else ""))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def _index(repo: Path) -> tuple[str, int]:
    data = (repo / ".git" / "index").read_bytes()
    return hashlib.sha256(data).hexdigest(), (repo / ".git" / "index").stat().st_mtime_ns


def test_the_repositorys_filters_hooks_monitor_and_diff_programs_never_run(repo: Path, tmp_path: Path):
    marker = tmp_path / "ran.txt"
    tools = tmp_path / "tools"
    clean = _script(tools / "clean", marker, passthrough=True)
    hooks = tmp_path / "hooks"
    for name in ("post-index-change", "post-checkout", "reference-transaction"):
        _script(hooks / name, marker)
        _script(repo / ".git" / "hooks" / name, marker)
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[filter "x"]\n\tclean = {clean}\n\tsmudge = {clean}\n\trequired = true\n'
                     f'[core]\n\thooksPath = {hooks}\n\tfsmonitor = {_script(tools / "monitor", marker)}\n'
                     f'[diff]\n\texternal = {_script(tools / "external", marker)}\n'
                     f'[diff "t"]\n\ttextconv = {_script(tools / "textconv", marker, passthrough=True)}\n')
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* filter=x diff=t\n")
    write(repo, {"templates/partials/persona.j2": "You are {{ agent_name }}, reply in French.\n"})
    os.utime(repo / "templates" / "intro.j2")  # a file whose times changed and content did not: git would re-read it
    index = _index(repo)
    code, report = review_json(repo)
    assert not marker.exists(), marker.read_text()
    assert sorted(agents(report)) == ["triage", "writer"]  # the review itself still works
    assert _index(repo) == index  # the index is never written


def test_a_git_file_that_sends_git_to_another_repository_is_refused(tmp_path: Path):
    from .conftest import workspace_files

    other = init(tmp_path / "other", {**workspace_files(), "agents/secret.agent.yaml": "id: secret\ninstructions: S.\n"})
    index = _index(other)
    folder = tmp_path / "folder"
    write(folder, {**workspace_files(), "agents/mine.agent.yaml": "id: mine\ninstructions: Mine.\n"})
    (folder / ".git").write_text(f"gitdir: {other / '.git'}\n")
    done = review(folder, "--format", "json", env={"GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stderr and "secret" not in done.stdout
    assert f"{folder}/.git is a file that sends git to {other / '.git'}, outside {folder}" in done.stderr
    assert _index(other) == index


def test_a_linked_worktree_of_a_repository_is_reviewed(repo: Path, tmp_path: Path):
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "elsewhere", str(linked), "main")
    write(linked, {"templates/partials/persona.j2": "You are {{ agent_name }}, reply in German.\n"})
    commit(linked, "German")
    code, report = review_json(linked, "--base", "main")
    assert sorted(agents(report)) == ["triage", "writer"]
    assert "+You are writer, reply in German." in agents(report)["writer"]["changes"][0]["diff"]


def test_untracked_and_deleted_files_are_still_the_change(repo: Path):
    write(repo, {"templates/partials/persona.j2": None, "templates/new.j2": "New.\n",
                 "agents/new.agent.yaml": 'id: new\ninstructions: |\n  {% include "templates/new.j2" %}\n'})
    code, report = review_json(repo)
    found = agents(report)
    assert found["new"]["status"] == "added"
    assert "templates/partials/persona.j2" in found["writer"]["causes"]
