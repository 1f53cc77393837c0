"""What a review copies and what it refuses: symlinks at the base (inside the repository: made; leading out:
never made, never read through), a submodule, a blob over the size a review reads, and a FIFO in the work
tree (never waited on). Each is one sentence in the notes; the review goes on."""

from __future__ import annotations

import os
from pathlib import Path

from .support import agents, commit, git, review, review_json, write


def _link_at_base(repo: Path, name: str, target: str) -> None:
    """A symlink committed as git stores one (mode 120000), whatever this machine would make of it."""
    obj = _hash(repo, target)
    git(repo, "update-index", "--add", "--cacheinfo", f"120000,{obj},{name}")


def _hash(repo: Path, content: str) -> str:
    import subprocess

    done = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=content, capture_output=True,
                          text=True, check=True)
    return done.stdout.strip()


def test_links_at_the_base_are_made_inside_and_refused_leading_out(repo: Path):
    write(repo, {"agents/alias.agent.yaml": 'id: alias\ninstructions: |\n  {% include "templates/alias.j2" %}\n'})
    commit(repo, "an agent that includes a link")
    _link_at_base(repo, "templates/alias.j2", "partials/persona.j2")
    _link_at_base(repo, "templates/secret.j2", "../../../../../../../../etc/passwd")
    _link_at_base(repo, "templates/up.j2", "../../outside.j2")
    git(repo, "commit", "-q", "-m", "links")
    (repo.parent / "outside.j2").write_text("OUTSIDE SECRET\n")
    git(repo, "checkout", "-q", "--", ".")
    write(repo, {"templates/partials/persona.j2": "You are {{ agent_name }}, kind.\n"})
    code, report = review_json(repo, "--base", "HEAD")
    notes = "\n".join(report["notes"])
    assert "`templates/secret.j2` at " in notes and "symlink that leads outside" in notes
    assert "`templates/up.j2` at " in notes
    alias = agents(report)["alias"]  # the link inside the repository was made, and read on both sides
    assert alias["causes"] == ["templates/partials/persona.j2"]
    assert "-You are alias of the Platform team." in alias["changes"][0]["diff"]
    shown = review(repo, "--base", "HEAD", "--format", "markdown").stdout
    assert "root:" not in shown and "OUTSIDE SECRET" not in shown


def test_a_submodule_and_a_huge_blob_at_the_base_are_named_and_left_out(repo: Path):
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},vendor/lib")
    write(repo, {"templates/huge.j2": "x" * 1_200_000 + "\n"})
    git(repo, "add", "templates/huge.j2")
    git(repo, "commit", "-q", "-m", "a submodule and a huge template")
    code, report = review_json(repo, "--base", "HEAD")
    notes = report["notes"]
    assert any(n.startswith("`vendor/lib` at ") and "is a submodule: its files are not reviewed" in n for n in notes)
    assert any(n.startswith("`templates/huge.j2` at ") and "1,200,001 bytes, over the 1,000,000 a review reads" in n
               for n in notes)
    assert "`templates/huge.j2` in the work tree was not read: the file is larger than 1 MB" in "\n".join(notes)
    assert code == 0 and agents(report) == {}
    assert report["workspaces"][0]["diagnostics"] == {"introduced": [], "fixed": []}


def test_a_fifo_in_place_of_a_tracked_template_is_read_by_no_one(repo: Path):
    (repo / "templates" / "intro.j2").unlink()
    os.mkfifo(repo / "templates" / "intro.j2")  # tracked: nothing may wait on it
    os.mkfifo(repo / "templates" / "pipe.j2")  # untracked: read by no one either, as `check` reads it
    code, report = review_json(repo)
    notes = "\n".join(report["notes"])
    assert "`templates/intro.j2` in the work tree was not read: it is a FIFO" in notes
    assert "`templates/pipe.j2` in the work tree was not read: it is a FIFO" in notes
    introduced = report["workspaces"][0]["diagnostics"]["introduced"]
    assert [(d["path"], d["code"]) for d in introduced] == [("templates/intro.j2", "OSC001"),
                                                            ("templates/pipe.j2", "OSC001")]
    assert all("FIFO" in d["message"] for d in introduced)
    assert {d["path"] for d in report["workspaces"][0]["diagnostics"]["fixed"]} <= {"templates/intro.j2"}
    assert code == 1  # an error introduced


def test_a_step_summary_that_is_a_fifo_a_link_or_a_folder_is_refused_and_the_review_still_prints(
        repo: Path, tmp_path: Path):
    write(repo, {"templates/partials/persona.j2": "You are {{ agent_name }}, reply in French.\n"})
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("untouched\n")
    fifo, link, folder = tmp_path / "summary.fifo", tmp_path / "summary-link.md", tmp_path / "summary-dir"
    os.mkfifo(fifo)
    link.symlink_to(secret)
    folder.mkdir()
    for summary in (fifo, link, folder):
        done = review(repo, "--format", "github", env={"GITHUB_STEP_SUMMARY": str(summary)}, timeout=60)
        assert done.returncode == 0 and "Traceback" not in done.stderr
        assert f"oscova-lsp: the step summary {summary} was not written: " in done.stderr
        assert "::notice file=agents/writer.agent.yaml" in done.stdout
        assert "| agents changed | 2 |" in done.stdout  # the Markdown printed instead
    assert secret.read_text() == "untouched\n" and list(folder.iterdir()) == []


DEEP = "/".join(f"d{n}" for n in range(12))


def test_links_that_chain_out_of_the_base_are_never_left_in_its_copy(repo: Path, tmp_path: Path):
    # `up` leads to the root of the repository, which is inside; `out` goes up from there past it, which only
    # `up` being a link makes possible: as written, `out` stays inside too.
    _link_at_base(repo, f"{DEEP}/up", "/".join([".."] * 12))
    _link_at_base(repo, f"{DEEP}/out", "/".join(["up", *[".."] * 12]))
    git(repo, "commit", "-q", "-m", "chained links")
    code, report = review_json(repo, "--base", "HEAD")
    notes = "\n".join(report["notes"])
    assert f"`{DEEP}/out` at " in notes and "symlink that leads outside" in notes
    assert f"`{DEEP}/up` at " not in notes  # a link inside the repository is made

    from oscova_lsp.review.trees import from_commit

    top = str(repo)
    head = git(repo, "rev-parse", "HEAD")
    side, copy = from_commit(top, head, head[:12], str(tmp_path / "copy" / "base"), [""])
    side.write(copy)
    base = os.path.realpath(tmp_path / "copy" / "base")
    leading_out = [os.path.join(folder, name) for folder, dirs, files in os.walk(base) for name in dirs + files
                   if os.path.islink(os.path.join(folder, name))
                   and not os.path.realpath(os.path.join(folder, name)).startswith(base + os.sep)
                   and os.path.realpath(os.path.join(folder, name)) != base]
    assert leading_out == []
