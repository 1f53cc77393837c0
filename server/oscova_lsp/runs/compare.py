"""Comparing a run with the previous run of the same agent, as an editor's diff view shows it: each run's
model requests rendered as text (`diff.render_requests`, the form `oscova-lsp diff` shows), side by side.
"""

from __future__ import annotations

import os

from oscova_runtime.paths import FileRefused, scan_folder

from ..wire.commands import Comparison, RunRequests
from .diff import render_requests
from .transcript import TRANSCRIPT_NAME, RecordingError, load_recording, transcript_boundary

NO_REQUEST = "(this run sent no model request)\n"


def previous_transcript(path: str) -> str | None:
    """The transcript of the run of the same agent that started before this one, in the same folder (listed
    inside the workspace the transcript belongs to: a folder leading out has none)."""
    folder, name = os.path.split(os.path.abspath(path))
    match = TRANSCRIPT_NAME.match(name)
    if match is None:
        return None
    try:
        entries = scan_folder(folder, root=transcript_boundary(path))
    except FileRefused:
        return None

    def key(candidate: str) -> tuple[str, int]:
        try:
            mtime = os.stat(os.path.join(folder, candidate)).st_mtime_ns
        except (OSError, ValueError):
            mtime = 0
        return (candidate[:15], mtime)

    same = [e.name for e in entries if (m := TRANSCRIPT_NAME.match(e.name)) and m["agent"] == match["agent"]]
    current = key(name)
    earlier = [n for n in same if n != name and key(n) <= current]
    return os.path.join(folder, max(earlier, key=key)) if earlier else None


def compare_with_previous(path: str, previous: str | None = None) -> Comparison:
    """Both runs' requests as text; raises `RecordingError` with words when there is no earlier run or a transcript
    cannot be read."""
    current = load_recording(path)
    before_path = previous or previous_transcript(path)
    if before_path is None:
        raise RecordingError(f"no earlier run of {current.agent_id or 'this agent'} to compare with, in "
                             f"{os.path.dirname(os.path.abspath(path))}")
    before = load_recording(before_path)
    return Comparison(agent_id=current.agent_id,
                      previous=RunRequests(transcript=before.path, run_id=before.run_id,
                                           requests=render_requests(before) or NO_REQUEST),
                      current=RunRequests(transcript=current.path, run_id=current.run_id,
                                          requests=render_requests(current) or NO_REQUEST))
