"""Runs against a real OpenAI-compatible server: llama.cpp's `llama-server` and SmolLM2-135M-Instruct (see
conftest.py). Streaming text, a forced tool call, an agent called as a tool, reasoning (the server's
`reasoning_content`, and `<think>` left inline), a cut-off answer and a tool call cut at `max_tokens`, the
prompt tokens predicted against the server's `/tokenize` and `usage`, and a replay of each run, offline.

With OSCOVA_RECORD_FIXTURES=1 each scenario's model calls are sent again to the server and its raw streams
written to tests/fixtures/llama-server/, which tests/runs/test_recorded_streams.py replays in the fast suite."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from oscova_lsp.runs import RunService
from oscova_lsp.runs.replay import replay_run
from oscova_lsp.runs.transcript import load_recording

from tests.runs.conftest import Recorder, run_recorded
from tests.runs.test_cli import cli_env
from tests.support import llama_server
from tests.support.cli_zygote import module_command
from tests.support.real_model import FIXTURES

from .conftest import recording

pytestmark = pytest.mark.realmodel

async def run(workspace: Path, agent: str, text: str) -> tuple[dict[str, Any], Recorder]:
    return await run_recorded(workspace, agent, text)


async def replays(workspace: Path, result: dict[str, Any]) -> None:
    """The run replays offline as it ran: the same requests, tool calls, status and answer."""
    replayed = await replay_run(str(workspace), None, result["transcript"])
    assert replayed.matched, replayed.difference
    assert replayed.result.get("reasoning") == result.get("reasoning")


async def record(transcript: str, name: str, server: llama_server.LlamaServer) -> None:
    """With OSCOVA_RECORD_FIXTURES=1: the run's first model call sent again, its raw stream and request kept."""
    if not recording():
        return
    recorded = load_recording(transcript)
    request = recorded.exchanges[0]["request"]
    await asyncio.to_thread(llama_server.record_stream, server, request, FIXTURES / f"{name}.sse", recorded.root)
    (FIXTURES / f"{name}.request.json").write_text(
        llama_server.scrub(json.dumps(llama_server.wire_body(request), indent=1), recorded.root) + "\n")


