"""Recording, replay and compare: a run recorded against the local OpenAI-compatible server (the
real `openai` client) replays offline to the same events; an edit makes the replay stop at the first
difference with a diff; `--live-tools` runs the tools; no replay opens a network connection."""

from __future__ import annotations

import asyncio
import datetime
import json
import re
import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from oscova_lsp.runs import RunService, read_transcript
from oscova_lsp.runs.diff import diff_transcripts, render_requests
from oscova_lsp.runs.replay import DRIFTED, RecordingError, load_recording, replay_run
from oscova_lsp.runs.transcript import RUN_VERSION, resolve_transcript

from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall

from .conftest import CANARY_KEY, Recorder, host_toml, make_workspace


class NetworkUsed(AssertionError):
    pass


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], list[Any]]]:
    """`guard()` makes every later attempt to open a network connection fail loudly, and returns the list
    of attempts (the recording run before it talks to the local server)."""
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise NetworkUsed(f"a network connection was attempted: {args!r}")

    def guard() -> list[Any]:
        monkeypatch.setattr(socket.socket, "connect", refuse)
        monkeypatch.setattr(socket.socket, "connect_ex", refuse)
        monkeypatch.setattr(socket, "create_connection", refuse)
        return attempts

    yield guard


def replayable(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """What a user sees of a run, without what differs by nature (ids, times, delta grouping)."""
    out: list[tuple[str, Any]] = []
    for event in events:
        kind = event["kind"]
        if kind == "delta":
            continue
        fields = {k: v for k, v in event.items()
                  if k not in ("runId", "seq", "time", "kind", "transcript", "sessionId", "durationMs")}
        out.append((kind, fields))
    return out


def without_model_calls(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(kind, {k: v for k, v in fields.items() if k != "usage"})
            for kind, fields in replayable(events) if kind != "modelCall"]


async def record(service: RunService, fake: FakeOpenAI, agent: str = "helper", text: str = "When is the launch?"
                 ) -> dict[str, Any]:
    fake.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "c1")]),
                 Reply(text="The launch is on Tuesday.", chunk_size=4))
    result = await service.run(agent, text)
    assert result["status"] == "completed", result
    return result


# -- recording -----------------------------------------------------------------------------------------


async def test_a_transcript_records_every_request_response_and_tool_result(service, fake_openai, workspace):
    result = await record(service, fake_openai)
    recording = load_recording(result["transcript"])
    assert recording.version == RUN_VERSION == 3  # no edits: an oscova-lsp reading version 3 replays it
    assert (recording.agent_id, recording.input, recording.run_id) == ("helper", "When is the launch?",
                                                                       result["runId"])
    # Each model request as the endpoint received it (the key is in a header, never in the body).
    assert [e["request"] for e in recording.exchanges] == [r.body for r in fake_openai.requests]
    first, second = recording.exchanges
    assert first["response"]["toolCalls"] == [{"id": "c1", "name": "read_file", "arguments": {"path": "data/notes.txt"}}]
    assert second["response"]["text"] == "The launch is on Tuesday."
    assert second["response"]["usage"] == {"inputTokens": 11, "outputTokens": 7, "totalTokens": 18}
    tool, = recording.tools
    assert (tool["name"], tool["arguments"], tool["result"]) == ("read_file", {"path": "data/notes.txt"},
                                                                 "The launch is on Tuesday.\n")
    # The events are still the events: read_transcript leaves the recording lines out.
    assert [e["kind"] for e in read_transcript(result["transcript"])][0] == "started"
    assert CANARY_KEY not in Path(result["transcript"]).read_text()


# -- replay --------------------------------------------------------------------------------------------


async def test_a_recorded_run_replays_to_the_same_events_without_the_network(service, fake_openai, workspace,
                                                                              no_network):
    recorded = Recorder()
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "c1")]),
                        Reply(text="The launch is on Tuesday.", chunk_size=4))
    result = await service.run("helper", "When is the launch?", on_event=recorded)
    assert result["status"] == "completed"
    served = len(fake_openai.requests)
    attempts = no_network()

    replayed = await replay_run(str(workspace), None, result["transcript"])
    assert replayed.matched and replayed.status == "completed" and replayed.difference is None
    assert replayable(replayed.events) == replayable(recorded.events)
    assert replayed.result["text"] == "The launch is on Tuesday."
    assert attempts == [] and len(fake_openai.requests) == served
    # The replay has a transcript of its own, which replays too.
    assert replayed.transcript and replayed.transcript != result["transcript"]
    again = await replay_run(str(workspace), None, replayed.transcript)
    assert again.matched


