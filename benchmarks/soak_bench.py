"""Soak benchmark: the server as a subprocess over stdio, 100,000 incremental edits and 1,000 runs
(`oscova.runAgent`, streamed by the local OpenAI-compatible server of `tests/support/fake_openai.py`), with
the server's RSS at the start and at the end; then a 50 MB document opened and edited incrementally, with
the cost of an edit.

    .venv/bin/python benchmarks/soak_bench.py [--edits 100000] [--runs 1000] [--large-mb 50]

To compare with another checkout: PYTHONPATH=/path/to/old/server:/path/to/old/runtime .venv/bin/python ...
(the server is spawned with this interpreter and this environment).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.fake_openai import FakeOpenAI, Reply  # noqa: E402
from tests.support.lsp_frames import frame, read_frame  # noqa: E402
from tests.support.run_workspace import host_toml, write_workspace  # noqa: E402

KEY_VARIABLE = "OSCOVA_SOAK_KEY"


class Server:
    """Raw JSON-RPC over the server's stdio; requests from the server are answered with null."""

    def __init__(self, root: Path) -> None:
        env = {**os.environ, KEY_VARIABLE: "sk-soak"}
        self.proc = subprocess.Popen([sys.executable, "-m", "oscova_lsp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=root, env=env)
        self.answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while (message := read_frame(stream)) is not None:
            if "method" in message and "id" in message:
                self.send(frame({"jsonrpc": "2.0", "id": message["id"], "result": None}))
            elif "method" not in message:
                self.answers.put(message)

    def send(self, data: bytes) -> None:
        with self._lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        msg_id = self.next_id
        self.send(frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
        while True:
            message = self.answers.get(timeout=120)
            if message.get("id") == msg_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")


def edit(uri: str, version: int, line: int, text: str, end: int = 1) -> bytes:
    return frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": version},
        "contentChanges": [{"range": {"start": {"line": line, "character": 0},
                                      "end": {"line": line, "character": end}}, "text": text}]}})


def open_document(server: Server, uri: str, text: str, language: str) -> None:
    server.send(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}}}))


def soak(server: Server, root: Path, edits: int, runs: int) -> dict[str, float]:
    path = root / "agents" / "echo.agent.yaml"
    uri = path.as_uri()
    open_document(server, uri, path.read_text(), "yaml")
    version = 1

    def edit_batch(count: int) -> None:
        nonlocal version
        batch = []
        for _ in range(count):
            version += 1
            batch.append(edit(uri, version, 0, "iI"[version % 2]))
            if len(batch) == 1000:
                server.send(b"".join(batch))
                batch = []
                server.request("workspace/symbol", {"query": "zz"})  # in step: the pipe never fills
        server.send(b"".join(batch))
        server.request("workspace/symbol", {"query": "zz"})

    def run_batch(count: int) -> None:
        for index in range(count):
            result = server.request("workspace/executeCommand", {"command": "oscova.runAgent", "arguments": [
                {"agentId": "echo", "input": f"say {index}", "uri": uri}]})
            if result["status"] != "completed":
                raise RuntimeError(f"run {index} ended {result['status']}: {result.get('error')}")

    edit_batch(2000)  # warm up: caches, pools, the runtime's first import
    run_batch(20)
    start = server.rss_mb()
    started = time.perf_counter()
    edit_batch(edits)
    edits_seconds = time.perf_counter() - started
    after_edits = server.rss_mb()
    started = time.perf_counter()
    run_batch(runs)
    runs_seconds = time.perf_counter() - started
    end = server.rss_mb()
    return {"rss_start_mb": start, "rss_after_edits_mb": after_edits, "rss_end_mb": end,
            "growth_mb": end - start, "edits_seconds": edits_seconds, "runs_seconds": runs_seconds}


def large_document(server: Server, root: Path, megabytes: int, count: int = 200) -> dict[str, float]:
    uri = (root / "big.jinja").as_uri()
    line = "{# a line of filler text, eighty characters long, in a very large template #}\n"
    lines = megabytes * 1024 * 1024 // len(line)
    open_document(server, uri, line * lines, "jinja")
    server.request("workspace/symbol", {"query": "zz"})
    started = time.perf_counter()
    for version in range(2, count + 2):
        server.send(edit(uri, version, (version * 7919) % lines, "{#", end=2))
    server.request("workspace/symbol", {"query": "zz"})
    per_edit = (time.perf_counter() - started) / count
    return {"large_mb": megabytes, "large_edit_ms": per_edit * 1000}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--large-mb", type=int, default=50)
    args = parser.parse_args()
    fake = FakeOpenAI().start()
    fake.responder = lambda body: Reply(text="Repeated: " + str(body["messages"][-1].get("content"))[:40])
    try:
        with tempfile.TemporaryDirectory() as directory:
            root = write_workspace(Path(directory) / "ws", host_toml(fake.base_url, KEY_VARIABLE))
            server = Server(root)
            try:
                server.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
                                              "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}]})
                server.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
                figures = soak(server, root, args.edits, args.runs)
                figures.update(large_document(server, root, args.large_mb))
            finally:
                server.proc.kill()
                server.proc.wait()
    finally:
        fake.stop()
    print(f"{args.edits:,} edits in {figures['edits_seconds']:.1f} s, {args.runs:,} runs in "
          f"{figures['runs_seconds']:.1f} s")
    print(f"RSS: start {figures['rss_start_mb']:.1f} MB, after the edits {figures['rss_after_edits_mb']:.1f} MB, "
          f"end {figures['rss_end_mb']:.1f} MB (growth {figures['growth_mb']:+.1f} MB)")
    print(f"a {args.large_mb} MB document: {figures['large_edit_ms']:.2f} ms per incremental edit")
    print(json.dumps({k: round(v, 2) for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
