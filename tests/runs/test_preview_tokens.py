"""What a prompt costs, in the preview: `tokens` in JSON and text, each provider's share and each tool's
cost, and the figure equal to what the request that a run then sends costs."""

from __future__ import annotations

import json

from oscova_lsp.runs import RunService
from oscova_runtime import tokens

from tests.support.fake_openai import Reply

from .test_cli import oscova
from .test_token_counts import example_workspace


async def test_the_preview_says_what_the_request_will_cost_as_the_run_then_sends_it(tmp_path, fake_openai, canary_key):
    root = example_workspace(tmp_path / "examples", fake_openai.base_url)
    service = RunService(root)
    try:
        preview = await service.preview("concierge", "My deployment fails with a 502.")
        fake_openai.enqueue(Reply(text="On it."))
        result = await service.run("concierge", "My deployment fails with a 502.")
    finally:
        await service.aclose()
    assert result["status"] == "completed", result.get("error")
    counted = preview["tokens"]
    assert set(counted) >= {"total", "instructions", "messages", "tools", "byProvider"}
    assert [p["type"] for p in counted["byProvider"]] == [p["type"] for p in preview["providers"]]
    assert all(set(p) == {"type", "instructions", "messages", "tools"} for p in counted["byProvider"])
    assert counted["exact"] and counted["tokenizer"] == "o200k_base"

    sent = fake_openai.requests[0].body
    tokenizer = tokens.tokenizer_for("gpt-4.1-mini")
    assert counted["total"] == tokens.count_request(sent["messages"], sent["tools"], tokenizer).total
    assert counted["total"] == counted["instructions"] + counted["messages"] + counted["tools"] + 3

    by_type = {p["type"]: p for p in counted["byProvider"]}
    personal = next(p for p in preview["providers"] if p["type"] == "personal")
    assert by_type["personal"]["instructions"] == tokenizer.count(personal["instructions"]) > 20
    todo_tools = [t for t in sent["tools"] if t["function"]["name"].startswith("todo_")]
    assert by_type["todo"]["tools"] == sum(tokens.tool_tokens(t, tokenizer) for t in todo_tools) > 0
    assert by_type["todo"]["messages"] > 0 and by_type["private_notes"] == {
        "type": "private_notes", "instructions": 0, "messages": 0, "tools": 0}
    costs = {t["name"]: t["tokens"] for t in preview["tools"]}
    assert list(costs) == [t["function"]["name"] for t in sent["tools"]]
    assert sum(costs.values()) + 12 == counted["tools"]


def test_preview_prints_the_cost_and_marks_an_estimate(tmp_path, fake_openai, canary_key):
    root = example_workspace(tmp_path / "examples", fake_openai.base_url)
    shown = oscova("preview", "concierge", "--input", "Hello", cwd=root)
    assert shown.returncode == 0, shown.stderr
    section = shown.stdout[shown.stdout.index("── Tokens (o200k_base)"):]
    as_json = json.loads(oscova("preview", "concierge", "--input", "Hello", "--json", cwd=root).stdout)["tokens"]
    assert section.splitlines()[1] == (f"{as_json['total']:,} tokens: instructions {as_json['instructions']:,} · "
                                       f"messages {as_json['messages']:,} · tools {as_json['tools']:,}")
    assert "  memory " in section and "█" in section and "todo_write " in section and "≈" not in section

    local = oscova("preview", "summarizer", cwd=root)  # llama3.1:8b: no tokenizer known
    assert local.returncode == 0, local.stderr
    estimate = local.stdout[local.stdout.index("── Tokens (estimate)"):].splitlines()[1]
    assert estimate.startswith("≈ ") and "instructions ≈ " in estimate


def test_an_estimate_says_why_in_the_json_as_the_hover_does(tmp_path, fake_openai, canary_key):
    """`tokens.note` is the one sentence the hover, the VS Code preview and a refused request use."""
    root = example_workspace(tmp_path / "examples", fake_openai.base_url)
    exact = json.loads(oscova("preview", "concierge", "--input", "Hello", "--json", cwd=root).stdout)["tokens"]
    estimated = json.loads(oscova("preview", "summarizer", "--json", cwd=root).stdout)["tokens"]
    assert "note" not in exact and not estimated["exact"]
    assert estimated["note"] == "estimated: no tokenizer is known for the model (4 characters a token)"
