"""The OpenAI-compatible chat client through the real `openai` package and the local server."""

from __future__ import annotations

import asyncio
import socket
import ssl
import subprocess

import certifi
import pytest
from conftest import Reply, ToolCall, make_request
from fake_openai import FakeOpenAI
from oscova_runtime.agent import ChatClientAgent, ChatClientAgentOptions
from oscova_runtime.chat_client import ChatClientError, OpenAIChatClient
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.messages import ChatMessage, ChatOptions
from oscova_runtime.orchestrator import AgentOrchestrator
from oscova_runtime.providers import AgentToolProvider
from oscova_runtime.tools import function_from_callable


async def test_non_streaming_text_and_usage(openai_client, fake_openai):
    fake_openai.enqueue(Reply(text="Hello there", prompt_tokens=3, completion_tokens=2))
    response = await openai_client.get_response([ChatMessage.of("user", "hi")],
                                                ChatOptions(instructions="sys", temperature=0.1, max_tokens=5))
    assert response.text == "Hello there"
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (3, 2, 5)
    body = fake_openai.requests[0].body
    assert body["model"] == "fake-model" and body["temperature"] == 0.1 and body["max_tokens"] == 5
    assert body["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]


async def test_streaming_text_deltas_tool_calls_and_usage(openai_client, fake_openai):
    fake_openai.enqueue(Reply(text="abcdefghij", chunk_size=3,
                              tool_calls=[ToolCall("f", {"x": 1}, "c9")], prompt_tokens=4, completion_tokens=6))
    updates = [u async for u in openai_client.get_streaming_response([ChatMessage.of("user", "hi")], ChatOptions())]
    assert [u.text for u in updates if u.text] == ["abc", "def", "ghi", "j"]
    calls = [c for u in updates for c in u.contents if hasattr(c, "name")]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [("c9", "f", {"x": 1})]
    assert updates[-1].usage.total_tokens == 10 and updates[-1].finish_reason == "tool_calls"
    assert fake_openai.requests[0].body["stream_options"] == {"include_usage": True}


async def test_agent_streaming_run_with_tools_records_history(openai_client, fake_openai):
    orchestrator = AgentOrchestrator()

    def shout(text: str) -> str:
        """Upper-cases."""
        return text.upper()

    orchestrator.sync_tools([function_from_callable(shout)])
    agent = await orchestrator.get_or_create_agent(make_request(
        AgentDefinition(id="s"), openai_client, [AgentToolProvider(lambda: ["shout"], lambda: orchestrator.tools)]))
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("shout", {"text": "hey"}, "c1")]), Reply(text="HEY it is"))
    session = agent.create_session()
    text = "".join([u.text async for u in agent.run_streaming("shout hey", session=session)])
    assert text == "HEY it is"
    assert fake_openai.requests[1].messages[-1] == {"role": "tool", "tool_call_id": "c1", "content": "HEY"}
    history = agent.chat_history_provider.messages(session)
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"]


async def test_cancelling_a_streaming_run_closes_the_http_stream(openai_client, fake_openai):
    """A cancelled run must close the model's HTTP stream (the server sees the client leave)."""
    agent = ChatClientAgent(openai_client, ChatClientAgentOptions("c"))
    fake_openai.enqueue(Reply(text="first chunk then silence", chunk_size=5, hang=True))
    got_first = asyncio.Event()

    async def consume():
        async for update in agent.run_streaming("go"):
            if update.text:
                got_first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_first.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    request = fake_openai.requests[0]
    assert await asyncio.to_thread(request.finished.wait, 5)
    assert request.closed_early


async def test_abandoning_a_stream_closes_the_http_stream(openai_client, fake_openai):
    agent = ChatClientAgent(openai_client, ChatClientAgentOptions("c"))
    fake_openai.enqueue(Reply(text="x" * 50, chunk_size=1, delay=0.02))
    stream = agent.run_streaming("go")
    async for update in stream:
        if update.text:
            break
    await stream.aclose()
    request = fake_openai.requests[0]
    assert await asyncio.to_thread(request.finished.wait, 5)
    assert request.closed_early


