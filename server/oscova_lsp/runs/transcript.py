"""Run transcripts: one JSON object per line under `<root>/.oscova/runs/`.

A line with `kind` is a run event (`events.EVENT_KINDS`). Since version 2 a transcript also records the
run, in lines with `record` instead of `kind`: first a header (`record: "header"`, `version`, the run's
agent, input and session), then one `record: "model"` line per model call (the request as sent, the
response or the error) and one `record: "tool"` line per tool call of any agent of the run (its result or
error), and one `record: "edit"` line per edit a debugger made to a request or a tool call's arguments before
it was sent (`oscova-lsp debug`). That is everything a replay needs (`replay.py`). Keys never appear: every
line is redacted.

Transcripts are read and written through the file gateway (`oscova_runtime.paths`): a transcript is a regular
file inside the workspace holding its `.oscova` folder (or, named outside one, inside its own folder), at most
`MAX_TRANSCRIPT_BYTES`; a run that cannot write its transcript still runs, and a full disk cuts it at a line
end with a last `record: "incomplete"` line saying why, which a replay reports.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import os
import queue
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from oscova_runtime.paths import FileRefused, LineLog, describe_os_error, remove_file, scan_folder
from oscova_runtime.paths import read_lines as read_file_lines

log = logging.getLogger(__name__)

RUNS_DIRECTORY = os.path.join(".oscova", "runs")
MAX_TRANSCRIPT_BYTES = 128_000_000
"""The largest transcript (or case) read: one of a long run with large tool results stays well below it."""
MAX_TRANSCRIPT_LINE = 32_000_000
"""The longest line of one read: a model request with its whole conversation (images included)."""
INCOMPLETE = "incomplete"
"""The `record` of the last line a cut transcript ends with: `{record, reason, lines}`."""


TRANSCRIPT_NAME = re.compile(r"^(?P<stamp>\d{8}T\d{6})-(?P<agent>.+)-(?P<run>[0-9A-Za-z]+)\.jsonl$")
"""The file names `transcript_path` makes: time, agent id (made safe), run id."""


def transcript_boundary(path: str) -> str:
    """The folder a transcript must stay inside, after symlinks: the workspace holding the `.oscova` folder
    it is in, or (a transcript named outside one) its own folder, as written."""
    absolute = os.path.abspath(path)
    parts = absolute.split(os.sep)
    for i in range(len(parts) - 2, 0, -1):
        if parts[i] == ".oscova":
            return os.sep.join(parts[:i]) or os.sep
    return os.path.dirname(absolute)


def transcripts_of_run(runs_dir: str, run: str, *, prefix: bool = False) -> list[str]:
    """The transcripts under `runs_dir` whose run id is `run` (or starts with it, with `prefix`), sorted; none
    when the folder is missing or leads out of its workspace."""
    try:
        entries = scan_folder(runs_dir, root=transcript_boundary(os.path.join(runs_dir, "_")))
    except FileRefused:
        return []
    found = []
    for entry in entries:
        match = TRANSCRIPT_NAME.match(entry.name)
        if match and (match["run"].startswith(run) if prefix else match["run"] == run):
            found.append(os.path.join(runs_dir, entry.name))
    return found


def resolve_transcript(root: str | None, reference: str) -> str:
    """The transcript a command names: a file's path, else the run under `<root>/.oscova/runs/` whose id is
    `reference` or starts with it (the one lookup of `run --replay`, `diff`, `test --save` and the debugger).
    Raises `RecordingError` with words when no run, or more than one, answers to it."""
    if os.path.lexists(reference) and not os.path.isdir(reference):  # a FIFO or a link too: its read says why
        return reference
    runs = os.path.join(root, RUNS_DIRECTORY) if root is not None else None
    if runs is not None and reference and os.sep not in reference and "/" not in reference:
        found = transcripts_of_run(runs, reference, prefix=True)
        exact = [path for path in found if TRANSCRIPT_NAME.match(os.path.basename(path))["run"] == reference]  # type: ignore[index]
        if len(found) == 1 or len(exact) == 1:
            return (exact or found)[0]
        if found:
            names = ", ".join(os.path.basename(path) for path in found[:3]) + ("…" if len(found) > 3 else "")
            raise RecordingError(f"{reference!r} names {len(found)} runs ({names}); give more of the run id")
    where = (f" and no run {reference!r} under {runs} (the last line of `oscova-lsp run` names its transcript; the "
             "run id is the end of its file name)") if runs is not None else ""
    raise RecordingError(f"no transcript at {reference}{where}")


def transcript_path(runs_dir: str, agent_id: str, run_id: str) -> str:
    """`<runs_dir>/<UTC time>-<agent id>-<run id>.jsonl`: sorted by name is sorted by time."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", agent_id)[:64] or "agent"
    return os.path.join(runs_dir, f"{stamp}-{safe}-{run_id}.jsonl")


