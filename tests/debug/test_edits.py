"""Edits at a stop reach what is sent, the transcript records them, and the edited run replays like any other."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from oscova_lsp.runs.replay import replay_run

from tests.support.dap_client import DapClient
from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall

from .conftest import CANARY_KEY, KEY_VARIABLE

LAUNCH = {"agent": "helper", "input": "When is the launch?"}


def _transcript(workspace: Path) -> Path:
    (found,) = (workspace / ".oscova" / "runs").glob("*-helper-*.jsonl")
    return found


def _records(path: Path, record: str) -> list[dict]:
    return [line for line in map(json.loads, path.read_text().splitlines()) if line.get("record") == record]


def _replay(workspace: Path, transcript: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(KEY_VARIABLE, CANARY_KEY)
    return asyncio.run(replay_run(str(workspace), None, str(transcript), runs_dir=str(workspace / "replays")))


def test_an_edit_of_the_instructions_reaches_the_endpoint_and_replays(dap: DapClient, fake_openai: FakeOpenAI,
                                                                      workspace: Path, monkeypatch):
    fake_openai.enqueue(Reply(text="Mardi."))
    dap.start_session(LAUNCH, function_breakpoints=["model"])
    stop = dap.stopped(1)
    edited = dap.request("setVariable", {"variablesReference": stop["refs"]["Context"], "name": "instructions",
                                         "value": "Answer in French."})
    assert edited["body"]["value"] == '"Answer in French."'
    request = dap.value(stop["refs"]["Request"], "object")
    assert request["messages"][0] == {"role": "system", "content": "Answer in French."}
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert fake_openai.requests[0].body == request
    transcript = _transcript(workspace)
    # Version 4: an oscova-lsp that reads only version 3 refuses it instead of replaying without the edit.
    assert _records(transcript, "header")[0]["version"] == 4
    (edit,) = _records(transcript, "edit")
    assert edit["step"] == "model" and edit["call"] == 1 and edit["path"] == ["messages", 0, "content"]
    assert edit["value"] == "Answer in French." and "You help" in edit["was"]
    assert _records(transcript, "model")[0]["request"]["messages"][0]["content"] == "Answer in French."
    outcome = _replay(workspace, transcript, monkeypatch)
    assert outcome.matched, outcome.difference
    assert len(fake_openai.requests) == 1  # a replay is offline
    unedited = transcript.with_name("unedited.jsonl")
    unedited.write_text("".join(line + "\n" for line in transcript.read_text().splitlines()
                                if json.loads(line).get("record") != "edit"))
    assert _replay(workspace, unedited, monkeypatch).status == "drifted"  # the edit record is what replays


def test_an_edit_of_a_message_reaches_the_endpoint(dap: DapClient, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(text="Wednesday."))
    dap.start_session(LAUNCH, function_breakpoints=["model"])
    dap.stopped(1)
    changed = dap.request("setExpression", {"expression": "request.messages.1.content",
                                            "value": '"When is the party?"'})
    assert changed["body"]["value"] == '"When is the party?"'
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert fake_openai.requests[0].messages[1] == {"role": "user", "content": "When is the party?"}


def test_an_edit_of_a_tool_calls_arguments_reaches_the_tool_and_replays(dap: DapClient, fake_openai: FakeOpenAI,
                                                                       workspace: Path, monkeypatch):
    (workspace / "data" / "other.txt").write_text("The party is on Friday.\n")
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "r1")]),
                        Reply(text="Friday."))
    dap.start_session(LAUNCH, function_breakpoints=["tool:read_file"])
    stop = dap.stopped(1)
    dap.request("setVariable", {"variablesReference": stop["refs"]["Arguments"], "name": "path",
                                "value": "data/other.txt"})
    assert dap.value(stop["refs"]["Arguments"], "object") == {"path": "data/other.txt"}
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert "The party is on Friday." in fake_openai.requests[1].messages[-1]["content"]
    transcript = _transcript(workspace)
    (edit,) = _records(transcript, "edit")
    assert edit["step"] == "tool" and edit["callId"] == "r1" and edit["path"] == ["path"]
    assert _records(transcript, "tool")[0]["arguments"] == {"path": "data/other.txt"}
    outcome = _replay(workspace, transcript, monkeypatch)
    assert outcome.matched, outcome.difference


def test_a_non_json_edit_of_a_number_is_refused(dap: DapClient, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(text="ok"))
    dap.start_session(LAUNCH, function_breakpoints=["model"])
    stop = dap.stopped(1)
    refused = dap.request("setVariable", {"variablesReference": stop["refs"]["Request"], "name": "stream_options",
                                          "value": "{not json"}, ok=False)
    assert not refused["success"] and "is not a JSON value" in refused["message"]
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert fake_openai.requests[0].body["stream_options"] == {"include_usage": True}
