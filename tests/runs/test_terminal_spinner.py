"""The spinner a terminal shows while nothing streams: rich's frames on stderr, its line cleared before the answer
goes on, nothing of it off a terminal."""

from __future__ import annotations

import io
import time

import pytest
from oscova_lsp.runs.terminal import LiveTranscript


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def waited(view: LiveTranscript) -> None:
    view.last_output = time.monotonic() - 1  # nothing has streamed for a second
    view.tick()


def test_the_spinner_turns_on_stderr_and_its_line_is_cleared_before_the_answer(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    out, err = io.StringIO(), Terminal()
    view = LiveTranscript(out, err)
    waited(view)
    waited(view)
    shown = err.getvalue()
    assert "⠙" in shown and "⠹" in shown and "starting…" in shown  # rich's "dots", one frame a tick
    assert "\x1b[36m⠙\x1b[0m" in shown  # the frame in cyan
    view({"kind": "delta", "text": "Hello"})
    assert err.getvalue().endswith("\x1b[1G\x1b[2K")  # the spinner's line cleared before the answer streams
    assert out.getvalue() == "Hello"


def test_no_spinner_and_no_colour_off_a_terminal(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    out, err = io.StringIO(), io.StringIO()
    view = LiveTranscript(out, err)
    waited(view)
    assert err.getvalue() == ""
