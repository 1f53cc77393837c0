"""A warm `oscova-lsp check` of whole workspaces prints the stored results of the last check without reading a
file: the same output, byte for byte, in every format; no parser, pydantic model or rule module imported; and
a change the identities show (an edited file) is checked again, never shown stale."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from oscova_lsp.analysis.warm_start import RACY_NS

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from workspace_gen import generate  # noqa: E402

HEAVY = ("pydantic", "jinja2", "yaml", "oscova_lsp.analysis.rules.registry", "oscova_lsp.analysis.files")


def aged(root: Path) -> None:
    newest = max(os.lstat(p).st_ctime_ns for p in [root, *root.rglob("*")])
    while time.time_ns() - newest <= RACY_NS * 2:
        time.sleep(0.05)


def check(root: Path, cache: Path, *options: str) -> tuple[int, str, list[str]]:
    """Exit status, output and the heavy modules imported, of a check in a fresh interpreter."""
    report = cache.parent / "modules.json"
    code = ("import json, runpy, sys\n"
            f"sys.argv = ['oscova-lsp', 'check', *{list(options)!r}, {str(root)!r}]\n"
            "try:\n"
            "    runpy.run_module('oscova_lsp', run_name='__main__')\n"
            "except SystemExit as end:\n"
            "    code = end.code\n"
            f"open({str(report)!r}, 'w').write(json.dumps([code, sorted(m for m in sys.modules\n"
            f"    if m.split('.')[0] in ('pydantic', 'jinja2', 'yaml') or m in {HEAVY!r})]))\n")
    finished = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "OSCOVA_LSP_CACHE_DIR": str(cache)}, cwd=str(root.parent))
    status, heavy = json.loads(report.read_text())
    return status, finished.stdout, heavy


@pytest.mark.parametrize("options", [("--format", "json"), (), ("--format", "github"), ("--select", "OSC1")])
def test_a_warm_check_prints_the_cold_checks_output_without_reading(tmp_path: Path, options: tuple[str, ...]):
    root = generate(tmp_path / "ws", 60)
    aged(root)
    cache = tmp_path / "cache"
    cold = check(root, cache, *options)
    assert cold[0] == 1 and cold[1] and "pydantic" in cold[2]
    warm = check(root, cache, *options)
    assert warm[:2] == cold[:2]
    if "--select" not in options:  # (naming codes checks them against the rules, which loads them)
        assert warm[2] == []  # nothing read, nothing parsed
    assert check(root, tmp_path / "other", "--no-cache", *options)[:2] == cold[:2]


def test_an_edit_is_checked_again(tmp_path: Path):
    root = generate(tmp_path / "ws", 60)
    aged(root)
    cache = tmp_path / "cache"
    before = check(root, cache, "--format", "json")
    template = root / "templates" / "agent_1.j2"
    template.write_text(template.read_text() + "{{ never_bound_anywhere }}\n")
    aged(root)
    after = check(root, cache, "--format", "json")
    assert "never_bound_anywhere" in after[1] and "never_bound_anywhere" not in before[1]
    assert after[1] == check(root, tmp_path / "other", "--no-cache", "--format", "json")[1]


def test_nested_workspaces_are_read(tmp_path: Path):
    root = tmp_path / "broken"
    shutil.copytree(ROOT / "examples" / "broken", root)  # holds a nested workspace: the roots come from a walk
    aged(root)
    cache = tmp_path / "cache"
    cold = check(root, cache, "--format", "json")
    warm = check(root, cache, "--format", "json")
    assert warm[:2] == cold[:2] and warm[2]
