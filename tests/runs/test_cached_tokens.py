"""The endpoint's cached input tokens (`usage.prompt_tokens_details.cached_tokens`), where it reports them, in
`modelCall` events, transcripts and the terminal summary; in spans: test_tracing.py, beside the
session's one Phoenix."""

from __future__ import annotations

import re

from oscova_lsp.runs import RunService, read_transcript
from oscova_lsp.runs.terminal import call_summary

from tests.support.fake_openai import Reply

from .conftest import Recorder


async def test_cached_input_tokens_reach_events_transcripts_and_the_summary(workspace, fake_openai, canary_key):
    fake_openai.enqueue(Reply(text="Tuesday.", prompt_tokens=1900, cached_tokens=1536),
                        Reply(text="Tuesday again.", prompt_tokens=1900))  # an endpoint that does not say
    events = Recorder()
    service = RunService(workspace)
    try:
        cached = await service.run("helper", "When is the launch?", on_event=events)
        silent = await service.run("helper", "And the time?", on_event=events)
    finally:
        await service.aclose()
    assert cached["status"] == silent["status"] == "completed"
    first, second = events.of("modelCall")
    assert first["usage"] == {"inputTokens": 1900, "outputTokens": 7, "totalTokens": 1907, "cachedInputTokens": 1536}
    assert "cachedInputTokens" not in second["usage"]  # not reported is not zero
    recorded = [e for e in read_transcript(cached["transcript"]) if e["kind"] == "modelCall"]
    assert recorded[0]["usage"]["cachedInputTokens"] == 1536
    assert re.search(r"1900 in \(1536 cached, ≈ \d+ predicted\) · 7 out", call_summary([first])[0])
    assert re.search(r"1900 in \(≈ \d+ predicted\) · 7 out", call_summary([second])[0])
