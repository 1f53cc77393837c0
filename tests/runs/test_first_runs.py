"""The first commands a new user types, run as the README and docs/getting-started.md print them: in a fresh
folder, with `oscova-lsp` on PATH (the install's "Put `oscova-lsp` on your `PATH`" step) and no model key."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(sys.executable).parent


def sh_block(page: Path, heading: str) -> str:
    """The first ```sh block after the heading."""
    text = page.read_text(encoding="utf-8")
    match = re.compile(r"^```sh\n(.*?)^```", re.S | re.M).search(text, text.index(f"\n{heading}\n"))
    assert match is not None, heading
    return match.group(1)


def shell(script: str, cwd: Path, *, expect_failure: bool = False, **extra: str) -> subprocess.CompletedProcess[str]:
    """`script` in bash (`-e` unless `expect_failure`: then its last command's status is the script's)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(PATH=f"{SCRIPTS}{os.pathsep}{env.get('PATH', '')}", NO_COLOR="1", **extra)
    flags = "-uo" if expect_failure else "-euo"
    return subprocess.run(["bash", flags, "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_the_getting_started_workspace_checks_and_its_mistake_reads_as_printed(tmp_path: Path) -> None:
    page = ROOT / "docs" / "getting-started.md"
    made = shell(sh_block(page, "## A workspace"), tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    assert made.stdout == "All checks passed (2 files of 1 workspace checked).\n"
    workspace = tmp_path / "helpdesk"
    definition = workspace / "agents" / "helper.agent.yaml"
    definition.write_text(definition.read_text().replace("{{ user_name }}", "{{ user_nmae }}"))
    mistake = shell("oscova-lsp check", workspace)
    text = page.read_text(encoding="utf-8")
    shown = text[text.index("`{{ user_nmae }}` instead of"):].split("```text\n", 1)[1].split("```", 1)[0]
    assert mistake.returncode == 1 and mistake.stdout == shown


def test_the_readme_first_workspace_runs_as_printed(tmp_path: Path) -> None:
    # `oscova-lsp init` and the offline model are what a new user starts with: no endpoint, no key.
    first = sh_block(ROOT / "README.md", "## A first workspace in five minutes")
    result = shell(first, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("All checks passed")
    assert re.search(r"^transcript: \.oscova/runs/\S+-assistant-\S+\.jsonl$", result.stderr, re.M), result.stderr


def sh_blocks(page: Path, heading: str) -> list[str]:
    """Every ```sh block of the section under the heading."""
    text = page.read_text(encoding="utf-8")
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```sh\n(.*?)^```", section, re.S | re.M)


def test_the_readme_first_workspace_goes_from_a_run_to_a_test_an_evaluation_and_a_review(tmp_path: Path) -> None:
    """The whole section, as printed, on no endpoint and with no file from examples/: the run, the preview, the
    agent tests (the workspace's, then the user's run saved as one), the evaluation, then a commit, an edit of
    the template and the review of it."""
    first, offline, review = sh_blocks(ROOT / "README.md", "## A first workspace in five minutes")
    started = shell(first, tmp_path)
    assert started.returncode == 0, started.stdout + started.stderr
    run_id = re.search(r"^transcript: \.oscova/runs/\S+-assistant-([0-9a-f]+)\.jsonl$", started.stderr, re.M)
    assert run_id is not None, started.stderr
    demo = tmp_path / "demo"
    assert "RUN_ID" in offline
    tried = shell(offline.replace("RUN_ID", run_id[1]), demo)
    assert tried.returncode == 0, tried.stdout + tried.stderr
    assert "── Instructions (assistant)" in tried.stdout and "1 case: 1 passed" in tried.stdout
    assert "saved the case assistant: .oscova/tests/assistant.jsonl" in tried.stdout
    assert "2 of 2 case × model cells met their pass rate" in tried.stdout
    commit, _, edited = review.partition("# edit the template, then:\n")
    assert edited, review
    identity = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada",
                "GIT_COMMITTER_EMAIL": "ada@example.com"}
    committed = shell(commit, demo, **identity)
    assert committed.returncode == 0, committed.stdout + committed.stderr
    tracked = subprocess.run(["git", "ls-files"], cwd=demo, capture_output=True, text=True, check=True).stdout
    assert ".oscova/tests/assistant.jsonl" in tracked and ".oscova/runs/" not in tracked  # runs out, tests in
    template = demo / "templates" / "assistant.j2"
    template.write_text(template.read_text().replace("one short paragraph", "one short, friendly paragraph"))
    reviewed = shell(edited, demo, expect_failure=True)
    assert reviewed.returncode == 1, reviewed.stdout + reviewed.stderr  # the agent tests drifted: exit 1
    assert "~ assistant: instructions — via `templates/assistant.j2`" in reviewed.stdout
    assert "+Answer in one short, friendly paragraph" in reviewed.stdout
    assert "2 of 2 agent tests drifted" in reviewed.stdout
