"""What a user sees of a reasoning model and of an answer that is not the model's whole answer, in every front
end of a run: the events (what the editor gets), the terminal, the exit status, the transcript and its replay.

A reasoning model's thinking streams apart from the answer (`reasoning` events; stderr, never stdout) and is
never taken for the answer. An answer cut off at the token limit or by a content filter, or stopped by the
repeated-call guard, is said where it happens (a `warning` event) and at the end (`incomplete`; exit status 3);
a tool call cut mid-arguments names `max_tokens`; `tool_choice: required` answered in text only is reported."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from oscova_lsp.runs import read_transcript
from oscova_lsp.runs.replay import replay_run

from tests.support.fake_openai import Reply, ToolCall

from .conftest import Recorder, make_workspace, run_recorded
from .test_cli import oscova

AGENTS = {
    "thinker": """\
        id: thinker
        instructions: Answer briefly.
        """,
    "short": """\
        id: short
        instructions: Answer briefly.
        chat_options: {max_tokens: 12}
        """,
    "reader": """\
        id: reader
        instructions: Read the notes.
        tools: [read_file]
        workspaces: [data]
        chat_options: {max_tokens: 12, tool_choice: required}
        """,
    "looper": """\
        id: looper
        instructions: Read the notes.
        tools: [read_file]
        workspaces: [data]
        """,
    "echo": """\
        id: echo
        description: Repeats what it is told.
        exposed_as_tool: true
        instructions: Repeat the query.
        chat_options: {max_tokens: 5}
        """,
    "lead": """\
        id: lead
        instructions: Delegate to echo.
        agent_tools: [echo]
        """,
}
DOUBLED_WORD = re.compile(r"\b(\w+) \1\b", re.IGNORECASE)


@pytest.fixture
def workspace(tmp_path: Path, fake_openai, canary_key) -> Path:
    return make_workspace(tmp_path / "ws", fake_openai.base_url, agents=AGENTS)


async def run(workspace: Path, agent: str, text: str = "hi") -> tuple[dict, Recorder]:
    return await run_recorded(workspace, agent, text)


@pytest.mark.parametrize("reply", [
    Reply(reasoning="They greet me; I greet back.", text="Hello!", chunk_size=4),
    Reply(reasoning="They greet me; I greet back.", reasoning_field="reasoning", text="Hello!", chunk_size=4),
    Reply(text="<think>They greet me; I greet back.</think>\n\nHello!", chunk_size=4),
], ids=["reasoning_content", "reasoning", "inline-think"])
async def test_reasoning_streams_apart_from_the_answer_and_is_kept(workspace, fake_openai, reply):
    fake_openai.enqueue(reply)
    result, events = await run(workspace, "thinker")
    assert result["status"] == "completed"
    assert result["text"] == "Hello!" and result["reasoning"] == "They greet me; I greet back."
    assert "".join(e["text"] for e in events.of("reasoning")) == "They greet me; I greet back."
    assert "".join(e["text"] for e in events.of("delta")) == "Hello!"
    kinds = [k for k in events.kinds() if k in ("reasoning", "delta")]
    assert kinds.index("delta") > max(i for i, k in enumerate(kinds) if k == "reasoning")  # in the order it came
    [answer] = [m for m in result["messages"] if m["role"] == "assistant"]
    assert (answer["text"], answer["reasoning"]) == ("Hello!", "They greet me; I greet back.")
    final = read_transcript(result["transcript"])[-1]
    assert final["reasoning"] == "They greet me; I greet back."


async def test_a_reply_that_is_all_reasoning_is_not_an_empty_success(workspace, fake_openai):
    """The reasoning template's case: the model never closes its thinking, `content` stays empty and the
    token limit ends it. The run shows the reasoning, its answer is empty, and it is not a plain success."""
    fake_openai.enqueue(Reply(reasoning="Thinking about it at length", text=None, finish_reason="length",
                              completion_tokens=12))
    result, events = await run(workspace, "short")
    assert result["text"] == "" and result["reasoning"] == "Thinking about it at length"
    assert result["incomplete"] == {
        "reason": "cutOff",
        "message": "The answer of `short` was cut off: it reached its token limit (`max_tokens` 12)"}
    [warning] = events.of("warning")
    assert warning["message"] == result["incomplete"]["message"] and warning["agentId"] == "short"


async def test_a_cut_off_answer_is_said_where_it_happens_and_at_the_end(workspace, fake_openai):
    fake_openai.enqueue(Reply(text="The launch is on", finish_reason="length"))
    result, events = await run(workspace, "short")
    assert result["status"] == "completed" and result["text"] == "The launch is on"
    assert result["incomplete"]["reason"] == "cutOff"
    kinds = events.kinds()
    assert kinds.index("warning") < kinds.index("completed")
    assert events.of("modelCall")[0]["finishReason"] == "length"
    assert events.of("completed")[0]["incomplete"] == result["incomplete"]


async def test_a_content_filter_stop_is_said(workspace, fake_openai):
    fake_openai.enqueue(Reply(text="I can", finish_reason="content_filter"))
    result, _ = await run(workspace, "thinker")
    assert result["incomplete"] == {"reason": "contentFilter", "message": "The answer of `thinker` was cut off: it was "
                                                                          "stopped by the endpoint's content filter"}


async def test_a_whole_answer_after_a_cut_one_is_complete(workspace, fake_openai):
    """The last answer decides: a cut-off in an agent called as a tool is said, and the caller's answer is whole."""
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("echo", {"query": "hello"}, "c1")]),
                        Reply(text="hel", finish_reason="length"),
                        Reply(text="Echo said hel."))
    result, events = await run(workspace, "lead")
    assert result["status"] == "completed" and "incomplete" not in result
    [warning] = events.of("warning")
    assert warning["message"] == ("The answer of `echo` (called as a tool) was cut off: it reached its token limit "
                                  "(`max_tokens` 5)")


