"""A run over `[models.NAME] context_window` or a definition's `max_prompt_tokens` is refused before the request is
sent, with the figures; the preview warns."""

from __future__ import annotations

import re

from oscova_lsp.runs import RunService
from oscova_lsp.runs.terminal import format_preview

from tests.support.fake_openai import Reply, ToolCall

from .conftest import KEY_VARIABLE, make_workspace

LONG_NOTES = "The launch is on Tuesday. " * 400  # about 2,400 o200k tokens


def budget_workspace(root, base_url, *, window: int | None = None, max_prompt: int | None = None):
    window_line = f"context_window = {window}\n" if window is not None else ""
    host = (f'[host]\nuser_id = "alice"\n\n[models.default]\nmodel = "gpt-4o-mini"\nbase_url = "{base_url}"\n'
            f'api_key_env = "{KEY_VARIABLE}"\n{window_line}\n[environment]\nworkspace_directories = ["data"]\n')
    limit = f"max_prompt_tokens: {max_prompt}\n" if max_prompt is not None else ""
    agent = ("id: reader\ninstructions: You read the notes for {{ user_name }}.\ntools: [read_file]\n"
             f"workspaces: [data]\n{limit}")
    make_workspace(root, base_url, host=host, agents={"reader": agent})
    (root / "data" / "notes.txt").write_text(LONG_NOTES)
    return root


async def test_a_run_over_the_context_window_is_refused_before_any_request(tmp_path, fake_openai, canary_key):
    service = RunService(budget_workspace(tmp_path / "ws", fake_openai.base_url, window=100))
    try:
        preview = await service.preview("reader", "Summarize " + "the notes " * 40)
        result = await service.run("reader", "Summarize " + "the notes " * 40)
    finally:
        await service.aclose()
    assert fake_openai.requests == []
    assert result["status"] == "failed"
    total = preview["tokens"]["total"]
    assert total > 100
    assert re.fullmatch(
        rf"The request would be {total:,} prompt tokens \(instructions \d+, messages \d+, tools \d+\), over the 100 "
        r"of the context window of \[models\.default\]; nothing was sent\. Shorten the input, the instructions or the "
        r"history, or raise the limit", result["error"]), result["error"]
    assert preview["tokens"]["warnings"] == [
        result["error"].split("; nothing was sent")[0] + ": a run would refuse to send it"]
    assert f"! The request would be {total:,} prompt tokens" in format_preview(preview)


async def test_the_request_after_a_long_tool_result_is_refused_before_it_is_sent(tmp_path, fake_openai, canary_key):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "c1")]),
                        Reply(text="never asked"))
    service = RunService(budget_workspace(tmp_path / "ws", fake_openai.base_url, max_prompt=1000))
    try:
        preview = await service.preview("reader", "Read the notes.")
        result = await service.run("reader", "Read the notes.")
    finally:
        await service.aclose()
    assert "warnings" not in preview["tokens"]  # the first request fits
    assert len(fake_openai.requests) == 1  # the second, with the notes, was never sent
    assert result["status"] == "failed"
    assert "over the 1,000 of `max_prompt_tokens` of agent 'reader'; nothing was sent" in result["error"]
    assert re.search(r"The request would be 2,\d{3} prompt tokens", result["error"]), result["error"]


async def test_without_a_limit_the_same_run_is_sent(tmp_path, fake_openai, canary_key):
    fake_openai.enqueue(Reply(text="Read."))
    service = RunService(budget_workspace(tmp_path / "ws", fake_openai.base_url))
    try:
        result = await service.run("reader", "Summarize " + "the notes " * 40)
    finally:
        await service.aclose()
    assert result["status"] == "completed" and len(fake_openai.requests) == 1
