"""Token usage and duration per model call and per tool call: in the run events and the terminal summary.

A run of `coordinator` calls the model twice, the agent `repeater` (as a tool, which calls the model once)
and `read_file`; the local server reports fixed token counts per call."""

from __future__ import annotations

import re
import textwrap

from oscova_lsp.runs import EVENT_KINDS, RunService, read_transcript

from . import delegation
from .conftest import Recorder, make_workspace
from .test_cli import oscova


def _workspace(tmp_path, fake_openai):
    fake_openai.responder = delegation.responder()
    return make_workspace(tmp_path / "ws", fake_openai.base_url, agents=delegation.AGENTS)


async def test_each_model_call_and_tool_call_reports_its_tokens_and_duration(tmp_path, fake_openai, canary_key):
    root = _workspace(tmp_path, fake_openai)
    service = RunService(root)
    events = Recorder()
    try:
        result = await service.run("coordinator", "When is the launch?", on_event=events)
    finally:
        await service.aclose()
    assert result["status"] == "completed", result.get("error")
    assert result["text"] == delegation.ANSWER
    assert all(e["kind"] in EVENT_KINDS for e in events.events)

    calls = events.of("modelCall")
    assert [(c["agentId"], c["model"], c["responseModel"]) for c in calls] == [
        ("coordinator", "fake-model", "fake-model-2025"),
        ("repeater", "fake-model", "fake-model-2025"),  # the agent used as a tool: its own call, its own tokens
        ("coordinator", "fake-model", "fake-model-2025"),
    ]
    expected = [delegation.FIRST, delegation.REPEATER, delegation.SECOND]
    assert [(c["usage"]["inputTokens"], c["usage"]["outputTokens"], c["usage"]["totalTokens"]) for c in calls] == [
        (i, o, i + o) for i, o in expected]
    assert all(isinstance(c["durationMs"], float) and c["durationMs"] > 0 for c in calls)

    results = {e["name"]: e for e in events.of("toolResult")}
    assert set(results) == {"repeater", "read_file"}
    assert all(isinstance(e["durationMs"], float) and e["durationMs"] > 0 for e in results.values())
    # the agent used as a tool ran its model call inside the tool call: it cannot have taken longer
    assert results["repeater"]["durationMs"] >= calls[1]["durationMs"]

    # the run's total counts every model call, the nested agent's too
    total = events.of("completed")[0]["usage"]
    assert total == {"inputTokens": sum(i for i, _ in expected), "outputTokens": sum(o for _, o in expected),
                     "totalTokens": sum(i + o for i, o in expected)}
    # the transcript holds the same events
    assert [e for e in read_transcript(result["transcript"]) if e["kind"] == "modelCall"] == calls


def test_the_terminal_summary_lists_every_call_with_tokens_and_time(tmp_path, fake_openai):
    root = _workspace(tmp_path, fake_openai)
    result = oscova("run", "coordinator", "--input", "When is the launch?", cwd=root)
    assert result.returncode == 0, result.stderr
    assert result.stdout == delegation.ANSWER + "\n"
    total = sum(i + o for i, o in (delegation.FIRST, delegation.SECOND, delegation.REPEATER))
    lines = result.stderr.splitlines()
    done = next(n for n, line in enumerate(lines) if line.startswith("✓ completed"))
    assert lines[done] == f"✓ completed · {total} tokens"
    summary = textwrap.dedent("\n".join(line for line in lines[done + 1:] if line.startswith("  ")))
    timing = r"\s+(\d+ ms|\d+\.\d s)"
    patterns = [
        rf"model\s+coordinator → fake-model-2025\s+23 in \(≈ \d+ predicted\) · 9 out{timing}",
        rf"model\s+repeater → fake-model-2025\s+5 in \(≈ \d+ predicted\) · 3 out{timing}",
        rf"tool\s+repeater{timing}",
        rf"tool\s+read_file{timing}",
        rf"model\s+coordinator → fake-model-2025\s+41 in \(≈ \d+ predicted\) · 6 out{timing}",
    ]
    rows = summary.splitlines()
    assert len(rows) == len(patterns), summary
    for row, pattern in zip(rows, patterns, strict=True):
        assert re.fullmatch(pattern, row), (row, pattern)