def test_the_socket_guard_is_real(workspace, fake_openai, no_network):
    """The guard the replay tests rely on stops the real client: a run against the endpoint fails under it."""
    import asyncio

    attempts = no_network()

    async def main() -> dict[str, Any]:
        service = RunService(workspace)
        try:
            return await service.run("echo", "hi")
        finally:
            await service.aclose()

    result = asyncio.run(main())
    assert result["status"] == "failed" and attempts


WRITER = {"writer": """\
    id: writer
    instructions_file: writer.j2
    tools: [read_file]
    workspaces: [data]
    """}
WRITER_TEMPLATE = "You write short notes for {{ user_name }}.\nAlways answer in English.\nKeep it brief.\n"


@pytest.fixture
def writer_workspace(workspace: Path) -> Path:
    (workspace / "agents" / "writer.agent.yaml").write_text(WRITER["writer"].replace("    ", "", 1)
                                                            .replace("\n    ", "\n"))
    (workspace / "agents" / "writer.j2").write_text(WRITER_TEMPLATE)
    return workspace


async def test_a_template_edit_stops_the_replay_with_a_diff_naming_the_changed_line(writer_workspace, fake_openai,
                                                                                    no_network):
    service = RunService(writer_workspace)
    try:
        result = await record(service, fake_openai, "writer", "Note the launch.")
    finally:
        await service.aclose()
    attempts = no_network()
    template = writer_workspace / "agents" / "writer.j2"
    template.write_text(WRITER_TEMPLATE.replace("in English", "in French"))

    replayed = await replay_run(str(writer_workspace), None, result["transcript"])
    assert not replayed.matched and replayed.status == DRIFTED
    difference = replayed.difference or ""
    assert difference.splitlines()[0] == "model request 1 differs in the instructions"
    assert "-Always answer in English." in difference.splitlines()
    assert "+Always answer in French." in difference.splitlines()
    assert "Keep it brief." in difference  # context around the change
    # The run stopped at the first request: no tool ran, and the run says why.
    assert [e["kind"] for e in replayed.events if e["kind"] in ("toolCall", "toolResult")] == []
    final = replayed.events[-1]
    assert final["kind"] == "failed" and "Replay drifted from the recording" in final["error"]
    assert attempts == []


async def test_old_transcripts_get_a_clear_message(workspace, tmp_path):
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"runId": "r1", "seq": 1, "kind": "started", "agentId": "helper", "input": "hi"}) + "\n"
                   + json.dumps({"runId": "r1", "seq": 2, "kind": "completed", "text": "hello"}) + "\n")
    with pytest.raises(RecordingError, match=r"old\.jsonl was recorded before transcript version 2.*record the "
                                             r"run again"):
        await replay_run(str(workspace), None, str(old))
    assert [e["kind"] for e in read_transcript(str(old))] == ["started", "completed"]  # still readable
    not_json = tmp_path / "notes.jsonl"
    not_json.write_text("just words\n")
    with pytest.raises(RecordingError, match="is not a run transcript"):
        load_recording(str(not_json))
    with pytest.raises(RecordingError, match="no transcript at"):
        load_recording(str(tmp_path / "missing.jsonl"))


MARKER_TOOL = '''\
from pathlib import Path


def mark(note: str) -> str:
    """Leaves a marker file: the test sees whether the tool ran."""
    with open(Path(__file__).with_name("marker.txt"), "a", encoding="utf-8") as handle:
        handle.write(note + "\\n")
    return f"marked {note}"
'''


@pytest.fixture
def marker_workspace(tmp_path: Path, fake_openai: FakeOpenAI, canary_key: str) -> Path:
    root = make_workspace(tmp_path / "ws", fake_openai.base_url,
                          host=host_toml(fake_openai.base_url, extra='\n[tools.mark]\ncallable = "marker_tool:mark"\n'),
                          agents={"marker": "id: marker\ninstructions: Mark what you are told.\ntools: [mark]\n"})
    (root / "marker_tool.py").write_text(MARKER_TOOL)
    return root


