"""The server's hover with token figures: the server spawned over stdio on a copy of `examples/`
(o200k_base, the agent `triage` with its custom `tickets` provider), hovers on `triage`'s `id` (the prompt's
figures) and on its `tickets` entry (that provider's share), round trips measured from the client.

- the first hover: the run service made, the encoding loaded, the prompt assembled and counted;
- warm: the same hovers again, the agent's figures kept (the workspace unchanged). Target: p95 under 10 ms;
- after an edit: each hover follows an edit to another open definition, so the figures are worked out again
  (the prompt assembled anew; the counts of unchanged texts cached per text): what a hover costs at worst.

Run: .venv/bin/python benchmarks/hover_tokens_bench.py [--hovers 300] [--edits 40]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_bench import Client, summary  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def position_of(text: str, needle: str) -> dict[str, int]:
    offset = text.index(needle) + 1
    return {"line": text.count("\n", 0, offset), "character": offset - (text.rfind("\n", 0, offset) + 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hovers", type=int, default=300)
    parser.add_argument("--edits", type=int, default=40)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="oscova-hover-tokens-")) / "ws"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns("broken", ".oscova"))
    client = Client([sys.executable, "-m", "oscova_lsp"])
    results: dict[str, Any] = {"load_before": [round(x, 1) for x in os.getloadavg()], "cpus": os.cpu_count()}
    try:
        client.initialize(root, {"window": {"workDoneProgress": True},
                                 "textDocument": {"hover": {"contentFormat": ["markdown"]}}},
                          {"workspaceTrusted": True})
        client.notify("initialized", {})
        client.wait(lambda m: m.get("method") == "$/progress" and m["params"]["value"].get("kind") == "end", timeout=300)
        triage = root / "agents" / "triage.agent.yaml"
        other = root / "agents" / "writer.agent.yaml"
        text, other_text = triage.read_text(), other.read_text()
        for path, body in ((triage, text), (other, other_text)):
            client.notify("textDocument/didOpen", {"textDocument": {"uri": path.as_uri(), "languageId": "yaml",
                                                                    "version": 1, "text": body}})
        targets = [position_of(text, "triage"), position_of(text, "tickets\n")]

        def hover(n: int) -> float:
            seconds, result = client.call("textDocument/hover", {"textDocument": {"uri": triage.as_uri()},
                                                                 "position": targets[n % 2]})
            shown = result["contents"]["value"] if result else ""
            assert "**Tokens**" in shown and "cannot count" not in shown, shown
            return seconds * 1000

        results["first_hover_ms"] = round(hover(0), 1)
        results["figures"] = client.call("textDocument/hover", {"textDocument": {"uri": triage.as_uri()},
                                                                "position": targets[0]})[1]["contents"]["value"] \
            .split("\n\n---\n\n")[-1]
        results["warm"] = summary("warm", [hover(n) for n in range(args.hovers)])
        after_edit = []
        for n in range(args.edits):
            client.notify("textDocument/didChange", {"textDocument": {"uri": other.as_uri(), "version": n + 2},
                                                     "contentChanges": [{"text": other_text + " " * (n % 2)}]})
            after_edit.append(hover(n))
        results["after_an_edit"] = summary("after an edit", after_edit)
        results["load_after"] = [round(x, 1) for x in os.getloadavg()]
        client.shutdown()
    finally:
        client.kill()
        shutil.rmtree(root.parent, ignore_errors=True)
    results["target"] = {"warm_p95_ms": 10}
    print(json.dumps(results, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
