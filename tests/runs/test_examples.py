"""The bundled example workspace previews and runs (a copy, pointed at the local server)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from oscova_lsp.runs import RunService

from tests.support.fake_openai import Reply, ToolCall

from .conftest import KEY_VARIABLE, Recorder

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
async def examples(tmp_path, fake_openai, canary_key):
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns("__pycache__", ".oscova"))
    toml = (root / "oscova.toml").read_text()
    toml = re.sub(r'(\[models\.default\]\nmodel = "[^"]+"\n)api_key_env = "OPENAI_API_KEY"',
                  rf'\1base_url = "{fake_openai.base_url}"\napi_key_env = "{KEY_VARIABLE}"', toml)
    assert fake_openai.base_url in toml
    (root / "oscova.toml").write_text(toml)
    service = RunService(root)
    yield service
    await service.aclose()


async def test_the_examples_preview_with_their_custom_ticket_provider(examples, fake_openai):
    triage = await examples.preview("triage", "Customers in eu-west see 502 errors.")
    assert [p["type"] for p in triage["providers"]] == [
        "environment", "tools", "personal", "private_notes", "agent_tools", "tickets"]
    tickets = triage["providers"][-1]
    assert tickets["class"] == "TicketContextProvider" and tickets["stateKeys"] == ["TicketContextProvider"]
    block = tickets["instructions"]
    assert "<tickets>" in block and "Owner: Dana Kim" in block
    # Open tickets only, the ones matching the request first.
    assert block.index("#1042") < block.index("#1027") < block.index("#1031")
    assert "#1019" not in block

    concierge = await examples.preview("concierge", "My deployment fails with a 502.")
    assert [p["type"] for p in concierge["providers"]] == [
        "environment", "tools", "personal", "private_notes", "agent_tools", "memory", "todo"]
    assert [t["name"] for t in concierge["tools"]][:4] == ["current_datetime", "triage", "researcher", "writer"]
    assert "You talk with Alice Example" in concierge["instructions"]
    assert fake_openai.requests == []


async def test_the_concierge_runs_and_delegates_to_triage(examples, fake_openai):
    fake_openai.enqueue(
        Reply(tool_calls=[ToolCall("triage", {"query": "eu-west 502 since this morning"}, "t1")]),
        Reply(text="Incident, urgent: see #1042."),
        Reply(text="This is a known incident (#1042); Dana Kim is on it.", chunk_size=8),
    )
    events = Recorder()
    result = await examples.run("concierge", "My deployment to eu-west fails with a 502 since this morning.",
                                on_event=events)
    assert result["status"] == "completed", result.get("error")
    assert result["text"] == "This is a known incident (#1042); Dana Kim is on it."
    assert events.of("toolResult")[0]["result"] == "Incident, urgent: see #1042."
    triage_system = fake_openai.requests[1].messages[0]["content"]
    assert "You are Triage" in triage_system
    assert "<tickets>" not in triage_system  # run providers apply to the requested agent only
    assert not fake_openai.requests[1].stream and fake_openai.requests[2].stream
    assert Path(result["transcript"]).is_file()


async def test_triage_runs_with_its_tickets(examples, fake_openai):
    fake_openai.enqueue(Reply(text="Incident, high urgency; related: #1042."))
    result = await examples.run("triage", "Customers in eu-west see 502 errors.")
    assert result["status"] == "completed", result.get("error")
    system = fake_openai.requests[0].messages[0]["content"]
    assert "You are Triage" in system and "- #1042 [high]" in system and "Owner: Dana Kim" in system
