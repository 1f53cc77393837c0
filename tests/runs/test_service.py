"""The run service against the local OpenAI-compatible server: events, preview, cancellation, approval,
concurrency, transcripts, secrets and failures in words."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from oscova_lsp.runs import EVENT_KINDS, RunService, read_transcript

from tests.support.fake_openai import Reply, ToolCall

from .conftest import CANARY_KEY, KEY_VARIABLE, Recorder, host_toml, make_workspace


def assert_well_formed(events: list[dict], run_id: str) -> None:
    assert events, "no events"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all(e["runId"] == run_id for e in events)
    assert all(e["kind"] in EVENT_KINDS for e in events)
    assert events[0]["kind"] == "started"
    assert events[-1]["kind"] in ("completed", "failed", "cancelled")
    assert sum(e["kind"] in ("completed", "failed", "cancelled") for e in events) == 1


# -- a run -----------------------------------------------------------------------------------------


async def test_a_run_streams_started_messages_tool_calls_results_deltas_and_completed(service, fake_openai):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "call_a")]),
                        Reply(text="The launch is on Tuesday.", chunk_size=4))
    events = Recorder()
    handle = service.start_run("helper", "When is the launch?", on_event=events)
    result = await handle

    assert result["status"] == "completed" and result["runId"] == handle.run_id
    assert result["text"] == "The launch is on Tuesday."
    assert_well_formed(events.events, handle.run_id)
    kinds = events.kinds()
    assert kinds[0] == "started" and kinds[-1] == "completed"
    assert kinds.index("toolCall") < kinds.index("toolResult") < kinds.index("delta")
    started = events.of("started")[0]
    assert started["agentId"] == "helper" and started["agentName"] == "Helper"
    assert started["input"] == "When is the launch?"

    call, = events.of("toolCall")
    assert (call["callId"], call["name"], call["arguments"]) == ("call_a", "read_file", {"path": "data/notes.txt"})
    outcome, = events.of("toolResult")
    assert outcome["callId"] == "call_a" and "Tuesday" in outcome["result"] and "error" not in outcome
    assert "".join(e["text"] for e in events.of("delta")) == "The launch is on Tuesday."
    assert len(events.of("delta")) > 1

    messages = events.of("message")
    assert [(m["role"], m["source"]) for m in messages] == [("user", "External"), ("tool", "External")]
    assert messages[0]["text"] == "When is the launch?"
    assert messages[1]["toolResults"][0]["callId"] == "call_a"
    assert events.of("completed")[0]["text"] == "The launch is on Tuesday."
    assert events.of("completed")[0]["usage"]["totalTokens"] > 0

    assert [m["role"] for m in result["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert result["messages"][1]["toolCalls"][0]["name"] == "read_file"
    # The model was given the tool result and the instructions the providers assembled.
    second = fake_openai.requests[1].messages
    assert second[0]["role"] == "system" and "Workspace directories" in second[0]["content"]
    assert second[-1] == {"role": "tool", "tool_call_id": "call_a", "content": "The launch is on Tuesday.\n"}


async def test_a_session_keeps_the_conversation_across_runs(service, fake_openai):
    fake_openai.enqueue(Reply(text="Hello Alice."), Reply(text="You are Alice."))
    first = await service.run("helper", "I am Alice.", session_id="s1")
    second = await service.run("helper", "Who am I?", session_id="s1")
    assert first["sessionId"] == second["sessionId"] == "s1"
    texts = [m.get("content") for m in fake_openai.requests[1].messages]
    assert texts[1:] == ["I am Alice.", "Hello Alice.", "Who am I?"]
    fake_openai.enqueue(Reply(text="?"))
    other = await service.run("helper", "Who am I?")  # a new session starts afresh
    assert other["sessionId"] != "s1"
    assert [m.get("content") for m in fake_openai.requests[2].messages][1:] == ["Who am I?"]


async def test_a_failing_tool_is_reported_and_the_run_goes_on(service, fake_openai):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "data/missing.txt"}, "c1")]),
                        Reply(text="That file does not exist."))
    events = Recorder()
    result = await service.run("helper", "read missing.txt", on_event=events)
    assert result["status"] == "completed"
    failed, = events.of("toolResult")
    assert "missing.txt" in failed["error"] and "result" not in failed
    assert fake_openai.requests[1].messages[-1]["content"] == "Error: Function failed."


# -- preview -----------------------------------------------------------------------------------------


async def test_preview_lists_each_providers_contribution_in_the_default_order(tmp_path, fake_openai, canary_key):
    root = make_workspace(tmp_path / "ws", fake_openai.base_url,
                          host=host_toml(fake_openai.base_url) + "\n[variables]\nteam = \"Platform\"\n"
                          + "[user]\nname = \"Alice Example\"\n",
                          agents={"full": """\
                              id: full
                              name: Full
                              instructions: "You are {{ agent_name }} for {{ user_name }} of {{ team }}."
                              tools: [current_datetime, write_file]
                              agent_tools: [echo]
                              memory: true
                              todo: true
                              """, "echo": """\
                              id: echo
                              exposed_as_tool: true
                              description: Repeats.
                              instructions: Repeat.
                              """})
    (root / "oscova.toml").write_text((root / "oscova.toml").read_text().replace("[host]\n", "[host]\ntodo = true\n"))
    service = RunService(root)
    try:
        preview = await service.preview("full", "Plan the launch")
    finally:
        await service.aclose()
    providers = preview["providers"]
    assert [p["type"] for p in providers] == [
        "environment", "tools", "personal", "private_notes", "agent_tools", "memory", "todo"]
    assert [p["position"] for p in providers] == [1, 2, 3, 4, 5, 7, 9]
    by_type = {p["type"]: p for p in providers}
    assert by_type["environment"]["instructions"].startswith("## Environment")
    assert by_type["tools"]["tools"] == ["current_datetime", "write_file"]
    assert by_type["personal"]["instructions"] == "You are Full for Alice Example of Platform.\n"
    assert by_type["private_notes"]["instructions"] is None and by_type["private_notes"]["tools"] == []
    assert by_type["agent_tools"]["tools"] == ["echo"]
    assert by_type["memory"]["tools"] == ["memory_save", "memory_search"]
    assert by_type["todo"]["messages"] and by_type["todo"]["messages"][0]["sourceId"] == (
        "oscova_runtime.providers.todo.TodoListContextProvider")  # the full type name, as the framework stamps
    assert "todo_write" in by_type["todo"]["tools"]
    # The whole: instructions are the contributions joined in order; tools are every contribution.
    contributed = [p["instructions"] for p in providers if p["instructions"]]
    assert preview["instructions"] == "\n".join(contributed)
    assert [t["name"] for t in preview["tools"]] == [n for p in providers for n in p["tools"]]
    assert {t["name"]: t["approvalRequired"] for t in preview["tools"]}["write_file"] is True
    assert preview["messages"] == [{"role": "user", "source": "External", "text": "Plan the launch"},
                                   *by_type["todo"]["messages"]]
    assert fake_openai.requests == []  # no model involved


async def test_preview_works_without_any_model_configured(tmp_path, fake_openai):
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, host="[host]\nuser_id = \"alice\"\n")
    service = RunService(root)
    try:
        preview = await service.preview("lead")
        result = await service.run("lead", "hi")
    finally:
        await service.aclose()
    assert [t["name"] for t in preview["tools"]] == ["echo"]
    assert result["status"] == "failed" and "No model endpoint is configured" in result["error"]


async def test_preview_of_an_unknown_agent_says_so(service):
    from oscova_lsp.runs import RunError

    with pytest.raises(RunError, match="No agent definition has the id 'nobody'.*echo, helper, lead"):
        await service.preview("nobody")


async def test_a_dot_oscova_link_leading_out_gets_no_transcript_written_outside(workspace, fake_openai, tmp_path,
                                                                                 caplog):
    """`.oscova` is a symlink to a folder outside the workspace: the run is refused (its memory would live
    there: OSC040), and its transcript is not written there either (a log line says why)."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (workspace / ".oscova").symlink_to(outside, target_is_directory=True)
    service = RunService(workspace)
    try:
        with caplog.at_level(logging.WARNING):
            result = await service.run("helper", "hi")
    finally:
        await service.aclose()
    assert result["status"] == "failed" and "leads outside the workspace root" in result["error"]
    assert list(outside.rglob("*")) == []
    assert result["transcript"] is None
    assert "was not written: it is outside the workspace root; only files inside it are written" in caplog.text


