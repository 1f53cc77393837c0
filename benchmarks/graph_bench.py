"""Templates that include each other: `oscova-lsp check` on an include clique and an include cycle, and the
cost of one edit in the clique (re-parse, settle the uses, re-check every affected file), in process.

Run: python benchmarks/graph_bench.py [--clique 30] [--cycle 500] [--edits 50]
Enumerating include paths, as the checker once did, took 43.5 s on a clique of 9 templates and 131.6 s on
a cycle of 500.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from check_bench import measure  # noqa: E402
from oscova_lsp.analysis.engine import Analysis  # noqa: E402

from tests.support.include_graph import clique, cycle, template_text, write_include_graph  # noqa: E402


def check_cli(name: str, edges: dict[int, list[int]], runs: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="oscova-graph-"))
    try:
        write_include_graph(root, edges)
        command = [sys.executable, "-m", "oscova_lsp", "check", str(root), "--format", "json"]
        results = [measure(command) for _ in range(runs)]
        best = min(r[0] for r in results)
        print(f"check, {name}: best {best:.2f} s wall of {runs} (peak {max(r[1] for r in results):.0f} MB)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def edit_costs(n: int, edits: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="oscova-graph-"))
    try:
        write_include_graph(root, clique(n))
        analysis = Analysis(str(root))
        analysis.load(jobs=1)
        started = time.perf_counter()
        for path in sorted(analysis.workspace.files):
            analysis.diagnostics(path)
        print(f"clique of {n}, in process: first check of every file {1000 * (time.perf_counter() - started):.1f} ms")
        costs: list[float] = []
        affected: set[str] = set()
        for k in range(edits):
            node = k % n
            text = template_text(node, [j for j in range(n) if j != node], f" {{{{ typed{k} }}}}")
            started = time.perf_counter()
            affected = analysis.update(str(root / "templates" / f"t{node:03d}.j2"), text)
            for path in sorted(affected):
                analysis.diagnostics(path)
            costs.append(time.perf_counter() - started)
        p95 = statistics.quantiles(costs, n=20)[-1]
        print(f"clique of {n}, one edit re-checks {len(affected)} files: p50 {1000 * statistics.median(costs):.1f} ms, "
              f"p95 {1000 * p95:.1f} ms ({edits} edits)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clique", type=int, default=30)
    parser.add_argument("--cycle", type=int, default=500)
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    check_cli(f"clique of {args.clique} templates", clique(args.clique), args.runs)
    check_cli(f"cycle of {args.cycle} templates", cycle(args.cycle), args.runs)
    edit_costs(args.clique, args.edits)


if __name__ == "__main__":
    main()
