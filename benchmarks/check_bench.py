"""`oscova-lsp check` over a generated workspace: wall time, CPU time and peak memory of the whole process tree,
without the facts cache (`--no-cache`), with a cold one (empty: every file parsed and the cache written) and
with a warm one (nothing changed since the last run: the stored results are reused) and after one edit (one
template changed: its facts parsed again, the checks run on every file).

With `--peer PATH`, jinja-lsp's `check --format json` of the same workspace (it reads the templates only) runs in
each round beside ours, and each of our modes is reported as a ratio of its time in the same round (the median
of the rounds' ratios, and their range): on a shared machine only a ratio measured side by side means anything.
jinja-lsp is a Rust program on PyPI: `python3 -m venv /tmp/jinja-lsp && /tmp/jinja-lsp/bin/pip install
jinja-lsp==0.4.2`, then `--peer /tmp/jinja-lsp/bin/jinja-lsp`.

Run: python benchmarks/check_bench.py [--count 5000] [--jobs N] [--runs 3] [--peer PATH]
Targets: 5,000 definitions and 5,000 templates in under 10 s and 400 MB on 2 cores; warm
under 1 s, cold no slower than without the cache; 2,000 + 2,000 without the cache at most 0.75 of jinja-lsp's
time, warm at most 0.1 of it, under 250 MB. The cache goes to a temporary folder, never the user's.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
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


def measure(command: list[str], env: dict[str, str]) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds (the process and its workers), peak RSS in MB, exit status."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
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
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, peak / 1024, process.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--peer", help="jinja-lsp's executable, run beside each round")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="oscova-bench-"))
    caches = Path(tempfile.mkdtemp(prefix="oscova-bench-cache-"))
    try:
        generate(root, args.count)
        files = sum(1 for _ in root.rglob("*") if _.is_file())
        command = [sys.executable, "-m", "oscova_lsp", "check", str(root), "--format", "json"]
        if args.jobs:
            command += ["--jobs", str(args.jobs)]
        print(f"workspace: {args.count} definitions, {args.count} templates ({files} files), {os.cpu_count()} cores, "
              f"load average {os.getloadavg()[0]:.1f}")
        env = dict(os.environ)
        results: dict[str, list[tuple[float, float, float, int]]] = {
            "no cache": [], "cold": [], "warm": [], "one edit": []}
        if args.peer:
            results["jinja-lsp"] = []
        edited = root / "templates" / "agent_0.j2"
        for run in range(args.runs):  # interleaved, so a busy moment of the machine hits every mode alike
            if args.peer:
                results["jinja-lsp"].append(measure([args.peer, "check", "--format", "json", str(root)], env))
            results["no cache"].append(measure([*command, "--no-cache"], env))
            env["OSCOVA_LSP_CACHE_DIR"] = str(caches / f"run{run}")
            results["cold"].append(measure(command, env))
            results["warm"].append(measure(command, env))
            # One template changed since the last check: its facts parsed again, every other file's reused,
            # and the checks run on all of them (the stored results no longer hold).
            edited.write_text(edited.read_text() + f"{{# edit {run} #}}\n")
            results["one edit"].append(measure(command, env))
        for mode, rows in results.items():
            for wall, cpu, peak, code in rows:
                print(f"  {mode:>9}: {wall:6.2f} s wall, {cpu:6.2f} s CPU, peak RSS {peak:6.1f} MB (process tree), "
                      f"exit {code}")
        for mode, rows in results.items():
            print(f"{mode:>9}: best wall {min(r[0] for r in rows):.2f} s, best CPU {min(r[1] for r in rows):.2f} s, "
                  f"peak {max(r[2] for r in rows):.1f} MB")
        if args.peer:
            for mode in ("no cache", "cold", "warm"):
                ratios = sorted(ours[0] / peer[0] for ours, peer in zip(results[mode], results["jinja-lsp"], strict=True))
                print(f"{mode:>9} / jinja-lsp, same round: median {statistics.median(ratios):.2f}x "
                      f"({ratios[0]:.2f}-{ratios[-1]:.2f}x)")
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        print("targets: no cache < 10 s; warm < 1 s; cold no slower than no cache; peak < 400 MB")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(caches, ignore_errors=True)


if __name__ == "__main__":
    main()