async def test_live_tools_run_the_tools_and_recorded_results_do_not(marker_workspace, fake_openai, no_network):
    service = RunService(marker_workspace)
    try:
        fake_openai.enqueue(Reply(tool_calls=[ToolCall("mark", {"note": "first"}, "m1")]), Reply(text="Marked."))
        result = await service.run("marker", "mark first")
    finally:
        await service.aclose()
    marker = marker_workspace / "marker.txt"
    assert result["status"] == "completed" and marker.read_text() == "first\n"
    marker.unlink()
    attempts = no_network()

    replayed = await replay_run(str(marker_workspace), None, result["transcript"])
    assert replayed.matched and not marker.exists()  # the recorded result stood in for the tool
    assert next(e for e in replayed.events if e["kind"] == "toolResult")["result"] == "marked first"

    live = await replay_run(str(marker_workspace), None, result["transcript"], live_tools=True)
    assert live.matched and marker.read_text() == "first\n"  # the tool ran, and gave the same result
    assert attempts == []


async def test_a_live_tool_with_a_new_result_drifts_in_the_tool_results(service, fake_openai, workspace, no_network):
    result = await record(service, fake_openai)
    attempts = no_network()
    (workspace / "data" / "notes.txt").write_text("The launch is on Friday.\n")
    assert (await replay_run(str(workspace), None, result["transcript"])).matched  # recorded: Tuesday
    live = await replay_run(str(workspace), None, result["transcript"], live_tools=True)
    assert live.status == DRIFTED and not live.matched
    lines = (live.difference or "").splitlines()
    assert lines[0] == "model request 2 differs in the tool results"
    assert "-[tool c1] The launch is on Tuesday." in lines and "+[tool c1] The launch is on Friday." in lines
    assert attempts == []


async def test_the_replay_shows_the_recorded_time_to_templates(tmp_path, fake_openai, canary_key, no_network):
    root = make_workspace(tmp_path / "ws", fake_openai.base_url,
                          host=host_toml(fake_openai.base_url, extra='\n[user]\ntimezone = "UTC"\n'),
                          agents={"clock": "id: clock\ninstructions: It is {{ current_date }} {{ current_time }}.\n"})
    service = RunService(root)
    try:
        fake_openai.enqueue(Reply(text="Noted."))
        result = await service.run("clock", "what time is it?")
    finally:
        await service.aclose()
    attempts = no_network()
    # Move the recording to another day and time: the replay must render that time, not the current one.
    path = Path(result["transcript"])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    header = lines[0]
    recorded_clock = datetime.datetime.fromisoformat(header["clock"])
    shown = recorded_clock.strftime("%Y-%m-%d %H:%M")
    header["clock"] = "2020-01-02T03:04:05+00:00"
    model = next(line for line in lines if line.get("record") == "model")
    system = model["request"]["messages"][0]
    assert system["content"].endswith(f"It is {shown}.\n")
    system["content"] = system["content"].replace(f"It is {shown}.", "It is 2020-01-02 03:04.")
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    replayed = await replay_run(str(root), None, str(path))
    assert replayed.matched, replayed.difference
    assert attempts == []


async def test_an_agent_called_as_a_tool_is_recorded_and_replays_with_and_without_live_tools(service, fake_openai,
                                                                                             workspace, no_network):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("echo", {"query": "say hi"}, "e1")]),
                        Reply(text="hi"),  # echo's own model call, inside the tool call e1
                        Reply(text="Echo said hi."))
    result = await service.run("lead", "ask echo")
    assert result["status"] == "completed", result
    recording = load_recording(result["transcript"])
    assert [e["within"] for e in recording.exchanges] == [None, "e1", None]
    assert recording.exchanges[1]["request"]["messages"][-1] == {"role": "user", "content": "say hi"}
    attempts = no_network()

    recorded_tools = await replay_run(str(workspace), None, result["transcript"])
    assert recorded_tools.matched  # echo ran, its model call answered from the recording
    live = await replay_run(str(workspace), None, result["transcript"], live_tools=True)
    assert live.matched  # the same with live tools
    assert replayable(live.events) == replayable(recorded_tools.events)
    assert [f["agentId"] for k, f in replayable(live.events) if k == "modelCall"] == ["lead", "echo", "lead"]
    # An edit of the agent called as a tool drifts, in echo's request, with recorded tools as with live ones.
    echo = workspace / "agents" / "echo.agent.yaml"
    echo.write_text(echo.read_text().replace("Repeat the query.", "Repeat the query twice."))
    for live_tools in (False, True):
        drifted = await replay_run(str(workspace), None, result["transcript"], live_tools=live_tools)
        assert drifted.status == DRIFTED
        assert (drifted.difference or "").splitlines()[0] == ("model request 2 differs in the instructions (a "
                                                              "request made inside the tool call e1)")
    assert attempts == []


