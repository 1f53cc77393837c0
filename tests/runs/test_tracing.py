"""Tracing against a real collector: runs export OpenTelemetry spans to Arize Phoenix (`phoenix serve` on a
free loopback port, its SQLite database in a temporary folder), and the spans are read back from
Phoenix's REST API: names, parent links, `gen_ai.*` attributes, token usage, and never the API key.

One Phoenix serves the whole session (the `phoenix` fixture of tests/runs/conftest.py, from
tests/support/phoenix.py). It must start: in CI a Phoenix that does not come up fails the tests with its log
(it is installed by the test extra); only outside CI, without Phoenix installed, they skip.
"""

from __future__ import annotations

import json
from typing import Any

from oscova_lsp.runs import RunService, tracing

from tests.support.fake_openai import Reply

from . import delegation
from .conftest import CANARY_KEY, host_toml, make_workspace
from .test_cli import cli_env, oscova


def _by_name(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        out.setdefault(span["name"], []).append(span)
    return out


def _assert_run_tree(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The shape every traced run of `coordinator` has; returns the spans by name."""
    names = _by_name(spans)
    assert sorted((name, len(group)) for name, group in names.items()) == [
        ("chat fake-model", 3), ("execute_tool read_file", 1), ("execute_tool repeater", 1),
        ("invoke_agent Coordinator", 1), ("invoke_agent Repeater", 1)]
    ids = {s["context"]["span_id"]: s for s in spans}
    root = names["invoke_agent Coordinator"][0]
    assert root["parent_id"] is None
    parent = {s["name"] if s is not root else "root": ids[s["parent_id"]]["name"] for s in spans if s is not root}
    assert parent == {"execute_tool read_file": "invoke_agent Coordinator",
                      "execute_tool repeater": "invoke_agent Coordinator",
                      "invoke_agent Repeater": "execute_tool repeater",  # the agent used as a tool: a child span
                      "chat fake-model": parent.get("chat fake-model")}
    chat_parents = sorted(ids[s["parent_id"]]["name"] for s in names["chat fake-model"])
    assert chat_parents == ["invoke_agent Coordinator", "invoke_agent Coordinator", "invoke_agent Repeater"]

    attrs = root["attributes"]
    assert (attrs["gen_ai.operation.name"], attrs["gen_ai.agent.name"], attrs["gen_ai.agent.id"]) == (
        "invoke_agent", "Coordinator", "coordinator")
    repeater = names["invoke_agent Repeater"][0]["attributes"]
    assert (repeater["gen_ai.agent.id"], repeater["gen_ai.agent.description"]) == ("repeater", "Repeats what it is told.")

    usage = {}
    for span in names["chat fake-model"]:
        a = span["attributes"]
        assert (a["gen_ai.operation.name"], a["gen_ai.provider.name"], a["gen_ai.system"]) == ("chat", "openai", "openai")
        assert (a["gen_ai.request.model"], a["gen_ai.response.model"]) == ("fake-model", "fake-model-2025")
        assert a["server.address"] == "127.0.0.1"
        usage[ids[span["parent_id"]]["name"], a["gen_ai.usage.input_tokens"]] = a["gen_ai.usage.output_tokens"]
    assert usage == {("invoke_agent Coordinator", delegation.FIRST[0]): delegation.FIRST[1],
                     ("invoke_agent Coordinator", delegation.SECOND[0]): delegation.SECOND[1],
                     ("invoke_agent Repeater", delegation.REPEATER[0]): delegation.REPEATER[1]}
    for tool, call_id in (("read_file", "call_file"), ("repeater", "call_agent")):
        a = names[f"execute_tool {tool}"][0]["attributes"]
        assert (a["gen_ai.operation.name"], a["gen_ai.tool.name"], a["gen_ai.tool.call.id"]) == (
            "execute_tool", tool, call_id)
    for span in spans:  # the API key is in the environment of the run: never in a span
        assert CANARY_KEY not in json.dumps(span), span["name"]
    return names


def test_a_cli_run_exports_its_spans_to_the_collector_named_by_the_environment(tmp_path, fake_openai, phoenix):
    fake_openai.responder = delegation.responder()
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, agents=delegation.AGENTS)
    result = oscova("run", "coordinator", "--input", "When is the launch?", "--json", cwd=root,
                    env=cli_env(OTEL_EXPORTER_OTLP_ENDPOINT=phoenix.otlp))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    session = events[0]["sessionId"]
    names = _assert_run_tree(phoenix.trace_of(session, 7))  # exported before the process exited
    # contents only when asked for
    for span in (s for group in names.values() for s in group):
        assert not {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} & set(span["attributes"])


async def test_capture_content_from_oscova_toml_adds_messages_and_redacts_keys(tmp_path, fake_openai, phoenix,
                                                                             canary_key, monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    fake_openai.responder = delegation.responder(leak=f" (key {CANARY_KEY})")  # a model that leaks the key
    extra = f'\n[telemetry]\notlp_endpoint = "{phoenix.otlp}"\ncapture_content = true\n'
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, host=host_toml(fake_openai.base_url, extra=extra),
                          agents=delegation.AGENTS)
    service = RunService(root)
    try:
        result = await service.run("coordinator", "When is the launch?")
    finally:
        await service.aclose()
    assert result["status"] == "completed", result.get("error")
    tracing.flush()
    names = _assert_run_tree(phoenix.trace_of(result["sessionId"], 7))  # includes: no key in any attribute

    first = min(names["chat fake-model"], key=lambda s: s["start_time"])["attributes"]
    [instructions] = json.loads(first["gen_ai.system_instructions"])
    assert instructions["type"] == "text"
    assert instructions["content"].endswith("\n\nAsk the repeater, read the notes, answer.\n")  # after the environment, a blank line between
    sent = json.loads(first["gen_ai.input.messages"])
    assert sent[-1] == {"role": "user", "parts": [{"type": "text", "content": "When is the launch?"}]}
    answered = json.loads(first["gen_ai.output.messages"])
    assert [p["name"] for p in answered[0]["parts"] if p["type"] == "tool_call"] == ["repeater", "read_file"]
    read = names["execute_tool read_file"][0]["attributes"]
    assert json.loads(read["gen_ai.tool.call.arguments"]) == {"path": "data/notes.txt"}
    assert "Tuesday" in read["gen_ai.tool.call.result"]
    repeated = names["execute_tool repeater"][0]["attributes"]["gen_ai.tool.call.result"]
    assert repeated == f"{delegation.REPEATER_ANSWER} (key ***)"  # the leaked key, redacted


def test_a_span_carries_the_cache_read_attribute(tmp_path, workspace, fake_openai, phoenix):
    fake_openai.enqueue(Reply(text="Tuesday.", prompt_tokens=1900, cached_tokens=1536))
    result = oscova("run", "helper", "--input", "When is the launch?", "--json", cwd=workspace,
                    env=cli_env(OTEL_EXPORTER_OTLP_ENDPOINT=phoenix.otlp))
    assert result.returncode == 0, result.stderr
    session = json.loads(result.stdout.splitlines()[0])["sessionId"]
    chat = [s for s in phoenix.trace_of(session, 2) if s["name"].startswith("chat ")]
    assert [s["attributes"]["gen_ai.usage.cache_read.input_tokens"] for s in chat] == [1536]
    assert chat[0]["attributes"]["gen_ai.usage.input_tokens"] == 1900


def test_a_reasoning_models_thinking_is_a_reasoning_part_of_the_answer(tmp_path, fake_openai, phoenix):
    fake_openai.enqueue(Reply(reasoning="The notes say Tuesday.", text="Tuesday."))
    extra = '\n[telemetry]\ncapture_content = true\n'
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, host=host_toml(fake_openai.base_url, extra=extra))
    result = oscova("run", "echo", "--input", "When is the launch?", "--json", cwd=root,
                    env=cli_env(OTEL_EXPORTER_OTLP_ENDPOINT=phoenix.otlp))
    assert result.returncode == 0, result.stderr
    session = json.loads(result.stdout.splitlines()[0])["sessionId"]
    [chat] = [s for s in phoenix.trace_of(session, 2) if s["name"].startswith("chat ")]
    [answer] = json.loads(chat["attributes"]["gen_ai.output.messages"])
    assert answer["parts"] == [{"type": "reasoning", "content": "The notes say Tuesday."},
                               {"type": "text", "content": "Tuesday."}]
