"""The real server's streams, replayed offline: tests/fixtures/llama-server/ holds what llama.cpp's `llama-server`
(SmolLM2-135M-Instruct) sent for each scenario of tests/realmodel/, byte for byte, and the local server plays them
back to the same agents. What a run makes of each is read from the recording itself (its `content`,
`reasoning_content`, tool calls, `finish_reason`, `usage`), not from a copy of the expected text."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from oscova_lsp.runs import RunService
from oscova_runtime.chat_templates import load_chat_template

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.real_model import AGENTS, FIXTURES

from .conftest import Recorder


def recorded(name: str) -> dict[str, Any]:
    """What the stream `name` says, taken apart: text, reasoning, tool calls, finish reason, usage."""
    content, reasoning, calls, finish, usage = [], [], {}, None, None
    for event in (FIXTURES / f"{name}.sse").read_text().split("\n\n"):
        if not event.startswith("data: {"):
            continue
        chunk = json.loads(event[len("data: "):])
        usage = chunk.get("usage") or usage
        for choice in chunk["choices"]:
            delta = choice.get("delta") or {}
            content.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or "")
            for call in delta.get("tool_calls") or ():
                slot = calls.setdefault(call["index"], {"name": "", "arguments": ""})
                slot["name"] += call.get("function", {}).get("name") or ""
                slot["arguments"] += call.get("function", {}).get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return {"text": "".join(content), "reasoning": "".join(reasoning), "calls": list(calls.values()),
            "finish": finish, "usage": usage}


@pytest.fixture
def workspace(tmp_path: Path, fake_openai: FakeOpenAI) -> Path:
    root = tmp_path / "ws"
    (root / "agents").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "data" / "notes.txt").write_text("The launch is on Tuesday.\n")
    (root / "oscova.toml").write_text(textwrap.dedent(f"""\
        [host]
        user_id = "ci"

        [models.local]
        model = "smollm2"
        base_url = "{fake_openai.base_url}"

        [models.thinking]
        model = "smollm2"
        base_url = "{fake_openai.base_url}"
        """))
    for name, text in AGENTS.items():
        (root / "agents" / f"{name}.agent.yaml").write_text(textwrap.dedent(text))
    return root


async def run(workspace: Path, agent: str) -> tuple[dict[str, Any], Recorder]:
    events = Recorder()
    service = RunService(workspace)
    try:
        result = await service.run(agent, "hi", on_event=events)
    finally:
        await service.aclose()
    return result, events


def replay(name: str) -> Reply:
    return Reply(recorded=str(FIXTURES / f"{name}.sse"))


async def test_streamed_text(workspace, fake_openai):
    fake_openai.enqueue(replay("text"))
    result, events = await run(workspace, "greeter")
    stream = recorded("text")
    assert result["status"] == "completed" and result["text"] == stream["text"] != ""
    assert len(events.of("delta")) > 1
    [call] = events.of("modelCall")
    assert (call["finishReason"], call["usage"]["inputTokens"]) == (stream["finish"], stream["usage"]["prompt_tokens"])
    assert ("incomplete" in result) == (stream["finish"] == "length")


async def test_a_cut_off_answer(workspace, fake_openai):
    fake_openai.enqueue(replay("cut-off"))
    result, events = await run(workspace, "short")
    assert recorded("cut-off")["finish"] == "length"
    assert result["text"] == recorded("cut-off")["text"]
    assert result["incomplete"] == {"reason": "cutOff", "message": "The answer of `short` was cut off: it reached its "
                                                                   "token limit (`max_tokens` 3)"}
    assert [e["message"] for e in events.of("warning")] == [result["incomplete"]["message"]]


async def test_a_tool_call_in_fragments(workspace, fake_openai):
    fake_openai.enqueue(replay("tool-call"), Reply(text=""))
    result, events = await run(workspace, "clock")
    [expected] = recorded("tool-call")["calls"]
    [call] = events.of("toolCall")
    assert (call["name"], call["arguments"]) == (expected["name"], json.loads(expected["arguments"]))
    [outcome] = events.of("toolResult")
    assert "error" not in outcome and result["status"] == "completed"
    assert fake_openai.requests[1].messages[-1]["role"] == "tool"


async def test_an_agent_called_as_a_tool(workspace, fake_openai):
    fake_openai.enqueue(replay("agent-tool"), Reply(text="Hello."), Reply(text=""))
    result, events = await run(workspace, "lead")
    [expected] = recorded("agent-tool")["calls"]
    [call] = events.of("toolCall")
    assert (call["name"], call["arguments"]) == ("echo", json.loads(expected["arguments"]))
    assert [e["agentId"] for e in events.of("modelCall")] == ["lead", "echo", "lead"]
    assert events.of("toolResult")[0]["result"] == "Hello." and result["status"] == "completed"


async def test_a_tool_call_cut_at_max_tokens(workspace, fake_openai):
    fake_openai.enqueue(replay("cut-tool-call"))
    result, events = await run(workspace, "reader")
    stream = recorded("cut-tool-call")
    assert stream["finish"] == "length" and stream["calls"][0]["name"] == "read_file"
    assert result["status"] == "failed"
    assert result["error"] == ("The model's answer reached its token limit (`max_tokens` 30) in the middle of the "
                               "arguments of the tool 'read_file', so the tool was not called; raise `max_tokens` in "
                               "the agent's `chat_options`")
    [call] = events.of("modelCall")
    assert (call["usage"]["inputTokens"], call["usage"]["outputTokens"]) == (stream["usage"]["prompt_tokens"],
                                                                             stream["usage"]["completion_tokens"])


async def test_reasoning_content(workspace, fake_openai):
    fake_openai.enqueue(replay("reasoning"))
    result, events = await run(workspace, "thinker")
    stream = recorded("reasoning")
    assert (result["reasoning"], result["text"]) == (stream["reasoning"], stream["text"])
    assert "".join(e["text"] for e in events.of("reasoning")) == stream["reasoning"]
    assert "".join(e["text"] for e in events.of("delta")) == stream["text"]


async def test_think_left_inline(workspace, fake_openai):
    fake_openai.enqueue(replay("inline-think"))
    result, _ = await run(workspace, "inline")
    text = recorded("inline-think")["text"]
    assert text.startswith("<think>") and "</think>" in text
    thought, answer = text[len("<think>"):].split("</think>", 1)
    assert (result["reasoning"], result["text"]) == (thought, answer.lstrip())


def test_the_chat_template_renders_the_request_as_the_server_did():
    """The server's own rendering (`/apply-template`) of a request with a tool, and ours of the same request."""
    counts = json.loads((FIXTURES / "counts.json").read_text())
    template = load_chat_template(str(FIXTURES / "templates" / "Qwen-Qwen2.5-7B-Instruct.jinja"))
    assert template.render(counts["request"]["messages"], counts["request"]["tools"]) == counts["prompt"]
    assert counts["tokens"] == counts["usage"]["inputTokens"]  # the server's /tokenize and its usage agree