async def test_a_tool_call_cut_at_max_tokens_fails_naming_it_and_keeps_the_usage(workspace, fake_openai):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", '{"path": "data/no', "c1")], finish_reason="length",
                              prompt_tokens=275, completion_tokens=12))
    result, events = await run(workspace, "reader")
    assert result["status"] == "failed"
    assert result["error"] == ("The model's answer reached its token limit (`max_tokens` 12) in the middle of the "
                               "arguments of the tool 'read_file', so the tool was not called; raise `max_tokens` in "
                               "the agent's `chat_options`")
    assert not DOUBLED_WORD.search(result["error"])
    [call] = events.of("modelCall")
    assert call["failed"] is True and call["usage"]["inputTokens"] == 275 and call["usage"]["outputTokens"] == 12
    replayed = await replay_run(str(workspace), None, result["transcript"])
    assert replayed.matched, replayed.difference
    [again] = [e for e in replayed.events if e["kind"] == "modelCall"]
    assert again["usage"] == call["usage"]


async def test_tool_choice_required_answered_in_text_only_is_reported(workspace, fake_openai):
    fake_openai.enqueue(Reply(text="The notes say Tuesday."))
    result, events = await run(workspace, "reader")
    assert result["status"] == "completed" and "incomplete" not in result
    [warning] = events.of("warning")
    assert (warning["reason"], warning["message"]) == (
        "toolChoiceIgnored",
        "The model of `reader` was required to call a tool (`tool_choice: required`) and answered in text only")
    assert fake_openai.requests[0].body["tool_choice"] == "required"


async def test_a_run_the_repeated_call_guard_stops_is_not_a_plain_success(workspace, fake_openai):
    same = {"path": "data/notes.txt"}
    fake_openai.enqueue(Reply(text="Reading.", tool_calls=[ToolCall("read_file", same, "c1")]),
                        Reply(tool_calls=[ToolCall("read_file", same, "c2")]),
                        Reply(tool_calls=[ToolCall("read_file", same, "c3")]))
    result, events = await run(workspace, "looper")
    assert result["status"] == "completed" and result["text"] == "Reading."
    assert result["incomplete"] == {
        "reason": "repeatedCall",
        "message": "The repeated-call guard stopped the tool loop of `looper`: the model called `read_file` 3 times "
                   "with the same arguments in one request, so the answer is the text the model wrote before that "
                   "call"}
    assert len(fake_openai.requests) == 3  # the third call was not run and the model was not asked again


def test_the_terminal_shows_thinking_on_stderr_and_only_the_answer_on_stdout(workspace, fake_openai):
    fake_openai.enqueue(Reply(reasoning="Short thought.", text="Hello!", reasoning_tokens=3, completion_tokens=9))
    result = oscova("run", "thinker", "--input", "hi", cwd=workspace)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hello!\n"
    assert "thinking: Short thought.\n" in result.stderr
    assert "· 9 out (3 reasoning)" in result.stderr
    assert "✓ completed" in result.stderr


def test_a_cut_off_run_exits_3_with_a_notice(workspace, fake_openai):
    fake_openai.enqueue(Reply(text="The launch is on", finish_reason="length"))
    result = oscova("run", "short", "--input", "hi", cwd=workspace)
    assert result.returncode == 3, result.stderr
    assert result.stdout == "The launch is on\n"
    assert "⚠ The answer of `short` was cut off: it reached its token limit (`max_tokens` 12)\n" in result.stderr
    assert "⚠ incomplete: The answer of `short` was cut off" in result.stderr
    assert "✓ completed" not in result.stderr
    fake_openai.enqueue(Reply(text="Cut", finish_reason="length"))
    as_json = oscova("run", "short", "--input", "hi", "--json", cwd=workspace)
    assert as_json.returncode == 3
    final = json.loads(as_json.stdout.splitlines()[-1])
    assert final["kind"] == "completed" and final["incomplete"]["reason"] == "cutOff"


def test_the_summary_shows_the_endpoints_prompt_tokens_beside_the_prediction(workspace, fake_openai):
    fake_openai.enqueue(Reply(text="Hi.", prompt_tokens=275))
    result = oscova("run", "thinker", "--input", "hi", cwd=workspace)
    assert result.returncode == 0, result.stderr
    assert re.search(r"thinker → fake-model\s+275 in \(≈ \d+ predicted\) · 7 out", result.stderr), result.stderr


async def test_reasoning_is_replayed(workspace, fake_openai):
    fake_openai.enqueue(Reply(reasoning="Because.", text="Yes.", reasoning_tokens=2))
    result, _ = await run(workspace, "thinker")
    replayed = await replay_run(str(workspace), None, result["transcript"])
    assert replayed.matched, replayed.difference
    assert replayed.result["reasoning"] == "Because." and replayed.result["text"] == "Yes."
    [call] = [e for e in replayed.events if e["kind"] == "modelCall"]
    assert call["usage"]["reasoningTokens"] == 2
