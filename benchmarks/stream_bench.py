"""Long-stream benchmark: one `oscova-lsp run --json` whose model streams N deltas of
100 characters as fast as the local fake endpoint can send them; wall time of the whole command
(interpreter start included) and the delta events it printed.

Run: .venv/bin/python benchmarks/stream_bench.py [--deltas 100000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.fake_openai import FakeOpenAI, Reply  # noqa: E402
from tests.support.run_workspace import host_toml, write_workspace  # noqa: E402

CHUNK = "word " * 20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=100_000)
    options = parser.parse_args()
    server = FakeOpenAI().start()
    server.responder = lambda body: Reply(text=CHUNK * options.deltas, chunk_size=len(CHUNK))
    try:
        with tempfile.TemporaryDirectory() as folder:
            root = write_workspace(Path(folder) / "ws", host_toml(server.base_url, None, timeout=60))
            start = time.monotonic()
            result = subprocess.run([sys.executable, "-m", "oscova_lsp", "run", "echo", "--input", "hi", "--json"],
                                    cwd=root, capture_output=True, text=True, check=True)
            elapsed = time.monotonic() - start
    finally:
        server.stop()
    events = [json.loads(line) for line in result.stdout.splitlines()]
    deltas = sum(e["kind"] == "delta" for e in events)
    text = len(events[-1]["text"])
    print(f"{options.deltas:,} deltas ({text / 1e6:.1f} MB): {elapsed:.1f} s, {events[-1]['kind']}, "
          f"{deltas} delta events")


if __name__ == "__main__":
    main()
