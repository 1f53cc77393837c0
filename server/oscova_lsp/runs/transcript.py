"""Run transcripts: one JSON object per line under `<root>/.oscova/runs/`.

A line with `kind` is a run event (`events.EVENT_KINDS`). Since version 2 a transcript also records the
run, in lines with `record` instead of `kind`: first a header (`record: "header"`, `version`, the run's
agent, input and session), then one `record: "model"` line per model call (the request as sent, the
response or the error) and one `record: "tool"` line per tool call of any agent of the run (its result or
error). That is everything a replay needs (`replay.py`). Keys never appear: every line is redacted.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import queue
import re
import threading
from dataclasses import dataclass, field
from typing import IO, Any

from oscova_runtime.paths import FileRefused, open_for_writing

log = logging.getLogger(__name__)

RUNS_DIRECTORY = os.path.join(".oscova", "runs")


TRANSCRIPT_NAME = re.compile(r"^(?P<stamp>\d{8}T\d{6})-(?P<agent>.+)-(?P<run>[0-9A-Za-z]+)\.jsonl$")
"""The file names `transcript_path` makes: time, agent id (made safe), run id."""


def transcripts_of_run(runs_dir: str, run: str, *, prefix: bool = False) -> list[str]:
    """The transcripts under `runs_dir` whose run id is `run` (or starts with it, with `prefix`), sorted."""
    try:
        names = sorted(os.listdir(runs_dir))
    except OSError:
        return []
    found = []
    for name in names:
        match = TRANSCRIPT_NAME.match(name)
        if match and (match["run"].startswith(run) if prefix else match["run"] == run):
            found.append(os.path.join(runs_dir, name))
    return found


def transcript_path(runs_dir: str, agent_id: str, run_id: str) -> str:
    """`<runs_dir>/<UTC time>-<agent id>-<run id>.jsonl`: sorted by name is sorted by time."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", agent_id)[:64] or "agent"
    return os.path.join(runs_dir, f"{stamp}-{safe}-{run_id}.jsonl")


class TranscriptWriter:
    """Appends events as they happen, from a thread of its own: JSON encoding and file writes stay off the
    event loop. Each batch of events is flushed, so a crash keeps what ran."""

    def __init__(self, path: str, root: str | None = None) -> None:
        """`root`: the workspace root the transcript must stay inside (a `.oscova` link leading out is refused,
        and the run goes on without a transcript)."""
        self.path: str | None = path
        self._handle: IO[str] | None = None
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        try:
            self._handle = os.fdopen(open_for_writing(path, root=root, append=True), "a", encoding="utf-8")
        except FileRefused as refused:
            log.warning("The run transcript %s was not written: %s", path, refused)
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
    """The run events of a transcript, in order (recording lines left out)."""
    return [line for line in read_lines(path) if "kind" in line]