# -- cancellation ------------------------------------------------------------------------------------


async def test_cancel_closes_the_model_stream_within_a_second(service, fake_openai):
    fake_openai.enqueue(Reply(text="first words then silence", chunk_size=6, hang=True))
    events = Recorder()
    first_delta = asyncio.Event()

    def on_event(event):
        events(event)
        if event["kind"] == "delta":
            first_delta.set()

    handle = service.start_run("helper", "talk", on_event=on_event)
    await asyncio.wait_for(first_delta.wait(), 10)
    began = time.monotonic()
    assert service.cancel(handle.run_id) is True
    result = await asyncio.wait_for(handle, 1)
    assert time.monotonic() - began < 1
    assert result["status"] == "cancelled" and result["text"] == "first "
    assert events.kinds()[-1] == "cancelled"
    assert_well_formed(events.events, handle.run_id)
    request = fake_openai.requests[0]
    assert await asyncio.to_thread(request.finished.wait, 1)
    assert request.closed_early
    assert service.cancel(handle.run_id) is False  # already over


async def test_cancel_stops_a_running_tool(tmp_path, fake_openai, canary_key):
    root = make_workspace(tmp_path / "ws", fake_openai.base_url,
                          host=host_toml(fake_openai.base_url) + '\n[tools.slow]\ncallable = "slowtools:slow"\n',
                          agents={"waiter": "id: waiter\ninstructions: Wait.\ntools: [slow]\n"})
    (root / "slowtools.py").write_text(textwrap.dedent('''\
        import asyncio, pathlib

        async def slow(seconds: float) -> str:
            """Waits."""
            pathlib.Path(__file__).with_name("started").touch()
            try:
                await asyncio.sleep(seconds)
            except asyncio.CancelledError:
                pathlib.Path(__file__).with_name("cancelled").touch()
                raise
            return "done"
        '''))
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("slow", {"seconds": 30}, "c1")]), Reply(text="never"))
    service = RunService(root)
    events = Recorder()
    try:
        handle = service.start_run("waiter", "wait", on_event=events)
        for _ in range(500):
            if (root / "started").exists():
                break
            await asyncio.sleep(0.01)
        assert (root / "started").exists()
        handle.cancel()
        result = await asyncio.wait_for(handle, 1)
    finally:
        await service.aclose()
    assert result["status"] == "cancelled"
    assert (root / "cancelled").exists()
    assert len(fake_openai.requests) == 1
    assert events.kinds()[-3:] == ["toolCall", "modelCall", "cancelled"]  # the model call ended; the tool did not


