"""Measures `oscova-lsp review` on a 2,000-agent workspace where one changed partial reaches 300 agents.

Generates the workspace (`workspace_gen.py`: 2,000 definitions and their templates), points the templates
of 300 agents at one shared partial, commits it in a fresh git repository, edits that partial in the work
tree, then runs `oscova-lsp review --format json` as a user would (a subprocess) `--runs` times and reports
the wall time and CPU time (the review's process tree) of each run, the load average, and what the review found (300 agents changed). Target:
under 10 s on 2 cores.

    python benchmarks/review_bench.py [--count 2000] [--reach 300] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from workspace_gen import generate  # noqa: E402

SHARED = "templates/partials/shared.j2"


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def build(root: Path, count: int, reach: int) -> Path:
    generate(root, count)
    (root / SHARED).write_text("Shared persona: {{ agent_name }} of {{ team }}.\n")
    templates = sorted((root / "templates").glob("agent_*.j2"), key=lambda p: int(p.stem.split("_")[1]))[:reach]
    for template in templates:
        text = template.read_text()
        template.write_text(text.replace(text.splitlines()[0], f'{{% include "{SHARED}" %}}', 1))
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    (root / SHARED).write_text("Shared persona: {{ agent_name }} of {{ team }}. Answer in French.\n")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--reach", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="review-bench-") as folder:
        repo = build(Path(folder) / "ws", args.count, args.reach)
        times = []
        for _ in range(args.runs):
            cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
            began = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "oscova_lsp", "review", "--format", "json"], cwd=repo,
                                  capture_output=True, text=True, check=False)
            times.append(time.perf_counter() - began)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = after.ru_utime - cpu.ru_utime + after.ru_stime - cpu.ru_stime
            if done.returncode not in (0, 1):
                raise SystemExit(f"review failed ({done.returncode}): {done.stderr}")
            summary = json.loads(done.stdout)["summary"]
            print(f"review: {times[-1]:.2f} s wall, {used:.2f} s CPU (the process tree; load average "
                  f"{os.getloadavg()[0]:.1f}); "
                  f"{summary['changed']} changed, {summary['unchanged']} unchanged", flush=True)
        print(f"best {min(times):.2f} s, median {sorted(times)[len(times) // 2]:.2f} s of {len(times)} runs "
              f"({args.count} agents, one partial reaching {args.reach}); target < 10 s on 2 cores")


if __name__ == "__main__":
    main()
