"""A workspace whose saved cases and transcripts are hostile: links to the server's
own stdin (`/proc/self/fd/0`), `/dev/zero` and `/etc/shadow`, and FIFOs, beside good ones. Used by
tests/server/test_hostile_cases.py and benchmarks/responsiveness_bench.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support.host_files import MODELS

DEFINITION = "agents/echo.agent.yaml"


def transcript_lines(run_id: str) -> str:
    """A small version-2 transcript of a completed run of `echo` (a header and the final event)."""
    header = {"record": "header", "version": 2, "runId": run_id, "agentId": "echo", "input": "hi", "approvals": False}
    final = {"runId": run_id, "seq": 1, "kind": "completed", "text": "hi"}
    return json.dumps(header) + "\n" + json.dumps(final) + "\n"


def hostile_workspace(base: Path) -> Path:
    """`.oscova/tests/` with a good case and, sorted first, the hostile ones; `.oscova/runs/` with a good
    transcript and a later one of the same agent that is a link to `/dev/zero`."""
    root = base / "ws"
    (root / "agents").mkdir(parents=True)
    (root / "oscova.toml").write_text(MODELS)
    (root / DEFINITION).write_text("id: echo\ninstructions: Repeat the query.\n")
    tests = root / ".oscova" / "tests"
    tests.mkdir(parents=True)
    os.symlink("/proc/self/fd/0", tests / "a-stdin.jsonl")  # first: the unchanged code read its stdin here
    os.mkfifo(tests / "b-fifo.jsonl")
    os.symlink("/dev/zero", tests / "c-zero.jsonl")
    os.symlink("/etc/shadow", tests / "d-shadow.jsonl")
    (tests / "good.jsonl").write_text(transcript_lines("r1"))
    runs = root / ".oscova" / "runs"
    runs.mkdir()
    (runs / "20260101T000000-echo-r1.jsonl").write_text(transcript_lines("r1"))
    os.symlink("/dev/zero", runs / "20260101T000001-echo-zero.jsonl")
    os.mkfifo(runs / "20260101T000002-echo-fifo.jsonl")
    return root
