"""Language server benchmark (docs/performance.md): a workspace of 1,000 definitions and 1,000 templates, the server
spawned over stdio and driven with raw JSON-RPC.

Measures: time from spawn to the `initialize` answer; time from spawn to the end of the background
check (its work-done progress `end`); didChange -> publishDiagnostics of that version, p50/p95, with the
debounce subtracted; completion and hover round trips p50/p95; the server's peak RSS (VmHWM).

    .venv/bin/python benchmarks/server_bench.py [--definitions 1000] [--templates 1000] [--edits 200]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from workspace_gen import generate  # noqa: E402  (the workspace every benchmark uses)

DEBOUNCE_MS = 50

class Client:
    """Raw JSON-RPC over the server's stdio, with a reader thread."""

    def __init__(self, command: list[str]) -> None:
        self.spawned = time.perf_counter()
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.inbox: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        """Each message, stamped when it is read. The header is read a line at a time (a byte at a time, this
        client took longer over a start's 2,646 publications than the server did to write them)."""
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = None
            while (line := stream.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if not line or length is None:
                return
            self.inbox.put((time.perf_counter(), json.loads(stream.read(length))))

    def send(self, payload: dict[str, Any]) -> float:
        body = json.dumps(payload).encode()
        assert self.proc.stdin is not None
        sent = time.perf_counter()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return sent

    def notify(self, method: str, params: Any) -> float:
        return self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def wait(self, predicate, timeout: float = 120) -> tuple[float, dict[str, Any]]:
        deadline = time.perf_counter() + timeout
        while True:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError("no matching message")
            at, message = self.inbox.get(timeout=remaining)
            if "method" in message and "id" in message:  # a request from the server: accept it
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            if predicate(message):
                return at, message

    def call(self, method: str, params: Any) -> tuple[float, Any]:
        started = time.perf_counter()
        msg_id = self.request(method, params)
        at, message = self.wait(lambda m: m.get("id") == msg_id and "method" not in m)
        return at - started, message.get("result")

    def initialize(self, root: Path, capabilities: dict[str, Any], options: Any = None) -> float:
        """`initialize` for the workspace folder `root`; the time of its answer (perf_counter)."""
        uri = root.as_uri()
        init_id = self.request("initialize", {
            "processId": os.getpid(), "rootUri": uri, "workspaceFolders": [{"uri": uri, "name": "bench"}],
            "capabilities": capabilities, **({"initializationOptions": options} if options is not None else {})})
        at, _ = self.wait(lambda m: m.get("id") == init_id)
        return at

    def kill(self) -> None:
        """The end whatever happened: the process killed if it is still there."""
        if self.proc.poll() is None:
            self.proc.kill()

    def shutdown(self) -> None:
        """The orderly end: `shutdown`, its answer, `exit`, the process gone."""
        msg_id = self.request("shutdown", None)
        self.wait(lambda m: m.get("id") == msg_id)
        self.notify("exit", None)
        self.proc.wait(10)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def summary(name: str, values_ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(values_ms), 2), "p95_ms": round(pct(values_ms, 95), 2),
            "max_ms": round(max(values_ms), 2), "n": len(values_ms)}


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="definitions, and as many templates")
    parser.add_argument("--edits", type=int, default=200)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--keep", action="store_true", help="keep the generated workspace")
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="oscova-bench-")) / "ws"
    generate(root, args.count)
    client = Client([sys.executable, "-m", "oscova_lsp"])
    files = list(root.rglob("*.agent.yaml")), list(root.rglob("*.j2"))
    results: dict[str, Any] = {"workspace": {"definitions": len(files[0]), "templates": len(files[1]),
                                             "cpus": os.cpu_count()}}
    try:
        capabilities = {"window": {"workDoneProgress": True},
                        "textDocument": {"publishDiagnostics": {"versionSupport": True},
                                         "hover": {"contentFormat": ["markdown"]}}}
        at = client.initialize(root, capabilities, {"oscova": {"debounce": DEBOUNCE_MS}})
        results["initialize_s"] = round(at - client.spawned, 3)
        client.notify("initialized", {})
        at, _ = client.wait(lambda m: m.get("method") == "$/progress" and m["params"]["value"].get("kind") == "end",
                            timeout=600)
        results["background_check_end_s"] = round(at - client.spawned, 3)

        # didChange -> publishDiagnostics of that version, debounce subtracted.
        docs = []
        for i in range(10):
            definition = root / "agents" / f"agent_{args.count - 1 - i}.agent.yaml"  # inline instructions
            template = root / "templates" / f"agent_{i}.j2"
            for path in (definition, template):
                text = path.read_text()
                client.notify("textDocument/didOpen", {"textDocument": {
                    "uri": path.as_uri(), "languageId": "yaml" if path.suffix == ".yaml" else "jinja",
                    "version": 1, "text": text}})
                opened = path.as_uri()
                docs.append([opened, text, 1])
                client.wait(lambda m, u=opened: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == u and m["params"].get("version") == 1)
        latencies = []
        slowest: list[tuple[float, str, int]] = []
        for n in range(args.edits):
            doc = docs[n % len(docs)]
            doc[2] += 1
            marker = f"{{{{ unbound_{n} }}}}" if n % 2 == 0 else ""
            # Definitions get the variable inside their inline instructions, templates at the end.
            text = doc[1].replace("{{ team }}", "{{ team }}" + marker, 1) if doc[0].endswith(".yaml") else doc[1] + marker
            sent = client.notify("textDocument/didChange", {
                "textDocument": {"uri": doc[0], "version": doc[2]},
                "contentChanges": [{"text": text}]})
            at, message = client.wait(lambda m, d=doc: m.get("method") == "textDocument/publishDiagnostics"
                                      and m["params"]["uri"] == d[0] and m["params"].get("version") == d[2])
            flagged = any(f"unbound_{n}`" in d["message"] for d in message["params"]["diagnostics"])
            assert flagged == bool(marker), message["params"]["diagnostics"]
            latencies.append((at - sent) * 1000 - DEBOUNCE_MS)
            slowest.append((latencies[-1], doc[0].rsplit("/", 1)[-1], n))
        results["edit_to_diagnostics_after_debounce"] = summary("edit", latencies)
        print("slowest edits:", sorted(slowest, reverse=True)[:8], file=sys.stderr)

        # Completion inside `{{ }}` of a template, and hover on a variable.
        template_uri = (root / "templates" / "agent_1.j2").as_uri()
        definition_uri = (root / "agents" / f"agent_{args.count - 1}.agent.yaml").as_uri()
        times = []
        for n in range(args.queries):
            seconds, result = client.call("textDocument/completion", {
                "textDocument": {"uri": template_uri}, "position": {"line": 1, "character": 10 + n % 3}})
            assert result and result["items"], result
            times.append(seconds * 1000)
        results["completion_template"] = summary("completion", times)
        times = []
        for _ in range(args.queries):
            seconds, result = client.call("textDocument/completion", {
                "textDocument": {"uri": definition_uri}, "position": {"line": 6, "character": 14}})
            times.append(seconds * 1000)
        results["completion_agent_tools"] = summary("completion", times)
        times = []
        for _ in range(args.queries):
            seconds, result = client.call("textDocument/hover", {
                "textDocument": {"uri": template_uri}, "position": {"line": 1, "character": 14}})
            assert result and "agent_name" in result["contents"]["value"], result
            times.append(seconds * 1000)
        results["hover_variable"] = summary("hover", times)
        times = []
        for _ in range(args.queries):
            seconds, result = client.call("textDocument/hover", {
                "textDocument": {"uri": definition_uri}, "position": {"line": 0, "character": 6}})
            times.append(seconds * 1000)
        results["hover_agent_id"] = summary("hover", times)
        results["server_peak_rss_mb"] = round(peak_rss_mb(client.proc.pid), 1)
        client.shutdown()
    finally:
        client.kill()
        if not args.keep:
            shutil.rmtree(root.parent, ignore_errors=True)
    results["targets"] = {"initialize_s": 0.5, "edit_p95_ms": 20, "completion_hover_p95_ms": 10}
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