async def test_shutdown_cancels_every_run(service, fake_openai):
    fake_openai.enqueue(Reply(text="one two three", chunk_size=3, hang=True),
                        Reply(text="four five six", chunk_size=3, hang=True))
    first = service.start_run("helper", "a")
    second = service.start_run("echo", "b")
    await asyncio.to_thread(fake_openai.wait_for_requests, 2)
    assert len(service.active_runs()) == 2
    await asyncio.wait_for(service.shutdown(), 2)
    assert [(await first)["status"], (await second)["status"]] == ["cancelled", "cancelled"]
    assert service.active_runs() == []


async def test_a_run_cancelled_before_it_began_still_reports(service, fake_openai):
    events = Recorder()
    handle = service.start_run("helper", "hi", on_event=events)
    handle.cancel()
    result = await handle
    assert result["status"] == "cancelled"
    assert events.kinds() == ["started", "cancelled"]
    assert fake_openai.requests == []


# -- approval ----------------------------------------------------------------------------------------


def write_reply() -> Reply:
    return Reply(tool_calls=[ToolCall("write_file", {"path": "data/out.txt", "content": "hello"}, "w1")])


async def test_an_approved_tool_runs(service, fake_openai, workspace):
    fake_openai.enqueue(write_reply(), Reply(text="Written."))
    asked = []

    async def approve(request):
        asked.append(request)
        return True

    events = Recorder()
    result = await service.run("helper", "write it", on_event=events, approve=approve)
    assert result["status"] == "completed"
    assert asked == [{"runId": result["runId"], "agentId": "helper", "tool": "write_file",
                      "arguments": {"path": "data/out.txt", "content": "hello"}}]
    assert (workspace / "data" / "out.txt").read_text() == "hello"
    assert "Wrote 5 characters" in events.of("toolResult")[0]["result"]
    assert "write_file" in fake_openai.requests[0].tool_names