def _encoded(event: dict[str, Any]) -> bytes:
    """One JSON line; a lone surrogate (a file name that is not UTF-8) is kept as its JSON escape."""
    return (json.dumps(event, ensure_ascii=False, default=str) + "\n").encode("utf-8", "backslashreplace")


class TranscriptWriter:
    """Appends events as they happen, from a thread of its own: JSON encoding and file writes stay off the
    event loop. Each batch of events is written at once, so a crash keeps what ran. A transcript that cannot
    be written (a link leading out, a read-only folder) or that a full disk cuts leaves the run going; `problem`
    then says why, for the run's result."""

    def __init__(self, path: str, root: str | None = None) -> None:
        """`root`: the workspace root the transcript must stay inside (a `.oscova` link leading out is refused,
        and the run goes on without a transcript)."""
        self.path: str | None = path
        self.problem: str | None = None
        """Why the transcript is missing (`path` is then None) or cut short, in words."""
        self._log: LineLog | None = None
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        try:
            self._log = LineLog(path, root=root)
        except FileRefused as refused:
            log.warning("The run transcript %s was not written: %s", path, refused)
            self.problem = f"the transcript could not be written: {refused.cause}"
            self.path = None
            return
        self._thread = threading.Thread(target=self._drain, name="oscova-transcript", daemon=True)
        self._thread.start()

    def write(self, event: dict[str, Any]) -> None:
        """Queues the event (never blocks); the caller must not change it afterwards."""
        if self._thread is not None and self.problem is None:
            self._queue.put(event)

    def close(self) -> None:
        """Asks the writer to finish the queued events and close the file (`wait_closed` waits for it)."""
        if self._thread is not None:
            self._queue.put(None)

    def wait_closed(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _drain(self) -> None:
        lines = self._log
        if lines is None:  # the writer thread starts only once the file is open
            return
        try:
            done = False
            while not done:
                batch = [self._queue.get()]
                while not self._queue.empty():
                    batch.append(self._queue.get())
                done = None in batch
                events = [event for event in batch if event is not None]
                if events and not lines.append(b"".join(_encoded(e) for e in events), len(events)):
                    self._stopped(lines)
                    return
        finally:
            lines.close()

    def _stopped(self, lines: LineLog) -> None:
        """A write failed: the file ends at its last whole line, then (in the space set aside) a line saying
        why; a transcript that got no line at all is removed."""
        why = describe_os_error(lines.failure) if lines.failure is not None else "a write failed"
        kept = lines.lines
        if kept and lines.end(_encoded({"record": INCOMPLETE, "reason": why, "lines": kept})):
            self.problem = f"the transcript was cut after line {kept}: {why}"
        elif kept:
            self.problem = f"the transcript was cut after line {kept}: {why} (and that could not be noted in it)"
        else:
            self.problem = f"the transcript could not be written: {why}"
            lines.close()
            with contextlib.suppress(FileRefused):
                remove_file(lines.path)
            self.path = None
        log.warning("The run transcript %s: %s", lines.path, self.problem)


def read_transcript(path: str) -> list[dict[str, Any]]:
    """The run events of a transcript, in order (recording lines left out)."""
    return [line for line in read_lines(path) if "kind" in line]


def read_lines(path: str) -> list[dict[str, Any]]:
    """Every line of a transcript as JSON; FileRefused when the gateway refuses the file."""
    return [json.loads(line) for line in _text_lines(path, None) if line.strip()]


def _text_lines(path: str, root: str | None) -> Iterator[str]:
    return read_file_lines(path, root=root or transcript_boundary(path), limit=MAX_TRANSCRIPT_BYTES,
                           line_limit=MAX_TRANSCRIPT_LINE)


TRANSCRIPT_VERSION = 4
"""The newest version this oscova-lsp reads and writes. Version 1: events only (no header). Version 2: the
header, model and tool records. Version 3: tool records of agents called as tools too, with the tool call they
were made in (`within`). Version 4: `edit` records of a debugger (only a debug run writes them)."""
OLDEST_REPLAYABLE = 2
NESTED_TOOLS_VERSION = 3
EDITS_VERSION = 4
RUN_VERSION = NESTED_TOOLS_VERSION
"""What a run without a debugger writes: it holds no `edit` records, so an oscova-lsp that reads only version 3
still replays it. A debug run writes `EDITS_VERSION`, which such an oscova-lsp refuses (saying to update)
rather than replaying without the edits and reporting a false drift."""


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
    edits: list[dict[str, Any]] = field(default_factory=list)
    """`{step: "model", call, scope, path, was, value}` or `{step: "tool", callId, within, …}` per edit a
    debugger made before a model request or a tool call (`oscova-lsp debug`); a replay makes them again."""

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

    def moved(item: Any) -> Any:
        if isinstance(item, str):
            return item.replace(old_root, new_root)
        if isinstance(item, list):
            return [moved(part) for part in item]
        if isinstance(item, dict):
            return {moved(key): moved(part) for key, part in item.items()}
        return item

    return moved(value)


def _damage(line: dict[str, Any]) -> str | None:
    """What is wrong with a recording line a replay relies on, if anything."""
    record = line.get("record")
    if record == "model" and not (isinstance(line.get("request"), dict)
                                  and isinstance(line.get("response", {}), dict | None)
                                  and isinstance(line.get("error", {}), dict | None)):
        return "a model record without a request object (or with a response or error that is not one)"
    if record == "tool" and not (isinstance(line.get("callId"), str) and isinstance(line.get("error", {}), dict)):
        return "a tool record without a call id (or with an error that is not an object)"
    if record == "edit" and not (line.get("step") in ("model", "tool") and isinstance(line.get("path"), list)):
        return "an edit record without its step (model or tool) or its path"
    return None


def _recording_lines(path: str, root: str | None) -> list[dict[str, Any]]:
    """The JSON objects of a transcript's lines; RecordingError with a sentence when they cannot serve."""
    shown = os.path.basename(path)
    if not os.path.lexists(path):
        raise RecordingError(f"no transcript at {path}")
    lines: list[dict[str, Any]] = []
    try:
        for number, text in enumerate(_text_lines(path, root), start=1):
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
            if line.get("record") == INCOMPLETE:
                kept = line.get("lines") if isinstance(line.get("lines"), int) else number - 1
                raise RecordingError(f"{shown} is incomplete: {line.get('reason') or 'a write failed'} (the "
                                     f"transcript was cut after line {kept} while the run was recorded); a replay "
                                     "needs the whole run: record it again")
            problem = _damage(line)
            if problem:
                raise RecordingError(f"{shown} is damaged: line {number} is {problem}")
            lines.append(line)
    except FileRefused as refused:
        raise RecordingError(f"{shown}: {refused}") from None
    if not lines:
        raise RecordingError(f"{shown} is not a run transcript: it is empty")
    return lines


def _header_root(shown: str, header: dict[str, Any]) -> str | None:
    root = header.get("root")
    if root is None:
        return None
    if not isinstance(root, str) or not os.path.isabs(root) or "\x00" in root:
        raise RecordingError(f"{shown} is damaged: the header's `root` is not an absolute path ({root!r})")
    return root


def load_recording(path: str, root: str | None = None) -> Recording:
    """Reads a transcript for replay; raises `RecordingError` with a sentence when it cannot serve. `root`: the
    folder it must stay inside after symlinks (default: `transcript_boundary`)."""
    shown = os.path.basename(path)
    lines = _recording_lines(path, root)
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
                          _string(header.get("clock")), _facts(header.get("environment")), _header_root(shown, header),
                          session_id=_string(header.get("sessionId")))
    for line in lines[1:]:
        record = line.get("record")
        if record == "model":
            recording.exchanges.append(line)
        elif record == "tool":
            recording.tools.append(line)
        elif record == "edit":
            recording.edits.append(line)
        elif record == "session" and isinstance(line.get("history"), list):
            recording.history = [m for m in line["history"] if isinstance(m, dict)]
        elif "kind" in line:
            recording.events.append(line)
    return recording