def read_lines(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


TRANSCRIPT_VERSION = 3
"""Version 1: events only (no header). Version 2: the header, model and tool records. Version 3: tool records
of agents called as tools too, with the tool call they were made in (`within`)."""
OLDEST_REPLAYABLE = 2
NESTED_TOOLS_VERSION = 3


class RecordingError(Exception):
    """A transcript cannot be replayed or compared; the message says why, for the user."""


@dataclass(slots=True)
class Recording:
    """A recorded run, read from its transcript."""

    path: str
    version: int
    run_id: str
    agent_id: str
    input: str
    approvals: bool
    """Whether the run had an approval channel (approval-required tools are offered only then)."""
    clock: str | None = None
    """The time the run's templates showed (ISO 8601); a replay shows the same."""
    environment: dict[str, str] | None = None
    """The machine's facts the environment provider showed; a replay shows the same."""
    root: str | None = None
    """The workspace root of the run: paths under it compare equal to the same paths under another root."""
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    """`{index, within, request, response?, error?}` per model call, in order; `within` is the id of the
    tool call the call was made in (an agent called as a tool; the innermost one), else None."""
    tools: list[dict[str, Any]] = field(default_factory=list)
    """`{callId, name, arguments, within, result? | error?, terminate}` per tool call, of the requested agent
    (`within` None) and (since version 3) of the agents it calls as tools."""
    events: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    """The conversation the run continued (its session's stored messages), `recorder.message_record` form."""
    session_id: str | None = None

    @property
    def status(self) -> str | None:
        """The final event's kind (`completed`, `failed`, `cancelled`), or None for a run cut short."""
        last = self.events[-1]["kind"] if self.events else None
        return last if last in ("completed", "failed", "cancelled") else None

    @property
    def text(self) -> str:
        return str(self.events[-1].get("text", "")) if self.status else ""


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _facts(value: Any) -> dict[str, str] | None:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else None


def relocate(value: Any, old_root: str | None, new_root: str | None) -> Any:
    """`value` with the workspace root `old_root` written as `new_root` in its strings (JSON-ready data)."""
    if not old_root or not new_root or old_root == new_root:
        return value
    old, new = json.dumps(old_root)[1:-1], json.dumps(new_root)[1:-1]
    return json.loads(json.dumps(value, ensure_ascii=False).replace(old, new))


def _damage(line: dict[str, Any]) -> str | None:
    """What is wrong with a recording line a replay relies on, if anything."""
    record = line.get("record")
    if record == "model" and not (isinstance(line.get("request"), dict)
                                  and isinstance(line.get("response", {}), dict | None)
                                  and isinstance(line.get("error", {}), dict | None)):
        return "a model record without a request object (or with a response or error that is not one)"
    if record == "tool" and not (isinstance(line.get("callId"), str) and isinstance(line.get("error", {}), dict)):
        return "a tool record without a call id (or with an error that is not an object)"
    return None


def load_recording(path: str) -> Recording:
    """Reads a transcript for replay; raises `RecordingError` with a sentence when it cannot serve."""
    shown = os.path.basename(path)
    try:
        with open(path, encoding="utf-8") as handle:
            texts = handle.read().splitlines()
    except FileNotFoundError:
        raise RecordingError(f"no transcript at {path}") from None
    except IsADirectoryError:
        raise RecordingError(f"{path} is a folder, not a transcript") from None
    except OSError as error:
        raise RecordingError(f"the transcript {path} cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise RecordingError(f"{shown} is not a run transcript (not UTF-8 text)") from None
    lines: list[dict[str, Any]] = []
    for number, text in enumerate(texts, start=1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            line = None
        if not isinstance(line, dict):
            if not lines:
                raise RecordingError(f"{shown} is not a run transcript (JSON lines)")
            raise RecordingError(f"{shown} is damaged: line {number} is not a JSON object (cut short by a crash?)")
        problem = _damage(line)
        if problem:
            raise RecordingError(f"{shown} is damaged: line {number} is {problem}")
        lines.append(line)
    if not lines:
        raise RecordingError(f"{shown} is not a run transcript: it is empty")
    header = lines[0]
    if header.get("record") != "header":
        if "kind" in header:
            raise RecordingError(f"{shown} was recorded before transcript version {OLDEST_REPLAYABLE}: it holds the "
                                 "run's events but not the model requests and tool results a replay needs; record "
                                 "the run again")
        raise RecordingError(f"{shown} is not a run transcript (no header line)")
    version = header.get("version")
    if not isinstance(version, int) or version < OLDEST_REPLAYABLE:
        raise RecordingError(f"{shown} was recorded before transcript version {OLDEST_REPLAYABLE}; record the run "
                             "again")
    if version > TRANSCRIPT_VERSION:
        raise RecordingError(f"{shown} has transcript version {version}, newer than this oscova-lsp reads "
                             f"({TRANSCRIPT_VERSION}); update oscova-lsp")
    recording = Recording(path, version, str(header.get("runId", "")), str(header.get("agentId", "")),
                          str(header.get("input", "")), bool(header.get("approvals")),
                          _string(header.get("clock")), _facts(header.get("environment")), _string(header.get("root")),
                          session_id=_string(header.get("sessionId")))
    for line in lines[1:]:
        record = line.get("record")
        if record == "model":
            recording.exchanges.append(line)
        elif record == "tool":
            recording.tools.append(line)
        elif record == "session" and isinstance(line.get("history"), list):
            recording.history = [m for m in line["history"] if isinstance(m, dict)]
        elif "kind" in line:
            recording.events.append(line)
    return recording
