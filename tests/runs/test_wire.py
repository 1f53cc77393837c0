"""The wire models (`oscova_lsp.wire`): what a run writes reads back into them unchanged, a key no model declares is
refused, the JSON Schema says which fields are always written, and a command's arguments are refused in words."""

from __future__ import annotations

import pytest
from oscova_lsp.runs import read_transcript
from oscova_lsp.wire.commands import PreviewResult, RunAgentArguments, RunEvalArguments, RunTestArguments
from oscova_lsp.wire.events import EVENT_KINDS, RunResult, read_event
from oscova_lsp.wire.schema import wire_json_schema
from pydantic import ValidationError

from tests.support.fake_openai import Reply, ToolCall

from .conftest import Recorder


async def test_a_runs_events_result_and_transcript_read_back_into_their_models_unchanged(service, fake_openai):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "call_a")]),
                        Reply(text="The launch is on Tuesday.", finish_reason="length"))
    events = Recorder()
    result = await service.run("helper", "When is the launch?", on_event=events)

    assert {"started", "message", "toolCall", "toolResult", "modelCall", "delta", "warning", "completed"} \
        <= set(events.kinds())
    for event in events.events:
        assert read_event(event).wire() == event
    assert RunResult.model_validate(result).wire() == result
    assert read_transcript(result["transcript"]) == events.events
    preview = await service.preview("helper", "hi")
    assert PreviewResult.model_validate(preview).wire() == preview


def test_a_key_no_model_declares_is_refused_when_read_back():
    event = {"runId": "r", "seq": 1, "kind": "delta", "time": "t", "text": "hi"}
    assert read_event(event).wire() == event
    with pytest.raises(ValidationError):
        read_event({**event, "renamed": "hi"})
    with pytest.raises(ValidationError):
        read_event({**event, "kind": "somethingNew"})


def test_the_schema_has_every_event_kind_and_requires_what_is_always_written():
    schema = wire_json_schema()["$defs"]
    members = [ref["$ref"].rsplit("/", 1)[1] for ref in schema["RunEvent"]["oneOf"]]
    assert [schema[m]["properties"]["kind"]["const"] for m in members] == list(EVENT_KINDS)
    started, result = schema["StartedEvent"], schema["ToolResultEvent"]
    assert {"runId", "seq", "kind", "time", "agentName", "transcript"} <= set(started["required"])
    assert started["properties"]["transcript"] == {"anyOf": [{"type": "string"}, {"type": "null"}],
                                                   "description": "The transcript's path; null when the run writes "
                                                                  "none."}
    assert "error" not in result["required"] and result["properties"]["error"] == {"type": "string"}
    assert "callId" in result["required"]


@pytest.mark.parametrize("model, command, argument, words", [
    (RunAgentArguments, "oscova.runAgent", {}, "oscova.runAgent needs `agentId` (a non-empty string)"),
    (RunAgentArguments, "oscova.runAgent", {"agentId": " ", "input": ""}, "oscova.runAgent: `agentId` must be a "
                                                                           "non-empty string"),
    (RunAgentArguments, "oscova.runAgent", {"agentId": "a", "input": 3}, "oscova.runAgent: `input` must be a string"),
    (RunTestArguments, "oscova.runTest", {"uri": "file:///c.jsonl", "update": "true"},
     "oscova.runTest: `update` must be true or false"),
    (RunEvalArguments, "oscova.runEval", {"uri": "file:///e.eval.yaml", "repeat": True},
     "oscova.runEval: `repeat` must be a whole number of at least 1"),
    (RunEvalArguments, "oscova.runEval", {"uri": "file:///e.eval.yaml", "models": ["a", 1]},
     "oscova.runEval: `models` must be a list of [models.NAME] names"),
])
def test_arguments_are_refused_in_the_words_of_the_field(model, command, argument, words):
    with pytest.raises(ValidationError) as refused:
        model.model_validate(argument)
    assert model.refusal(command, refused.value) == words


def test_arguments_ignore_keys_they_do_not_know_and_write_only_what_was_given():
    args = RunAgentArguments.model_validate({"agentId": "a", "input": "", "later": 1})
    assert args.wire() == {"agentId": "a", "input": ""}