async def test_cancelling_a_run_cancels_the_running_tool(openai_client, fake_openai):
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow() -> str:
        """Waits."""
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    orchestrator = AgentOrchestrator()
    orchestrator.sync_tools([function_from_callable(slow)])
    agent = await orchestrator.get_or_create_agent(make_request(
        AgentDefinition(id="t"), openai_client, [AgentToolProvider(lambda: ["slow"], lambda: orchestrator.tools)]))
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("slow", {}, "c1")]), Reply(text="never"))
    task = asyncio.create_task(agent.run("go"))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set() and len(fake_openai.requests) == 1


async def test_an_unreachable_endpoint_is_reported_in_words():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = OpenAIChatClient("m", base_url=f"http://127.0.0.1:{port}/v1", timeout=2)
    with pytest.raises(ChatClientError, match="unreachable"):
        await client.get_response([ChatMessage.of("user", "hi")], ChatOptions())


async def test_an_unset_key_variable_is_named_and_no_request_is_made(fake_openai, monkeypatch):
    monkeypatch.delenv("OSCOVA_TEST_KEY", raising=False)
    client = OpenAIChatClient("m", base_url=fake_openai.base_url, api_key_env="OSCOVA_TEST_KEY")
    with pytest.raises(ChatClientError, match="OSCOVA_TEST_KEY.*not set"):
        await client.get_response([ChatMessage.of("user", "hi")], ChatOptions())
    assert fake_openai.requests == []


async def test_the_key_is_sent_as_bearer_but_never_shown_in_errors(fake_openai, monkeypatch):
    monkeypatch.setenv("OSCOVA_TEST_KEY", "sk-very-secret")
    client = OpenAIChatClient("m", base_url=fake_openai.base_url, api_key_env="OSCOVA_TEST_KEY")
    fake_openai.enqueue(Reply(status=401, error_message="bad key sk-very-secret"),
                        Reply(status=400, error_message="invalid sk-very-secret"))
    with pytest.raises(ChatClientError) as first:
        await client.get_response([ChatMessage.of("user", "hi")], ChatOptions())
    with pytest.raises(ChatClientError) as second:
        await client.get_response([ChatMessage.of("user", "hi")], ChatOptions())
    assert fake_openai.requests[0].headers["authorization"] == "Bearer sk-very-secret"
    for error in (first.value, second.value):
        assert "sk-very-secret" not in str(error) and "sk-very-secret" not in repr(error.__cause__)
    assert "OSCOVA_TEST_KEY" in str(first.value) and "HTTP 400" in str(second.value)


async def test_no_endpoint_configured_is_reported():
    with pytest.raises(ChatClientError, match="neither `base_url` nor `api_key_env`"):
        await OpenAIChatClient("m").get_response([ChatMessage.of("user", "hi")], ChatOptions())


def _self_signed(folder) -> tuple[str, str]:
    """A certificate for 127.0.0.1 and its key, made by the `openssl` command."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    return str(cert), str(key)


async def test_an_https_endpoint_is_verified_against_the_certificates_ssl_cert_file_names_at_each_client(
        tmp_path, monkeypatch):
    # The clients of a process share one TLS context; it must still be the one SSL_CERT_FILE names when the client
    # is made (a company's own CA), and still verify: the same endpoint is refused once the variable names other CAs.
    cert, key = _self_signed(tmp_path)
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(cert, key)
    server = FakeOpenAI(tls=served).start()
    try:
        server.enqueue(Reply(text="over TLS"), Reply(text="again"), Reply(text="never sent"))
        monkeypatch.setenv("SSL_CERT_FILE", cert)
        for expected in ("over TLS", "again"):  # a second client of the same process, as a second run makes
            client = OpenAIChatClient("m", base_url=server.base_url, timeout=10)
            response = await client.get_response([ChatMessage.of("user", "hi")], ChatOptions())
            await client.aclose()
            assert response.text == expected
        monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
        client = OpenAIChatClient("m", base_url=server.base_url, timeout=10)
        with pytest.raises(ChatClientError, match="unreachable"):
            await client.get_response([ChatMessage.of("user", "hi")], ChatOptions())
        await client.aclose()
        assert len(server.requests) == 2
    finally:
        server.stop()
