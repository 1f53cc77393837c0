"""Long and hostile streams through `oscova-lsp run --json` (a subprocess, the real `openai` client, the local
server): streamed text is joined in linear time and a key the endpoint splits across
chunks never reaches an event or the transcript."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from oscova_lsp.runs.transcript import read_transcript

from tests.support.cli_zygote import module_command
from tests.support.fake_openai import FakeOpenAI, Reply

from .conftest import CANARY_KEY
from .test_cli import cli_env

LONG_STREAM = 100_000
CHUNK = "word " * 20
"""100,000 chunks of 100 characters (10 MB): 183 s when each delta was concatenated to the text so far
(quadratic), about 12 s on a loaded 2-core machine when the pieces are joined once (linear)."""
LONG_STREAM_LIMIT = 90
"""Seconds: seven times the linear time, half the quadratic time."""


def run_events(workspace: Path, agent: str = "echo", timeout: float = 60) -> list[dict[str, Any]]:
    try:
        result = subprocess.run(module_command("run", agent, "--input", "hi", "--json"),
                                cwd=workspace, env=cli_env(), stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the run did not end within {timeout:g} s")
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize("chunk_size", [1, 3, 7, 16])
def test_a_key_split_across_chunks_never_appears_in_events_or_the_transcript(workspace, fake_openai, chunk_size):
    text = f"Your key is {CANARY_KEY}, and again:{CANARY_KEY}. Done {CANARY_KEY[:5]}"
    fake_openai.enqueue(Reply(text=text, chunk_size=chunk_size))
    events = run_events(workspace)
    redacted = text.replace(CANARY_KEY, "***")
    deltas = [e["text"] for e in events if e["kind"] == "delta"]
    assert "".join(deltas) == redacted  # nothing lost: the held-back tail ("sk-ca") is sent at the end
    assert events[-1]["kind"] == "completed" and events[-1]["text"] == redacted
    transcript = Path(events[0]["transcript"])
    assert CANARY_KEY not in transcript.read_text()
    assert [e["kind"] for e in read_transcript(str(transcript))] == [e["kind"] for e in events]
    assert all(CANARY_KEY not in json.dumps(e) for e in events)


def test_a_long_stream_is_joined_once(workspace, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(text=CHUNK * LONG_STREAM, chunk_size=len(CHUNK)))
    events = run_events(workspace, timeout=LONG_STREAM_LIMIT)
    deltas = [e["text"] for e in events if e["kind"] == "delta"]
    assert events[-1]["kind"] == "completed" and events[-1]["text"] == CHUNK * LONG_STREAM
    assert "".join(deltas) == CHUNK * LONG_STREAM
    # Text that streams faster than the event interval goes out together: not one event per chunk.
    assert len(deltas) < LONG_STREAM / 10
    transcript = read_transcript(events[0]["transcript"])
    assert transcript[-1]["kind"] == "completed" and len(transcript) == len(events)
