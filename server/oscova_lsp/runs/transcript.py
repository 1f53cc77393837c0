"""Run transcripts: one JSON event per line under `<root>/.oscova/runs/`."""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import re
from typing import IO, Any

log = logging.getLogger(__name__)

RUNS_DIRECTORY = os.path.join(".oscova", "runs")


def transcript_path(runs_dir: str, agent_id: str, run_id: str) -> str:
    """`<runs_dir>/<UTC time>-<agent id>-<run id>.jsonl`: sorted by name is sorted by time."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", agent_id)[:64] or "agent"
    return os.path.join(runs_dir, f"{stamp}-{safe}-{run_id}.jsonl")


class TranscriptWriter:
    """Appends events as they happen, flushed per line, so a crash keeps what ran."""

    def __init__(self, path: str) -> None:
        self.path: str | None = path
        self._handle: IO[str] | None = None
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        except OSError as error:
            log.warning("The run transcript %s could not be written: %s", path, error.strerror or error)
            self.path = None

    def write(self, event: dict[str, Any]) -> None:
        if self._handle is None:
            return
        try:
            self._handle.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
            self._handle.flush()
        except OSError as error:
            log.warning("The run transcript %s could not be written: %s", self.path, error.strerror or error)
            self.close()

    def close(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            try:
                handle.close()
            except OSError:
                pass


def read_transcript(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
