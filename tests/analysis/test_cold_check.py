"""A cold `oscova-lsp check` of a large workspace stores every file's facts in a child forked for it, while it
checks (`processes.forked`): the cache is whole when the check has exited, and the next check, which reads the
facts of every file but the one changed, reports what a check without the cache reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from workspace_gen import generate  # noqa: E402


def _check(root: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OSCOVA_LSP_CACHE_DIR": str(cache)}
    env.pop("OSCOVA_LSP_NO_CACHE", None)
    return subprocess.run([sys.executable, "-m", "oscova_lsp", "check", str(root), "--format", "json", *extra],
                          capture_output=True, text=True, env=env, timeout=300)


def test_a_cold_check_stores_every_files_facts_for_the_next_check(tmp_path: Path) -> None:
    root, cache = tmp_path / "ws", tmp_path / "cache"
    generate(root, 250)
    cold = _check(root, cache)
    assert cold.returncode == 1 and cold.stderr == ""
    (facts,) = cache.glob("*/facts.json")
    entries = json.loads(facts.read_bytes().partition(b"\n")[2])
    parsed = [p for p in root.rglob("*") if p.suffix in (".j2", ".yaml")]
    assert len(parsed) >= 500 and len(entries) == len(parsed)
    edited = root / "templates/agent_1.j2"
    edited.write_text(edited.read_text() + "{{ added_after_the_cold_check }}\n")
    again = _check(root, cache)
    assert again.stdout == _check(root, cache, "--no-cache").stdout
    assert "added_after_the_cold_check" in again.stdout
