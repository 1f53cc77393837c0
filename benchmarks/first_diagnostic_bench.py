"""The first answers after spawn: `initialize`, the first `publishDiagnostics`, the first publication of
each opened document, the first correct hover and the last diagnostic of the initial check, cold and warm, on
`examples/` and on N + N generated files (`workspace_gen`), median of five, with `python -c pass` timed in the
same run for scale, and the floor a cold start's first check stands on: an interpreter that imports PyYAML,
jinja2 and pydantic and builds the definition models, nothing else.

The server is spawned over stdio as an editor does; right after `initialized` the client opens a template and
the definition that renders it, and asks for the hover of the template's first `{{ variable }}`, again until
the answer names the variable (the answers that did not are counted: a right server has none). The
publications of the two opened documents that differ from their first are counted too (`opened_changed`: a
first publication that is final has none). Cold: an empty cache directory for every start. Warm:
the cache one start wrote, for five more. "Last diagnostic": the last `publishDiagnostics` that changed
what the editor shows (a file's diagnostics other than those it last got), once the initial check's
progress ended and `--quiet` seconds passed without another publication.

    .venv/bin/python benchmarks/first_diagnostic_bench.py [--count 5000] [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from server_bench import Client  # noqa: E402
from workspace_gen import generate  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
VARIABLE = re.compile(r"\{\{ ([a-z_]+)")


def hover_target(root: Path) -> tuple[Path, dict[str, int], str]:
    """The first `{{ variable }}` of the templates: (the file, its position, the name)."""
    for path in sorted(root.glob("templates/*.j2")):
        for number, line in enumerate(path.read_text().splitlines()):
            if found := VARIABLE.search(line):
                return path, {"line": number, "character": found.start(1) + 1}, found.group(1)
    raise SystemExit(f"no template of {root} uses a variable")


def agent_target(root: Path, template: Path) -> Path:
    """The definition that renders `template`, else the first definition."""
    agents = sorted(root.glob("agents/*.agent.yaml"))
    return next((a for a in agents if template.name in a.read_text()), agents[0])


def once(root: Path, cache: Path, quiet: float) -> dict[str, float]:
    os.environ["OSCOVA_LSP_CACHE_DIR"] = str(cache)
    template, position, name = hover_target(root)
    agent = agent_target(root, template)
    opened = {template.as_uri(): "opened_template_s", agent.as_uri(): "opened_agent_s"}
    firsts: dict[str, Any] = {}
    client = Client([sys.executable, "-m", "oscova_lsp"])
    out = {"wrong_hovers": 0.0, "refused_hovers": 0.0, "opened_changed": 0.0}
    shown: dict[str, Any] = {}
    try:
        out["initialize_s"] = client.initialize(root, {"window": {"workDoneProgress": True}}) - client.spawned
        client.notify("initialized", {})
        for document, language in ((template, "jinja"), (agent, "yaml")):
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": document.as_uri(), "languageId": language, "version": 1, "text": document.read_text()}})
        hover = client.request("textDocument/hover", {"textDocument": {"uri": template.as_uri()}, "position": position})
        last = scan_end = None
        while "hover_s" not in out or scan_end is None or time.perf_counter() - max(last or 0, scan_end) < quiet:
            try:
                at, message = client.inbox.get(timeout=quiet if scan_end is not None else 600)
            except queue.Empty:
                break
            if "method" in message and "id" in message:  # the server's requests (progress, registration)
                client.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif message.get("method") == "textDocument/publishDiagnostics":
                out.setdefault("first_diagnostic_s", at - client.spawned)
                params = message["params"]
                if params["uri"] in opened:  # an open document: its first publication, and any that differs
                    out.setdefault(opened[params["uri"]], at - client.spawned)
                    firsts.setdefault(params["uri"], params["diagnostics"])
                    out["opened_changed"] += firsts[params["uri"]] != params["diagnostics"]
                if shown.get(params["uri"]) != params["diagnostics"]:  # what the editor shows changed
                    shown[params["uri"]] = params["diagnostics"]
                    last = at
            elif message.get("method") == "$/progress" and message["params"]["value"].get("kind") == "end":
                scan_end = at
            elif message.get("id") == hover and "hover_s" not in out:
                if name in json.dumps(message.get("result")):
                    out["hover_s"] = at - client.spawned
                else:  # an error: refused while the root is read (ContentModified), the editor asks again
                    out["refused_hovers" if "error" in message else "wrong_hovers"] += 1
                    hover = client.request("textDocument/hover", {
                        "textDocument": {"uri": template.as_uri()}, "position": position})
        out["last_diagnostic_s"] = (last - client.spawned) if last else float("nan")
        client.shutdown()
    finally:
        client.kill()
    return out


def bare_interpreter() -> float:
    return timed_interpreter("pass")


LIBRARY_FLOOR = ("import yaml, jinja2, pydantic.main\n"
                 "import oscova_runtime.definition, oscova_runtime.host_config, oscova_runtime.evaluation")
"""What a first check cannot start without: the parsers and pydantic imported, the definition, host and
evaluation models built (pydantic imports `importlib.metadata` for its plugins with the first one)."""


def timed_interpreter(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.median(run[key] for run in runs), 3) for key in runs[0]}


def measure(root: Path, work: Path, runs: int, quiet: float) -> dict[str, dict[str, float]]:
    cold = [once(root, Path(tempfile.mkdtemp(dir=work)), quiet) for _ in range(runs)]
    warm_cache = Path(tempfile.mkdtemp(dir=work))
    once(root, warm_cache, quiet)  # writes the cache the warm starts read
    warm = [once(root, warm_cache, quiet) for _ in range(runs)]
    return {"cold": median(cold), "warm": median(warm)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=5000, help="definitions and templates generated (0: skip)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quiet", type=float, default=1.0, help="seconds without a publication that end a start")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="oscova-first-"))
    try:
        examples = work / "examples"
        shutil.copytree(EXAMPLES, examples)
        report: dict[str, Any] = {"load_average": round(os.getloadavg()[0], 2)}
        report["python -c pass"] = round(statistics.median(bare_interpreter() for _ in range(args.runs)), 3)
        report["libraries and models"] = round(statistics.median(
            timed_interpreter(LIBRARY_FLOOR) for _ in range(args.runs)), 3)
        report["examples/"] = measure(examples, work, args.runs, args.quiet)
        if args.count:
            report[f"{args.count} + {args.count}"] = measure(generate(work / "gen", args.count), work, args.runs,
                                                              args.quiet)
        report["load_average_after"] = round(os.getloadavg()[0], 2)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"python -c pass: {report['python -c pass']:.3f} s; the libraries and models a first check needs: "
          f"{report['libraries and models']:.3f} s; load average {report['load_average']} → "
          f"{report['load_average_after']}")
    for workspace in [key for key in report if key.endswith("/") or "+" in key]:
        for start, values in report[workspace].items():
            print(f"{workspace:>12} {start:<4} " + "  ".join(f"{k} {v:.3f}" for k, v in values.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
