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


def shell(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(PATH=f"{SCRIPTS}{os.pathsep}{env.get('PATH', '')}", NO_COLOR="1")
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
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