async def test_a_denied_tool_does_not_run_and_the_model_is_told(service, fake_openai, workspace):
    fake_openai.enqueue(write_reply(), Reply(text="Understood, I did not write it."))

    async def deny(request):
        return False

    events = Recorder()
    result = await service.run("helper", "write it", on_event=events, approve=deny)
    assert result["status"] == "completed"
    assert not (workspace / "data" / "out.txt").exists()
    denied, = events.of("toolResult")
    assert denied["denied"] is True and denied["result"] == "The user denied this call."
    assert fake_openai.requests[1].messages[-1]["content"] == "The user denied this call."


async def test_an_approval_callback_that_fails_denies(service, fake_openai, workspace):
    fake_openai.enqueue(write_reply(), Reply(text="ok"))

    async def broken(request):
        raise RuntimeError("the editor went away")

    result = await service.run("helper", "write it", approve=broken)
    assert result["status"] == "completed" and not (workspace / "data" / "out.txt").exists()


async def test_without_an_approval_channel_approval_tools_are_not_offered(service, fake_openai):
    fake_openai.enqueue(Reply(text="ok"))
    await service.run("helper", "hi")
    assert fake_openai.requests[0].tool_names == ["current_datetime", "read_file"]


# -- concurrency and transcripts -------------------------------------------------------------------


async def test_two_runs_at_once_keep_their_events_apart(service, fake_openai):
    def respond(body):
        question = body["messages"][-1]["content"]
        return Reply(text=f"answer to {question} " * 3, chunk_size=3, delay=0.01)

    fake_openai.responder = respond
    one, two = Recorder(), Recorder()
    first = service.start_run("helper", "alpha", on_event=one)
    second = service.start_run("echo", "beta", on_event=two)
    results = await asyncio.gather(first, second)
    assert first.run_id != second.run_id
    assert_well_formed(one.events, first.run_id)
    assert_well_formed(two.events, second.run_id)
    assert "".join(e["text"] for e in one.of("delta")) == "answer to alpha " * 3
    assert "".join(e["text"] for e in two.of("delta")) == "answer to beta " * 3
    assert [r["text"] for r in results] == ["answer to alpha " * 3, "answer to beta " * 3]
    # Both were streaming at the same time: their deltas interleave in time.
    one_times = [e["time"] for e in one.of("delta")]
    two_times = [e["time"] for e in two.of("delta")]
    assert min(two_times) < max(one_times) and min(one_times) < max(two_times)


