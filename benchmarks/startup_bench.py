"""Start-up benchmark: how soon a freshly spawned server gives a correct answer.

The server is spawned over stdio on a generated workspace (`workspace_gen`, N definitions and N templates);
right after `initialized` the client opens an agent and asks for the definition of its first `agent_tools`
item. Measures, from spawn: the `initialize` answer, the first definition answer (and whether it was right:
a request waits for its root to be read, so the first answer must already be the right one; past the
10 s bound it is refused with ContentModified and asked again, counted as `refused`), the first correct
answer, and the end of the initial scan (its work-done progress `end`).

    .venv/bin/python benchmarks/startup_bench.py [--count 1000] [--count 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from server_bench import Client  # noqa: E402
from workspace_gen import generate  # noqa: E402


def first_call(root: Path) -> tuple[Path, int, str]:
    """An agent with an `agent_tools` item: (its file, the item's line, the agent it names)."""
    for path in sorted(root.glob("agents/*.agent.yaml")):
        for number, line in enumerate(path.read_text().splitlines()):
            if line.startswith("agent_tools: [") and line != "agent_tools: []":
                return path, number, line[len("agent_tools: ["):].split(",")[0].rstrip("]")
    raise SystemExit("the generated workspace has no agent_tools item")


def once(root: Path) -> dict[str, Any]:
    agent, line, target = first_call(root)
    expected = (root / "agents" / f"agent_{target.removeprefix('agent-')}.agent.yaml").as_uri()
    client = Client([sys.executable, "-m", "oscova_lsp"])
    out: dict[str, Any] = {}
    try:
        at = client.initialize(root, {"window": {"workDoneProgress": True}})
        out["initialize_s"] = at - client.spawned
        client.notify("initialized", {})
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": agent.as_uri(), "languageId": "yaml", "version": 1, "text": agent.read_text()}})
        position = {"line": line, "character": len("agent_tools: [") + 1}
        scan_end: float | None = None
        first_right: bool | None = None
        while True:
            msg_id = client.request("textDocument/definition", {"textDocument": {"uri": agent.as_uri()},
                                                                 "position": position})

            def answer_or_end(m: dict[str, Any], msg_id: int = msg_id) -> bool:
                return m.get("id") == msg_id and "method" not in m or m.get("method") == "$/progress" and \
                    m["params"]["value"].get("kind") == "end"

            while True:
                at, message = client.wait(answer_or_end, timeout=600)
                if message.get("method") == "$/progress":
                    scan_end = at
                    continue
                break
            if "error" in message:  # refused past the wait bound (ContentModified): the editor asks again
                out["refused"] = out.get("refused", 0) + 1
                continue
            right = [loc["uri"] for loc in message.get("result") or []] == [expected]
            if first_right is None:
                first_right = right
                out["first_definition_answer_s"] = at - client.spawned
            if right:
                out["first_correct_definition_s"] = at - client.spawned
                break
            time.sleep(0.05)
        out["first_answer_was_correct"] = first_right
        if scan_end is None:
            scan_end, _ = client.wait(lambda m: m.get("method") == "$/progress" and
                                      m["params"]["value"].get("kind") == "end", timeout=600)
        out["initial_scan_end_s"] = scan_end - client.spawned
        client.shutdown()
    finally:
        client.kill()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, action="append", help="definitions, and as many templates "
                        "(repeatable; default 1000 and 5000)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, Any] = {"cpus": os.cpu_count()}
    for count in args.count or [1000, 5000]:
        root = Path(tempfile.mkdtemp(prefix="oscova-startup-")) / "ws"
        generate(root, count)
        try:
            runs = [once(root) for _ in range(args.repeat)]
        finally:
            shutil.rmtree(root.parent, ignore_errors=True)
        results[f"{count}+{count}"] = {
            "all_first_answers_correct": all(r["first_answer_was_correct"] for r in runs),
            **{key: round(statistics.median(r[key] for r in runs), 3) for key in
               ("initialize_s", "first_definition_answer_s", "first_correct_definition_s", "initial_scan_end_s")},
            "refused_requests": sum(r.get("refused", 0) for r in runs),
            "runs": len(runs),
        }
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
