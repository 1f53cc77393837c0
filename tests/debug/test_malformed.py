"""Malformed DAP input gets error responses (or a console line when there is no request to answer), never a
crash: the session goes on and serves the next request."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support.dap_client import DapClient
from tests.support.fake_openai import FakeOpenAI, Reply

LAUNCH = {"agent": "helper", "input": "When is the launch?"}


def _failed(response: dict) -> str:
    assert response["type"] == "response" and response["success"] is False, response
    assert response["body"]["error"]["format"]
    return response["message"]


def test_broken_frames_are_reported_and_the_session_goes_on(dap: DapClient):
    dap.send_raw(b"Content-Length: lots\r\n\r\n")
    dap.send_raw(b"Content-Length: 7\r\n\r\nnot js!")
    body = json.dumps([1, 2]).encode()
    dap.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    dap.send_raw(b"X-Nothing: 1\r\n\r\n")
    dap.wait_event("output", 4)
    said = dap.output("important")
    assert "not a number" in said and "not JSON" in said and "not a JSON object" in said
    assert "without Content-Length" in said
    assert dap.request("initialize", {"adapterID": "oscova"})["body"]["supportsFunctionBreakpoints"]


def test_a_length_that_is_not_a_number_drops_that_frame_and_the_next_request_is_answered(dap: DapClient):
    body = json.dumps({"seq": 1, "type": "request", "command": "threads"}).encode()
    dap.send_raw(b"Content-Length: abc\r\n\r\n" + body)  # its body follows, with no line end
    assert dap.request("initialize", {"adapterID": "oscova"})["body"]["supportsFunctionBreakpoints"]
    assert "Content-Length 'abc' is not a number" in dap.output("important")
    assert dap.request("threads")["body"]["threads"] == []  # and the one after it


def test_requests_that_cannot_be_served_get_error_responses(dap: DapClient):
    dap.send({"seq": 1, "type": "request"})
    assert _failed(dap.response(1)) == "The request has no command"
    dap._seq = 1
    assert "does not support the request 'frobnicate'" in _failed(dap.request("frobnicate", ok=False))
    dap.send({"seq": 3, "type": "request", "command": "threads", "arguments": [1]})
    assert "object `arguments`" in _failed(dap.response(3))
    dap._seq = 3
    assert _failed(dap.request("stackTrace", {"threadId": 1}, ok=False)) == "The run is not stopped"
    assert _failed(dap.request("continue", {"threadId": 1}, ok=False)) == "The run is not stopped"
    assert "must be a list" in _failed(dap.request("setFunctionBreakpoints", {"breakpoints": 3}, ok=False))
    assert "source.path" in _failed(dap.request("setBreakpoints", {"source": {}}, ok=False))
    assert "cannot attach" in _failed(dap.request("attach", {}, ok=False))
    answers = dap.request("setFunctionBreakpoints", {"breakpoints": [{"name": "modle"}, {"name": "provider"},
                                                                       {"name": 7}, {"name": "tool:read_file"}]})
    verified = [b["verified"] for b in answers["body"]["breakpoints"]]
    assert verified == [False, False, False, True]
    assert "is not a step" in answers["body"]["breakpoints"][0]["message"]


def test_bad_launch_arguments_are_refused_in_words(dap: DapClient, workspace: Path):
    refusals = [
        ({**LAUNCH, "agent": 5}, "`agent` must be text"),
        ({**LAUNCH, "agent": "nobody"}, "No agent definition has the id 'nobody' (known agents:"),
        ({**LAUNCH, "liveFrom": 2}, "`liveFrom` goes with `replay`"),
        ({**LAUNCH, "replay": "abc", "liveFrom": 0}, "`liveFrom` must be a model call number"),
        ({**LAUNCH, "replay": "0123456789ab"}, "no transcript at 0123456789ab"),
        ({**LAUNCH, "root": "/nonexistent/place"}, "is not a directory"),
        ({"agent": "helper"}, "needs `input`"),
        ({**LAUNCH, "stopOnEntry": "yes"}, "`stopOnEntry` must be true or false"),
        ({**LAUNCH, "functionBreakpoints": ["modle"]}, "`functionBreakpoints`: 'modle' is not a step"),
        ({**LAUNCH, "functionBreakpoints": "model"}, "`functionBreakpoints` must be a list of names"),
    ]
    dap.request("initialize", {"adapterID": "oscova"})
    for arguments, words in refusals:
        assert words in _failed(dap.request("launch", arguments, ok=False)), arguments
    assert dap.request("threads")["body"]["threads"] == []


def test_bad_variable_requests_at_a_stop_fail_and_the_run_goes_on(dap: DapClient, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(text="Tuesday."))
    dap.start_session(LAUNCH, function_breakpoints=["model"])
    stop = dap.stopped(1)
    assert "No variables have the reference 999" in _failed(dap.request("variables", {"variablesReference": 999},
                                                                        ok=False))
    assert "integer" in _failed(dap.request("variables", {"variablesReference": "1"}, ok=False))
    last = stop["refs"]["Last response"]
    session = stop["refs"]["Session"]
    assert last and session
    assert "No stack frame" in _failed(dap.request("scopes", {"frameId": 42}, ok=False))
    context = stop["refs"]["Context"]
    assert "cannot be edited here" in _failed(dap.request("setVariable", {"variablesReference": context,
                                                                          "name": "tools", "value": "[]"}, ok=False))
    assert "no variable 'nothing'" in _failed(dap.request("setVariable", {"variablesReference": context,
                                                                          "name": "nothing", "value": "1"}, ok=False))
    assert "names nothing" in _failed(dap.request("setExpression", {"expression": "request.nope", "value": "1"},
                                                  ok=False))
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert dap.events("exited")[0]["body"] == {"exitCode": 0}


def test_a_source_breakpoint_on_a_fifo_is_refused_without_waiting(dap: DapClient, workspace: Path):
    fifo = workspace / "templates" / "pipe.j2"
    os.mkfifo(fifo)
    dap.request("initialize", {"adapterID": "oscova"})
    answer = dap.request("setBreakpoints", {"source": {"path": str(fifo)}, "breakpoints": [{"line": 1}]}, timeout=10)
    placed = answer["body"]["breakpoints"][0]
    assert placed["verified"] is False and "FIFO" in placed["message"]


def test_views_asking_after_a_continue_fail_quietly_but_a_lost_edit_is_shown(dap: DapClient,
                                                                             fake_openai: FakeOpenAI):
    """VS Code asks for the top frame's scopes after it has drawn the call stack; a user quick to continue
    (F5 twice, or the e2e's click) races it. That answer must not pop up an error (`showUser` false: VS Code
    then shows nothing), while an edit that did not apply must say so (`showUser` true)."""
    fake_openai.enqueue(Reply(text="Tuesday.", delay=2.0))  # the run is busy with the model while the views ask
    dap.start_session(LAUNCH, function_breakpoints=["model"])
    stop = dap.stopped(1)
    frame, context = stop["stack"][0]["id"], stop["refs"]["Context"]
    dap.request("continue", {"threadId": 1})
    for command, arguments in [("stackTrace", {"threadId": 1}), ("scopes", {"frameId": frame}),
                               ("variables", {"variablesReference": context}), ("continue", {"threadId": 1}),
                               ("evaluate", {"expression": "request.instructions"})]:
        answer = dap.request(command, arguments, ok=False)
        assert _failed(answer) == "The run is not stopped" and answer["body"]["error"]["showUser"] is False, command
    edit = dap.request("setVariable", {"variablesReference": context, "name": "instructions", "value": "x"}, ok=False)
    assert _failed(edit) == "The run is not stopped" and edit["body"]["error"]["showUser"] is True
    dap.wait_event("terminated")
