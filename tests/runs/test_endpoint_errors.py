"""An endpoint that answers wrongly ends the run as `failed` with a sentence saying what it did: never
`completed`, never a Python exception name, never "unreachable" for a connection that was open.
`oscova-lsp run --json` as a subprocess, the real `openai` client, the local misbehaving server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import MisbehavingOpenAI, Misbehaviour, Reply, ToolCall

from .conftest import CANARY_KEY, make_workspace
from .test_cli import oscova

EXCEPTION_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b")


@pytest.fixture(scope="module")
def endpoint() -> Iterator[MisbehavingOpenAI]:
    server = MisbehavingOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def workspace(tmp_path: Path, endpoint: MisbehavingOpenAI) -> Path:
    endpoint.reset()
    return make_workspace(tmp_path / "ws", endpoint.base_url)


def failed_run(workspace: Path, agent: str = "echo") -> dict[str, Any]:
    """The final event of a run that must fail: exit 1, one `failed` event, a sentence without a traceback."""
    result = oscova("run", agent, "--input", "hi", "--json", cwd=workspace)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds and kinds[-1] == "failed", (kinds, result.stderr)
    assert result.returncode == 1
    error = events[-1]["error"]
    assert "Traceback" not in result.stderr and not EXCEPTION_NAME.search(error), error
    assert "unreachable" not in error and CANARY_KEY not in result.stdout + result.stderr
    return dict(events[-1])


def test_an_html_page_with_status_200_is_not_an_empty_answer(workspace, endpoint):
    endpoint.enqueue(Misbehaviour("html"))
    final = failed_run(workspace)
    assert final["error"] == (f"The model endpoint at {endpoint.base_url} answered with text/html, not a chat "
                              "completion; is `base_url` the address of its API (it usually ends in /v1)?")


def test_a_stream_event_that_is_not_json(workspace, endpoint):
    endpoint.enqueue(Misbehaviour("invalid_json"))
    final = failed_run(workspace)
    assert final["error"].startswith(f"The model endpoint at {endpoint.base_url} sent a stream event that is not "
                                     "valid JSON (")
    assert final["text"] == "a partial answer"


def test_a_chunk_of_the_wrong_shape(workspace, endpoint):
    endpoint.enqueue(Misbehaviour("wrong_type"))
    final = failed_run(workspace)
    assert final["error"] == (f"The model endpoint at {endpoint.base_url} sent a stream chunk that is not a chat "
                              "completion: `choices[0].delta.content` is a number, not a string")


def test_a_stream_cut_before_done_is_not_completed(workspace, endpoint):
    endpoint.enqueue(Misbehaviour("cut", text="half of the ans"))
    final = failed_run(workspace)
    assert final["error"] == (f"The model endpoint at {endpoint.base_url} ended the stream before `data: [DONE]`: "
                              "the answer is incomplete")
    assert final["text"] == "half of the ans"


def test_a_disconnect_mid_stream_is_not_unreachable(workspace, endpoint):
    endpoint.enqueue(Misbehaviour("disconnect"))
    final = failed_run(workspace)
    assert final["error"] == (f"The model endpoint at {endpoint.base_url} closed the connection in the middle of "
                              "the answer")


def test_an_error_sent_inside_the_stream(workspace, endpoint):
    endpoint.enqueue(Misbehaviour("error_event"))
    final = failed_run(workspace)
    assert final["error"] == (f"The model endpoint at {endpoint.base_url} reported an error instead of an answer: "
                              "the model crashed")


@pytest.mark.parametrize(("arguments", "says"), [
    ('{"path": "notes.txt"', "that are not valid JSON ("),
    ('["notes.txt"]', "that are not a JSON object"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply to read"),
    ('{"a": ' * 200 + "1" + "}" * 200, "nested more than 64 levels deep"),
], ids=["malformed", "not-an-object", "100000-deep", "200-deep-object"])
def test_tool_arguments_that_are_not_a_json_object(workspace, endpoint, arguments, says):
    endpoint.enqueue(Reply(tool_calls=[ToolCall("read_file", arguments, "c1")]))
    final = failed_run(workspace, "helper")
    assert final["error"].startswith(f"The model endpoint at {endpoint.base_url} sent arguments for the tool "
                                     f"'read_file' {says}"), final["error"]
    assert len(endpoint.requests) == 1  # the tool did not run, the model was not asked again


def test_a_well_formed_answer_still_completes(workspace, endpoint):
    endpoint.enqueue(Reply(text="All good.", chunk_size=2))
    result = oscova("run", "echo", "--input", "hi", cwd=workspace)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "All good.\n"


@pytest.mark.parametrize(("reply", "says"), [
    (Misbehaviour("html"), "answered with text/html, not a chat completion"),
    (Reply(tool_calls=[ToolCall("read_file", "[1, 2", "c1")]),
     "sent arguments for the tool 'read_file' that are not valid JSON ("),
], ids=["html", "bad-arguments"])
async def test_a_whole_answer_is_checked_too(endpoint, reply, says):
    """The non-streaming call (`get_response`), with the real `openai` client."""
    from oscova_runtime.chat_client import ChatClientError, OpenAIChatClient
    from oscova_runtime.messages import ChatMessage, ChatOptions

    endpoint.reset()
    endpoint.enqueue(reply)
    client = OpenAIChatClient("fake-model", base_url=endpoint.base_url)
    try:
        with pytest.raises(ChatClientError) as raised:
            await client.get_response([ChatMessage.of("user", "hi")], ChatOptions())
    finally:
        await client.aclose()
    assert str(raised.value).startswith(f"The model endpoint at {endpoint.base_url} {says}"), str(raised.value)
