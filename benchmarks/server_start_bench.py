"""Server start on a cold and a warm facts cache: time from spawn to the last published diagnostic.

The server is spawned over stdio on a generated workspace (`workspace_gen`, N definitions and N templates),
first with an empty cache directory (cold), then again with the cache the first start wrote (warm). Measures,
from spawn: the end of the initial scan (its work-done progress `end`) and the last `publishDiagnostics`
(the workspace's diagnostics all out: no further one within `--quiet` seconds), and how many files got
diagnostics published.

    .venv/bin/python benchmarks/server_start_bench.py [--count 5000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from server_bench import Client  # noqa: E402
from workspace_gen import generate  # noqa: E402


def start(root: Path, cache: Path, quiet: float) -> dict[str, Any]:
    os.environ["OSCOVA_LSP_CACHE_DIR"] = str(cache)
    client = Client([sys.executable, "-m", "oscova_lsp"])
    out: dict[str, Any] = {}
    try:
        client.initialize(root, {"window": {"workDoneProgress": True}})
        client.notify("initialized", {})
        published: set[str] = set()
        last = scan_end = None
        while True:
            try:
                at, message = client.inbox.get(timeout=quiet if scan_end is not None else 600)
            except queue.Empty:
                break
            method = message.get("method")
            if method == "textDocument/publishDiagnostics":
                published.add(message["params"]["uri"])
                last = at
            elif method == "$/progress" and message["params"]["value"].get("kind") == "end":
                scan_end = at
            elif "id" in message and "method" in message:  # a request of the server's (progress, registration)
                client.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        out["scan_end_s"] = scan_end - client.spawned if scan_end else float("nan")
        out["last_diagnostic_s"] = last - client.spawned if last else float("nan")
        out["files_published"] = len(published)
        client.shutdown()
    finally:
        client.kill()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000, help="definitions, and as many templates")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--quiet", type=float, default=3.0, help="seconds without a diagnostic that end a start")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="oscova-start-"))
    root = base / "ws"
    generate(root, args.count)
    results: dict[str, Any] = {"cpus": os.cpu_count(), "load_average": round(os.getloadavg()[0], 1)}
    try:
        runs: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": []}
        for n in range(args.repeat):
            cache = base / f"cache{n}"
            runs["cold"].append(start(root, cache, args.quiet))
            runs["warm"].append(start(root, cache, args.quiet))
        for mode, rows in runs.items():
            results[mode] = {key: round(statistics.median(r[key] for r in rows), 2)
                             for key in ("scan_end_s", "last_diagnostic_s")}
            results[mode]["files_published"] = rows[0]["files_published"]
            results[mode]["runs"] = [{k: round(v, 2) for k, v in r.items()} for r in rows]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
