"""Run transcripts: one JSON event per line under `<root>/.oscova/runs/`."""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import queue
import re
import threading
from typing import IO, Any

log = logging.getLogger(__name__)

RUNS_DIRECTORY = os.path.join(".oscova", "runs")


def transcript_path(runs_dir: str, agent_id: str, run_id: str) -> str:
    """`<runs_dir>/<UTC time>-<agent id>-<run id>.jsonl`: sorted by name is sorted by time."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", agent_id)[:64] or "agent"
    return os.path.join(runs_dir, f"{stamp}-{safe}-{run_id}.jsonl")


class TranscriptWriter:
    """Appends events as they happen, from a thread of its own: JSON encoding and file writes stay off the
    event loop. Each batch of events is flushed, so a crash keeps what ran."""

    def __init__(self, path: str) -> None:
        self.path: str | None = path
        self._handle: IO[str] | None = None
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by the writer thread
        except OSError as error:
            log.warning("The run transcript %s could not be written: %s", path, error.strerror or error)
            self.path = None
            return
        self._thread = threading.Thread(target=self._drain, name="oscova-transcript", daemon=True)
        self._thread.start()

    def write(self, event: dict[str, Any]) -> None:
        """Queues the event (never blocks); the caller must not change it afterwards."""
        if self._thread is not None and self.path is not None:
            self._queue.put(event)

    def close(self) -> None:
        """Asks the writer to finish the queued events and close the file (`wait_closed` waits for it)."""
        if self._thread is not None:
            self._queue.put(None)

    def wait_closed(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _drain(self) -> None:
        handle = self._handle
        if handle is None:  # the writer thread starts only once the file is open
            return
        try:
            while True:
                event = self._queue.get()
                if event is None:
                    break
                handle.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
                if self._queue.empty():
                    handle.flush()
        except OSError as error:
            log.warning("The run transcript %s could not be written: %s", self.path, error.strerror or error)
            self.path = None  # later events are dropped, not queued
        finally:
            self._handle = None
            try:
                handle.close()
            except OSError:
                pass


def read_transcript(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