def oscova(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command line, with the time a loaded machine's model may take."""
    return subprocess.run(module_command(*args), cwd=cwd, env=cli_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=1800)


async def test_a_streamed_answer(workspace, qwen_server):
    result, events = await run(workspace, "greeter", "Say hello to Alice.")
    assert result["status"] == "completed", result.get("error")
    deltas = events.of("delta")
    assert result["text"].strip() and "".join(e["text"] for e in deltas) == result["text"]
    [call] = events.of("modelCall")
    assert call["finishReason"] in ("stop", "length")
    assert ("incomplete" in result) == (call["finishReason"] == "length")  # a cut-off is never a plain success
    await record(result["transcript"], "text", qwen_server)
    await replays(workspace, result)


def test_a_cut_off_answer_exits_3_and_says_where(workspace, qwen_server):
    finished = oscova("run", "short", "--input", "Describe the sea.", "--json", cwd=workspace)
    assert finished.returncode == 3, finished.stderr
    events = [json.loads(line) for line in finished.stdout.splitlines()]
    [warning] = [e for e in events if e["kind"] == "warning"]
    assert warning["message"] == ("The answer of `short` was cut off: it reached its token limit (`max_tokens` 3)")
    assert events[-1]["kind"] == "completed" and events[-1]["incomplete"]["reason"] == "cutOff"
    shown = oscova("run", "short", "--input", "Describe the sea.", cwd=workspace)
    assert shown.returncode == 3 and "⚠ incomplete: The answer of `short` was cut off" in shown.stderr
    asyncio.run(record(events[0]["transcript"], "cut-off", qwen_server))
    replayed = asyncio.run(replay_run(str(workspace), None, events[0]["transcript"]))
    assert replayed.matched, replayed.difference


async def test_a_forced_tool_call_runs_the_tool_and_the_model_answers(workspace, qwen_server):
    result, events = await run(workspace, "clock", "What time is it?")
    assert result["status"] == "completed", result.get("error")
    [call] = events.of("toolCall")
    assert (call["name"], call["arguments"]) == ("current_datetime", {})
    [outcome] = events.of("toolResult")
    assert "error" not in outcome and outcome["result"]
    first, second = events.of("modelCall")  # the tool's result went back to the model, which answered
    assert first["finishReason"] == "tool_calls" and second["finishReason"] == "stop"
    assert load_recording(result["transcript"]).exchanges[1]["request"]["messages"][-1]["role"] == "tool"
    await record(result["transcript"], "tool-call", qwen_server)
    await replays(workspace, result)


async def test_an_agent_called_as_a_tool(workspace, qwen_server):
    result, events = await run(workspace, "lead", "Say hello.")
    assert result["status"] == "completed", result.get("error")
    [call] = events.of("toolCall")
    assert call["name"] == "echo" and isinstance(call["arguments"].get("query"), str)
    [outcome] = events.of("toolResult")
    assert "error" not in outcome and isinstance(outcome["result"], str) and outcome["result"]
    agents = [e["agentId"] for e in events.of("modelCall")]
    assert agents == ["lead", "echo", "lead"]
    await record(result["transcript"], "agent-tool", qwen_server)
    await replays(workspace, result)


async def test_a_tool_call_cut_at_max_tokens_names_it_and_keeps_its_usage(workspace, qwen_server):
    result, events = await run(workspace, "reader", "When is the launch?")
    assert result["status"] == "failed"
    assert result["error"] == ("The model's answer reached its token limit (`max_tokens` 30) in the middle of the "
                               "arguments of the tool 'read_file', so the tool was not called; raise `max_tokens` in "
                               "the agent's `chat_options`")
    [call] = events.of("modelCall")
    assert call["failed"] is True and call["usage"]["outputTokens"] == 30 and call["usage"]["inputTokens"] > 0
    await record(result["transcript"], "cut-tool-call", qwen_server)
    await replays(workspace, result)


async def test_reasoning_is_shown_apart_from_the_answer(workspace, reasoning_server):
    result, events = await run(workspace, "thinker", "What is 2+2?")
    assert result["status"] == "completed", result.get("error")
    assert result["reasoning"].strip() and result["text"].strip()
    assert "</think>" not in result["text"] and "</think>" not in result["reasoning"]
    assert "".join(e["text"] for e in events.of("reasoning")) == result["reasoning"]
    assert "".join(e["text"] for e in events.of("delta")) == result["text"]
    [call] = events.of("modelCall")
    assert call["usage"]["reasoningTokens"] > 0  # counted here: llama.cpp does not report them
    await record(result["transcript"], "reasoning", reasoning_server)
    await replays(workspace, result)


async def test_think_left_inline_is_reasoning(workspace, qwen_server):
    """A server that leaves `<think>` in the text (Qwen2.5's template has no reasoning for llama.cpp to parse)."""
    result, events = await run(workspace, "inline", "What is 2+2?")
    assert result["status"] == "completed", result.get("error")
    assert result["reasoning"].strip() and result["text"].strip()
    assert "<think>" not in result["text"] + result["reasoning"]
    await record(result["transcript"], "inline-think", qwen_server)
    await replays(workspace, result)


async def test_counts_match_the_servers_prompt_tokens_tools_included(workspace, qwen_server):
    """The preview renders the request through the model's chat template as the server does: the same prompt text
    as the server's `/apply-template`, the same tokens as its `/tokenize`, within 2% of its `usage`."""
    service = RunService(workspace)
    try:
        preview = await service.preview("clock", "What time is it?")
    finally:
        await service.aclose()
    assert "note" not in preview["tokens"], preview["tokens"]  # counted by the template, nothing estimated
    result, events = await run(workspace, "clock", "What time is it?")
    first = events.of("modelCall")[0]
    served = first["usage"]["inputTokens"]
    predicted = preview["tokens"]["total"]
    assert abs(predicted - served) <= 0.02 * served, (predicted, served)
    assert first["predictedInputTokens"] == predicted
    request = load_recording(result["transcript"]).exchanges[0]["request"]
    body = llama_server.wire_body(request)
    rendered = await asyncio.to_thread(llama_server.post, qwen_server, "/apply-template",
                                       {"messages": body["messages"], "tools": body["tools"]})
    from oscova_runtime.tokens import tokenizer_for

    tokenizer = tokenizer_for("smollm2", "model/SmolLM2-135M-Instruct.Q4_1.gguf", root=str(workspace),
                              chat_template="templates/Qwen-Qwen2.5-7B-Instruct.jinja")
    assert tokenizer.template is not None
    ours = tokenizer.template.render(body["messages"], body["tools"])
    assert ours == rendered["prompt"]
    tokenized = await asyncio.to_thread(llama_server.post, qwen_server, "/tokenize",
                                        {"content": rendered["prompt"], "add_special": True, "parse_special": True})
    assert tokenizer.count_prompt(ours) == len(tokenized["tokens"])
    assert preview["tokens"]["tools"] > 100  # the template's tool preamble, which OpenAI's rule does not know
    if recording():
        (FIXTURES / "counts.json").write_text(llama_server.scrub(json.dumps({
            "request": {"messages": body["messages"], "tools": body["tools"]}, "prompt": rendered["prompt"],
            "tokens": len(tokenized["tokens"]), "usage": first["usage"]}, indent=1), str(workspace)) + "\n")


def test_an_evaluation_against_the_real_server(workspace, qwen_server):
    (workspace / "greeter.eval.yaml").write_text(
        "agent: greeter\ncases:\n  - name: greets\n    input: Say hello.\n    expect:\n      - max_model_calls: 1\n")
    finished = oscova("eval", "--format", "json", cwd=workspace)
    report = json.loads(finished.stdout)
    assert finished.returncode == 0 and report["ok"] and report["passed"] == 1, finished.stdout + finished.stderr