async def test_a_run_with_approvals_replays_with_the_same_tool_list(service, fake_openai, workspace, no_network):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("write_file", {"path": "data/out.txt", "content": "hello"}, "w1")]),
                        Reply(text="Written."))

    async def approve(request: dict[str, Any]) -> bool:
        return True

    result = await service.run("helper", "write it", approve=approve)
    assert "write_file" in fake_openai.requests[0].tool_names and result["status"] == "completed"
    (workspace / "data" / "out.txt").unlink()
    attempts = no_network()
    replayed = await replay_run(str(workspace), None, result["transcript"])
    assert replayed.matched and not (workspace / "data" / "out.txt").exists()
    # Approval is never taken from the recording: without anyone to ask, the live tool is refused ...
    refused = await replay_run(str(workspace), None, result["transcript"], live_tools=True)
    assert not refused.matched and not (workspace / "data" / "out.txt").exists()
    assert [e.get("denied") for e in refused.events if e["kind"] == "toolResult"] == [True]
    # ... and with someone to ask, it is asked, as in a run.
    asked: list[dict[str, Any]] = []

    async def ask(request: dict[str, Any]) -> bool:
        asked.append(request)
        return True

    live = await replay_run(str(workspace), None, result["transcript"], live_tools=True, approve=ask)
    assert live.matched and (workspace / "data" / "out.txt").read_text() == "hello"
    assert [(r["tool"], r["arguments"]) for r in asked] == [("write_file", {"path": "data/out.txt", "content": "hello"})]
    assert attempts == []


async def test_a_failed_run_replays_to_the_same_failure(service, fake_openai, workspace, no_network):
    fake_openai.enqueue(Reply(status=500, error_message=f"upstream broke for {CANARY_KEY}"))
    result = await service.run("helper", "hi")
    assert result["status"] == "failed"
    attempts = no_network()
    replayed = await replay_run(str(workspace), None, result["transcript"])
    assert replayed.matched and replayed.status == "failed"
    assert replayed.result["error"] == result["error"] and "upstream broke for ***" in result["error"]
    assert attempts == []


async def test_diff_of_a_run_and_its_replay_is_empty_and_of_two_runs_names_the_differences(service, fake_openai,
                                                                                           workspace):
    first = await record(service, fake_openai)
    replayed = await replay_run(str(workspace), None, first["transcript"])
    assert replayed.transcript is not None
    assert diff_transcripts(first["transcript"], replayed.transcript) == ""

    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/other.txt"}, "c1")]),
                        Reply(text="There is no other file."))
    second = await service.run("helper", "When is the launch?")
    difference = diff_transcripts(first["transcript"], second["transcript"])
    lines = difference.splitlines()
    assert lines[0] == "First difference: model request 2 differs in the tool-call arguments"
    assert '-[assistant → read_file c1] {"path": "data/notes.txt"}' in lines
    assert '+[assistant → read_file c1] {"path": "data/other.txt"}' in lines
    assert "Tool calls differ:" in lines and '-→ read_file {"path": "data/notes.txt"}' in lines
    assert "Answers differ:" in lines and "+There is no other file." in lines
    assert resolve_transcript(str(workspace), second["runId"]) == second["transcript"]


async def test_a_run_recorded_elsewhere_replays_here(service, fake_openai, workspace, tmp_path, monkeypatch,
                                                     no_network):
    """Another checkout of the workspace, on a machine with another home folder and shell: the
    environment provider shows the recorded machine's facts, and paths under the recorded root compare
    equal to the same paths under this one."""
    result = await record(service, fake_openai)
    recorded = load_recording(result["transcript"])
    instructions = recorded.exchanges[0]["request"]["messages"][0]["content"]
    assert f"- {workspace / 'data'}" in instructions and recorded.root == str(workspace)
    attempts = no_network()
    elsewhere = tmp_path / "checkout" / "ws"
    shutil.copytree(workspace, elsewhere)
    monkeypatch.setenv("HOME", str(tmp_path / "another-home"))
    monkeypatch.setenv("SHELL", "/bin/another-shell")

    replayed = await replay_run(str(elsewhere), None, result["transcript"])
    assert replayed.matched, replayed.difference
    assert replayed.transcript is not None and Path(replayed.transcript).parent == elsewhere / ".oscova" / "runs"
    # An edit there still drifts, and the diff shows this checkout's paths.
    (elsewhere / "agents" / "helper.agent.yaml").write_text(
        (elsewhere / "agents" / "helper.agent.yaml").read_text().replace("You help", "You serve"))
    drifted = await replay_run(str(elsewhere), None, result["transcript"])
    assert drifted.status == DRIFTED and "+You serve ." in (drifted.difference or "").splitlines()
    assert attempts == []


