"""Refused private notes: "Missing or unauthorized notes contribute nothing." — the prompt holds
nothing of them, and the preview and the run's events say why instead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from oscova_lsp.runs import EVENT_KINDS, RunService
from oscova_lsp.runs.terminal import format_preview

from tests.support.fake_openai import FakeOpenAI, Reply

from .conftest import Recorder, make_workspace

SECRET = "bobs-notes-0d7c"
NOTES = "oscova_runtime.providers.private_notes.PrivateNotesContextProvider"


@pytest.fixture
def refused(tmp_path: Path, fake_openai: FakeOpenAI, canary_key: str) -> Path:
    """A workspace where alice's notes for `helper` are a link to bob's notes."""
    root = make_workspace(tmp_path / "ws", fake_openai.base_url)
    (root / ".oscova/notes/bob").mkdir(parents=True)
    (root / ".oscova/notes/bob/helper.md").write_text(f"{SECRET}: bob likes tea")
    (root / ".oscova/notes/alice").mkdir()
    os.symlink(root / ".oscova/notes/bob/helper.md", root / ".oscova/notes/alice/helper.md")
    return root


async def test_the_preview_says_why_refused_notes_contribute_nothing(refused: Path):
    service = RunService(refused)
    try:
        preview = await service.preview("helper", "hi")
    finally:
        await service.aclose()
    [notes] = [p for p in preview["providers"] if p["type"] == "private_notes"]
    assert notes["instructions"] is None and notes["active"] is True
    assert notes["notices"] == ["The private notes were left out of the prompt: it is a symlink that leads outside "
                                "the user's own notes folder"]
    assert SECRET not in str(preview) and "private_notes" not in preview["instructions"]
    assert "! The private notes were left out of the prompt" in format_preview(preview)


async def test_a_run_says_why_refused_notes_contribute_nothing(refused: Path, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(text="ok"))
    events = Recorder()
    service = RunService(refused)
    try:
        result = await service.run("helper", "hi", on_event=events)
    finally:
        await service.aclose()
    assert result["status"] == "completed"
    [notice] = events.of("notice")
    assert notice["source"] == NOTES and notice["provider"] == "PrivateNotesContextProvider"
    assert notice["message"].startswith("The private notes were left out of the prompt: ")
    assert events.kinds().index("notice") < events.kinds().index("completed") and "notice" in EVENT_KINDS
    system = fake_openai.requests[0].messages[0]["content"]
    assert SECRET not in system and "<private_notes>" not in system


async def test_a_run_whose_notes_folder_leads_out_completes_and_says_why_notes_are_off(
        tmp_path: Path, fake_openai: FakeOpenAI, canary_key: str):
    """"Missing or unauthorized notes contribute nothing." — a notes folder that is a link out of the workspace
    does not stop the run (the build once failed on it); the run's events say why the notes are off."""
    root = make_workspace(tmp_path / "ws", fake_openai.base_url)
    away = tmp_path / "away"
    (away / "alice").mkdir(parents=True)
    (away / "alice" / "helper.md").write_text(f"{SECRET}: outside the workspace")
    (root / ".oscova").mkdir()
    os.symlink(away, root / ".oscova" / "notes")
    fake_openai.enqueue(Reply(text="ok"))
    events = Recorder()
    service = RunService(root)
    try:
        result = await service.run("helper", "hi", on_event=events)
    finally:
        await service.aclose()
    assert result["status"] == "completed"
    assert [(n["provider"], n["message"]) for n in events.of("notice")] == [(
        "PrivateNotesContextProvider", "The private notes were left out of the prompt: the notes folder "
        "`.oscova/notes` leads outside the workspace root")]
    system = fake_openai.requests[0].messages[0]["content"]
    assert SECRET not in system and "<private_notes>" not in system
