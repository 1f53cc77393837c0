"""`oscova-lsp check` over a generated workspace: wall time and peak memory of the whole process tree.

Run: python benchmarks/check_bench.py [--count 5000] [--jobs N]
SPEC §9 target: 5,000 definitions and 5,000 templates in under 10 s and 400 MB on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workspace_gen import generate  # noqa: E402


def tree_rss_kb(pid: int) -> int:
    """Resident memory of a process and all its descendants, in KiB."""
    total = 0
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    stack.extend(int(c) for c in handle.read().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


def measure(command: list[str]) -> tuple[float, float, int]:
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0

    def poll() -> None:
        nonlocal peak
        while process.poll() is None:
            peak = max(peak, tree_rss_kb(process.pid))
            time.sleep(0.005)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    process.wait()
    elapsed = time.perf_counter() - start
    watcher.join()
    return elapsed, peak / 1024, process.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="oscova-bench-"))
    try:
        generate(root, args.count)
        files = sum(1 for _ in root.rglob("*") if _.is_file())
        command = [sys.executable, "-m", "oscova_lsp", "check", str(root), "--format", "json"]
        if args.jobs:
            command += ["--jobs", str(args.jobs)]
        print(f"workspace: {args.count} definitions, {args.count} templates ({files} files), {os.cpu_count()} cores")
        results = [measure(command) for _ in range(args.runs)]
        for wall, peak, code in results:
            print(f"  check: {wall:6.2f} s wall, peak RSS {peak:6.1f} MB (process tree), exit {code}")
        best = min(r[0] for r in results)
        worst_peak = max(r[1] for r in results)
        print(f"best wall {best:.2f} s (target < 10 s); peak {worst_peak:.1f} MB (target < 400 MB)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