async def test_the_requests_of_a_run_render_as_text(service, fake_openai, workspace):
    result = await record(service, fake_openai)
    text = render_requests(load_recording(result["transcript"]))
    blocks = re.split(r"\n\n(?=# model request )", text)  # instructions may hold blank lines of their own
    assert [block.splitlines()[0] for block in blocks] == ["# model request 1", "# model request 2"]
    assert "You help ." in blocks[0] and "[user] When is the launch?" in blocks[0]
    assert '[assistant → read_file c1] {"path": "data/notes.txt"}' in blocks[1]
    assert "[tool c1] The launch is on Tuesday." in blocks[1]
    assert "read_file: Reads a UTF-8 text file inside the agent's workspaces." in blocks[1]


async def test_a_run_that_continued_a_conversation_replays_with_its_history(service, fake_openai, workspace,
                                                                            no_network):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "c1")]),
                        Reply(text="Hello Alice, the launch is on Tuesday."), Reply(text="You are Alice."))
    first = await service.run("helper", "I am Alice. When is the launch?")
    second = await service.run("helper", "Who am I?", session_id=first["sessionId"])
    assert second["text"] == "You are Alice."
    assert len(fake_openai.requests[2].messages) == 6  # system, the first exchange (4 messages), the question
    recording = load_recording(second["transcript"])
    assert [m["role"] for m in recording.history] == ["user", "assistant", "tool", "assistant"]
    attempts = no_network()

    replayed = await replay_run(str(workspace), None, second["transcript"])
    assert replayed.matched, replayed.difference
    assert replayed.transcript is not None and (await replay_run(str(workspace), None, replayed.transcript)).matched
    assert attempts == []


async def test_a_cancelled_run_replays_to_a_cancelled_run(service, fake_openai, workspace, no_network):
    fake_openai.enqueue(Reply(text="first words then silence", chunk_size=6, hang=True))
    first_delta = asyncio.Event()

    def on_event(event: dict[str, Any]) -> None:
        if event["kind"] == "delta":
            first_delta.set()

    handle = service.start_run("helper", "talk", on_event=on_event)
    await asyncio.wait_for(first_delta.wait(), 10)
    assert service.cancel(handle.run_id)
    result = await handle
    assert result["status"] == "cancelled"
    exchange, = load_recording(result["transcript"]).exchanges
    assert exchange["incomplete"] is True and exchange["response"]["text"] == result["text"] != ""
    attempts = no_network()
    replayed = await replay_run(str(workspace), None, result["transcript"])
    assert replayed.matched and replayed.status == "cancelled" and replayed.result["text"] == result["text"]
    assert attempts == []


async def test_live_tool_results_no_later_request_carries_are_compared_too(service, fake_openai, workspace,
                                                                           no_network):
    # Three identical calls in one round: the repeated-call guard stops the third and ends the loop, so
    # the results of the first two reach no later model request.
    calls = [ToolCall("read_file", {"path": "data/notes.txt"}, f"c{n}") for n in (1, 2, 3)]
    fake_openai.enqueue(Reply(text="Reading.", tool_calls=calls))
    result = await service.run("helper", "read it thrice")
    assert result["status"] == "completed" and len(fake_openai.requests) == 1
    attempts = no_network()
    (workspace / "data" / "notes.txt").write_text("The launch is on Friday.\n")
    assert (await replay_run(str(workspace), None, result["transcript"])).matched
    live = await replay_run(str(workspace), None, result["transcript"], live_tools=True)
    assert live.status == DRIFTED and not live.matched
    lines = (live.difference or "").splitlines()
    assert lines[0] == "the tool calls or their results differ from the recording"
    assert "-← read_file: The launch is on Tuesday." in lines and "+← read_file: The launch is on Friday." in lines
    assert attempts == []


async def test_a_damaged_transcript_gets_a_clear_message(service, fake_openai, workspace):
    result = await record(service, fake_openai)
    path = Path(result["transcript"])
    text = path.read_text()
    cut = path.with_name("cut.jsonl")
    cut.write_text(text[: len(text) - 20])  # a crash in the middle of the last line
    with pytest.raises(RecordingError, match=r"cut\.jsonl is damaged: line \d+ is not a JSON object"):
        load_recording(str(cut))
    lines = [json.loads(line) for line in text.splitlines()]
    model = next(n for n, line in enumerate(lines) if line.get("record") == "model")
    del lines[model]["request"]
    broken = path.with_name("broken.jsonl")
    broken.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(RecordingError, match=rf"line {model + 1} is a model record without a request object"):
        await replay_run(str(workspace), None, str(broken))