async def test_every_run_is_saved_as_json_lines(service, fake_openai, workspace):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("current_datetime", {}, "t1")]), Reply(text="It is now."))
    events = Recorder()
    result = await service.run("helper", "time?", on_event=events)
    path = Path(result["transcript"])
    assert path.parent == workspace / ".oscova" / "runs"
    assert path.name.endswith(f"-helper-{result['runId']}.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    # The events, in order, between the run's recording lines (`record`: header, model calls, tool calls).
    assert [line for line in lines if "kind" in line] == events.events == read_transcript(str(path))
    assert lines[0]["record"] == "header" and all("kind" in line or "record" in line for line in lines)
    assert events.of("started")[0]["transcript"] == str(path)


async def test_a_failed_run_is_saved_too(service, workspace, fake_openai):
    fake_openai.enqueue(Reply(status=500))
    result = await service.run("echo", "hi")
    assert result["status"] == "failed"
    saved = read_transcript(result["transcript"])
    assert [e["kind"] for e in saved] == ["started", "message", "modelCall", "failed"]


# -- secrets -----------------------------------------------------------------------------------------


async def test_the_key_appears_in_no_event_result_log_or_transcript(service, fake_openai, workspace, caplog):
    caplog.set_level(logging.DEBUG)
    fake_openai.enqueue(
        Reply(text=f"I found the key {CANARY_KEY} in the environment.",
              tool_calls=[ToolCall("read_file", {"path": f"{CANARY_KEY}.txt"}, "k1")]),
        Reply(text=f"Again: {CANARY_KEY}"),
        Reply(status=400, error_message=f"invalid request for key {CANARY_KEY}"),
    )
    events = Recorder()
    first = await service.run("helper", f"echo {CANARY_KEY}", on_event=events)
    second = await service.run("helper", "again", on_event=events)
    assert first["status"] == "completed" and second["status"] == "failed"
    assert fake_openai.requests[0].headers["authorization"] == f"Bearer {CANARY_KEY}"  # it was used
    everything = json.dumps([events.events, first, second])
    everything += Path(first["transcript"]).read_text() + Path(second["transcript"]).read_text()
    everything += "\n".join(r.getMessage() for r in caplog.records)
    assert CANARY_KEY not in everything
    assert "***" in first["text"] and "HTTP 400" in second["error"] and "invalid request for key ***" in second["error"]
    assert any("failed" in r.getMessage() for r in caplog.records)  # the failure was logged, redacted


# -- failures in words -------------------------------------------------------------------------------


async def failure(root: Path, agent: str = "helper") -> str:
    service = RunService(root)
    try:
        result = await service.run(agent, "hi")
    finally:
        await service.aclose()
    assert result["status"] == "failed"
    assert "Traceback" not in result["error"]
    return result["error"]


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


async def test_an_unreachable_endpoint_is_named(tmp_path, canary_key):
    url = closed_port_url()
    error = await failure(make_workspace(tmp_path / "ws", url))
    assert error == f"The model endpoint at {url} is unreachable; is it running?"


async def test_an_unset_key_variable_is_named(workspace, fake_openai, monkeypatch):
    monkeypatch.delenv(KEY_VARIABLE)
    error = await failure(workspace)
    assert KEY_VARIABLE in error and "not set" in error
    assert fake_openai.requests == []


async def test_a_model_error_gives_the_status_and_the_endpoints_message(workspace, fake_openai):
    fake_openai.enqueue(Reply(status=400, error_message="This model's maximum context length is 8192 tokens"))
    error = await failure(workspace)
    assert error == "The model returned an error (HTTP 400): This model's maximum context length is 8192 tokens"


async def test_a_silent_endpoint_times_out_in_words(tmp_path, fake_openai, canary_key):
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, host=host_toml(fake_openai.base_url, timeout=0.5))
    fake_openai.enqueue(Reply(text="hello and then nothing", hang=True))
    error = await failure(root)
    assert error.endswith("did not answer in time")


async def test_no_model_configured(tmp_path, fake_openai):
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, host="[host]\n")
    assert "No model endpoint is configured" in await failure(root)


async def test_an_unknown_agent_id(workspace):
    events: list[dict] = []
    service = RunService(workspace)
    try:
        result = await service.run("nobody", "hi", on_event=events.append)
    finally:
        await service.aclose()
    assert result["status"] == "failed" and result["error"] == (
        "No agent definition has the id 'nobody' (known agents: echo, helper, lead)")
    # The run never started: its events say so, and nothing is recorded.
    assert [e["kind"] for e in events] == ["started", "failed"] and events[0]["transcript"] is None
    assert result["transcript"] is None and not (workspace / ".oscova" / "runs").exists()


async def test_a_definition_with_errors_is_refused_with_its_errors(tmp_path, fake_openai, canary_key):
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, agents={
        "broken": "id: broken\ninstructions: hi\ncontext_providers:\n  - memory\n  - null\n"})
    error = await failure(root, "broken")
    assert error.startswith("The agent 'broken' cannot run until its configuration errors are fixed")
    assert "agents/broken.agent.yaml:5:" in error and "OSC010" in error
    assert fake_openai.requests == []


