"""Source breakpoints: on a `context_providers` entry (after that provider), on an instructions line (before
the model call whose instructions contain that line's text)."""

from __future__ import annotations

from pathlib import Path

from tests.support.dap_client import DapClient
from tests.support.fake_openai import FakeOpenAI, Reply


def _set(dap: DapClient, path: Path, lines: list[int]) -> list[dict]:
    return dap.request("setBreakpoints", {"source": {"path": str(path)},
                                          "breakpoints": [{"line": n} for n in lines]})["body"]["breakpoints"]


def test_a_breakpoint_on_a_context_providers_entry_stops_after_that_provider(dap: DapClient, fake_openai: FakeOpenAI,
                                                                             workspace: Path):
    fake_openai.enqueue(Reply(text="ok"))
    definition = workspace / "agents" / "listed.agent.yaml"
    assert definition.read_text().splitlines()[5].strip() == "- personal"
    dap.request("initialize", {"adapterID": "oscova"})
    (placed,) = _set(dap, definition, [6])
    assert placed["verified"] and placed["line"] == 6
    dap.request("launch", {"agent": "listed", "input": "hi"})
    dap.request("configurationDone")
    stop = dap.stopped(1)
    assert stop["event"]["reason"] == "breakpoint" and stop["event"]["hitBreakpointIds"] == [placed["id"]]
    assert stop["frames"][0] == "provider 2: personal"
    assert stop["stack"][0]["line"] == 6 and stop["stack"][0]["source"]["path"] == str(definition)
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert len(dap.events("stopped")) == 1


def test_a_template_line_stops_before_the_model_call_that_sends_it(dap: DapClient, fake_openai: FakeOpenAI,
                                                                  workspace: Path):
    fake_openai.enqueue(Reply(text="ok"))
    template = workspace / "templates" / "listed.j2"
    dap.request("initialize", {"adapterID": "oscova"})
    rendered, never, tags_only = _set(dap, template, [2, 3, 4])
    assert rendered["verified"] and never["verified"]
    assert not tags_only["verified"] and "no text of its own" in tags_only["message"]
    dap.request("launch", {"agent": "listed", "input": "hi"})
    dap.request("configurationDone")
    stop = dap.stopped(1)
    assert stop["event"]["hitBreakpointIds"] == [rendered["id"]]  # line 3 is never rendered
    assert stop["frames"][0] == "model call 1"
    assert "Always say please at the end." in stop["scopes"]["Context"]["instructions"]
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
    assert len(dap.events("stopped")) == 1


def test_an_inline_instructions_line_stops_only_its_own_agent(dap: DapClient, fake_openai: FakeOpenAI,
                                                             workspace: Path):
    fake_openai.enqueue(Reply(text="ok"))
    definition = workspace / "agents" / "helper.agent.yaml"
    assert "You help {{ user_name }}." in definition.read_text().splitlines()[3]
    dap.request("initialize", {"adapterID": "oscova"})
    (placed, on_id) = _set(dap, definition, [4, 1])
    assert placed["verified"]
    assert not on_id["verified"] and "context_providers" in on_id["message"]
    dap.request("launch", {"agent": "helper", "input": "hi"})
    dap.request("configurationDone")
    assert dap.stopped(1)["frames"] == ["model call 1", "agent helper"]
    dap.request("continue", {"threadId": 1})
    dap.wait_event("terminated")