async def test_a_failing_custom_provider_is_named(tmp_path, fake_openai, canary_key):
    host = host_toml(fake_openai.base_url) + textwrap.dedent("""
        [providers.flaky]
        class = "flaky:FlakyProvider"
        """)
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, host=host,
                          agents={"uses": "id: uses\ninstructions: hi\ncontext_providers: [flaky]\n"})
    (root / "flaky.py").write_text(textwrap.dedent("""\
        from oscova_runtime import AIContextProvider

        class FlakyProvider(AIContextProvider):
            async def provide_ai_context(self, context):
                raise ConnectionError("the ticket service is down")
        """))
    error = await failure(root, "uses")
    assert error == "The context provider FlakyProvider failed: ConnectionError: the ticket service is down"


async def test_a_tool_that_cannot_be_imported_is_named(tmp_path, fake_openai, canary_key):
    host = host_toml(fake_openai.base_url) + '\n[tools.gone]\ncallable = "nowhere:gone"\n'
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, host=host)
    error = await failure(root)
    assert error.startswith("The tool `gone` could not be loaded from `nowhere:gone`")


# -- the cache ---------------------------------------------------------------------------------------


async def test_list_agents(service, workspace):
    agents = {a["id"]: a for a in service.list_agents()}
    assert sorted(agents) == ["echo", "helper", "lead"]
    assert agents["echo"]["exposedAsTool"] is True and agents["helper"]["exposedAsTool"] is False
    assert agents["helper"]["name"] == "Helper"
    assert agents["lead"]["uri"] == (workspace / "agents" / "lead.agent.yaml").resolve().as_uri()


async def test_dependencies_stay_cached_across_runs_until_evicted(service, fake_openai, workspace):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("echo", {"query": "ping"}, "e1")]), Reply(text="ping"),
                        Reply(text="pong"))
    result = await service.run("lead", "say ping")
    assert result["status"] == "completed" and result["text"] == "pong"
    assert service.orchestrator.agents.ids() == ["echo"]  # the requested agent bypasses the cache
    cached = service.orchestrator.agents.get("echo")
    fake_openai.enqueue(Reply(text="direct"))
    await service.run("lead", "again")
    assert service.orchestrator.agents.get("echo") is cached

    echo_file = workspace / "agents" / "echo.agent.yaml"
    echo_file.write_text(echo_file.read_text().replace("Repeat the query.", "Repeat it twice."))
    assert service.file_saved(str(echo_file)) == ["echo"]
    assert "echo" not in service.orchestrator.agents
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("echo", {"query": "x"}, "e2")]), Reply(text="x x"),
                        Reply(text="done"))
    await service.run("lead", "once more")
    assert fake_openai.requests[-2].messages[0]["content"].endswith("Repeat it twice.\n")

    assert service.evict_agent("echo") is True and service.evict_agent("echo") is False
    await service.preview("lead")
    assert "echo" in service.orchestrator.agents
    service.invalidate_agents()
    assert len(service.orchestrator.agents) == 0
    service.invalidate_all()
    assert service.orchestrator.tools == {}


async def test_saving_the_host_configuration_invalidates_everything(service, fake_openai, workspace):
    await service.preview("lead")
    assert len(service.orchestrator.agents) == 1
    assert service.file_saved(str(workspace / "oscova.toml")) == ["*"]
    assert len(service.orchestrator.agents) == 0


def test_importing_the_run_service_does_not_import_openai():
    code = "import sys, oscova_lsp.runs, oscova_lsp.runs.terminal; print('openai' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "False"


async def test_a_listener_cancelling_on_the_final_event_keeps_the_result(service, fake_openai):
    fake_openai.enqueue(Reply(text="done"))
    handles = []
    cancelled = []  # asserted outside: the service swallows a listener's exceptions

    def on_event(event):
        if event["kind"] == "completed":
            cancelled.append(handles[0].cancel())

    handles.append(service.start_run("helper", "hi", on_event=on_event))
    assert (await handles[0])["status"] == "completed"
    assert cancelled == [False]
