"""A local OpenAI-compatible chat-completions server for tests (stdlib only: asyncio streams in a thread).

Scripted replies per request (a queue, or a responder function of the request body), real SSE streaming
(`data: {...}\\n\\n`, `data: [DONE]`), tool calls in streaming and non-streaming form, usage, and a record
of every request body. A streaming request notes when the client closes the connection early.

    server = FakeOpenAI().start()
    server.enqueue(Reply(text="Hello"), Reply(tool_calls=[ToolCall("read_file", {"path": "a.txt"})]))
    ... AsyncOpenAI(base_url=server.base_url, api_key="test") ...
    server.requests[0].body["messages"]
    server.stop()
"""

from __future__ import annotations

import asyncio
import itertools
import json
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass
class Reply:
    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 11
    completion_tokens: int = 7
    cached_tokens: int | None = None
    """`usage.prompt_tokens_details.cached_tokens`, as OpenAI reports a prompt-cache hit; None: not reported."""
    chunk_size: int = 5
    """Characters of text per streamed chunk."""
    delay: float = 0.0
    """Seconds between streamed chunks (and before a non-streamed reply)."""
    status: int = 200
    error_message: str = "scripted error"
    hang: bool = False
    """Streaming: send the first text chunk, then keep the stream open until the client leaves."""
    model: str = "fake-model"
    reasoning: str | None = None
    """A reasoning model's thinking, sent before the text in `reasoning_field` (streamed in `chunk_size` pieces)."""
    reasoning_field: str = "reasoning_content"
    """Where the thinking goes: `reasoning_content` (llama.cpp, vLLM, DeepSeek) or `reasoning` (OpenRouter, Ollama)."""
    reasoning_tokens: int | None = None
    """`usage.completion_tokens_details.reasoning_tokens`; None: not reported."""
    finish_reason: str | None = None
    """The answer's `finish_reason` (`length`, `content_filter`); None: `tool_calls` with calls, else `stop`."""
    recorded: str | None = None
    """Streaming: the path of a recorded server's SSE body (`tests/fixtures/`), sent as it is instead."""


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    stream: bool = False
    closed_early: bool = False
    finished: threading.Event = field(default_factory=threading.Event)
    """Set once the server is done with this request (reply complete or client gone)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.body.get("tools", [])]


class FakeOpenAI:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.tls = tls  # serve HTTPS with this server context
        self.requests: list[RecordedRequest] = []
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self._queue: deque[Reply] = deque()
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.port = 0

    # -- control -----------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/v1"

    def enqueue(self, *replies: Reply) -> FakeOpenAI:
        with self._lock:
            self._queue.extend(replies)
        return self

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.responder = None

    def start(self) -> FakeOpenAI:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            self._server = loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.tls))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-openai", daemon=True)
        self._thread.start()
        ready.wait(5)
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is None:
            return

        async def shutdown() -> None:
            assert self._server is not None
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        assert self._thread is not None
        self._thread.join(5)
        self._loop = None

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count and time.monotonic() < deadline:
            time.sleep(0.005)

    # -- HTTP --------------------------------------------------------------------------------------

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(body)
        return Reply(status=500, error_message="the fake server has no scripted reply for this request")

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        key, value = line.split(":", 1)
                        headers[key.strip().lower()] = value.strip()
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                body = json.loads(raw) if raw else {}
                request = RecordedRequest(method, path, headers, body, bool(body.get("stream")))
                self.requests.append(request)
                try:
                    keep_open = await self._respond(request, reader, writer)
                finally:
                    request.finished.set()
                if not keep_open:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def _send(self, writer: asyncio.StreamWriter, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        writer.write(
            f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n".encode()
            + data
        )
        await writer.drain()

    async def _respond(self, request: RecordedRequest, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> bool:
        if request.method != "POST" or not request.path.endswith("/chat/completions"):
            await self._send(writer, 404, {"error": {"message": "not found"}})
            return True
        reply = self._next_reply(request.body)
        if reply.status != 200:
            await self._send(writer, reply.status, {"error": {"message": reply.error_message, "type": "test"}})
            return True
        calls = [
            {"id": c.id or f"call_{next(self._ids)}", "name": c.name,
             "arguments": c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)}
            for c in reply.tool_calls
        ]
        usage = {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                 "total_tokens": reply.prompt_tokens + reply.completion_tokens}
        if reply.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
        if reply.reasoning_tokens is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        created = int(time.time())
        if not request.stream:
            if reply.delay:
                await asyncio.sleep(reply.delay)
            message: dict[str, Any] = {"role": "assistant", "content": reply.text}
            if reply.reasoning is not None:
                message[reply.reasoning_field] = reply.reasoning
            if calls:
                message["tool_calls"] = [{"id": c["id"], "type": "function",
                                          "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]
            await self._send(writer, 200, {
                "id": f"chatcmpl-{next(self._ids)}", "object": "chat.completion", "created": created,
                "model": reply.model, "usage": usage,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            })
            return True
        if reply.recorded is not None:
            return await self._replay(reply.recorded, writer)
        return await self._stream(request, reply, calls, usage, finish, created, reader, writer)

    async def _replay(self, path: str, writer: asyncio.StreamWriter) -> bool:
        """A recorded server's stream, event by event as it sent them."""
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
        with open(path, "rb") as recorded:
            for event in recorded.read().split(b"\n\n"):
                if event.strip():
                    writer.write(event + b"\n\n")
                    await writer.drain()
        return False

    async def _stream(self, request: RecordedRequest, reply: Reply, calls: list[dict[str, str]],
                      usage: dict[str, int], finish: str, created: int,
                      reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        completion_id = f"chatcmpl-{next(self._ids)}"
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
                     b"connection: close\r\n\r\n")
        eof = asyncio.ensure_future(reader.read(1))

        def chunk(delta: dict[str, Any], finish_reason: str | None = None, with_usage: bool = False) -> bytes:
            payload: dict[str, Any] = {
                "id": completion_id, "object": "chat.completion.chunk", "created": created, "model": reply.model,
                "choices": [] if with_usage else [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
            if with_usage:
                payload["usage"] = usage
            return f"data: {json.dumps(payload)}\n\n".encode()

        pieces = [chunk({"role": "assistant", "content": ""})]
        thinking = reply.reasoning or ""
        for start in range(0, len(thinking), max(1, reply.chunk_size)):
            pieces.append(chunk({reply.reasoning_field: thinking[start:start + reply.chunk_size]}))
        text = reply.text or ""
        for start in range(0, len(text), max(1, reply.chunk_size)):
            pieces.append(chunk({"content": text[start:start + reply.chunk_size]}))
        for index, call in enumerate(calls):
            args = call["arguments"]
            half = len(args) // 2
            pieces.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                                 "function": {"name": call["name"], "arguments": args[:half]}}]}))
            pieces.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": args[half:]}}]}))
        pieces.append(chunk({}, finish))
        if request.body.get("stream_options", {}).get("include_usage"):
            pieces.append(chunk({}, with_usage=True))
        pieces.append(b"data: [DONE]\n\n")
        try:
            for number, piece in enumerate(pieces):
                if eof.done():
                    request.closed_early = True
                    return False
                writer.write(piece)
                await writer.drain()
                if reply.hang and number >= 1:
                    await eof  # until the client leaves
                    request.closed_early = True
                    return False
                if reply.delay:
                    await asyncio.wait({eof}, timeout=reply.delay)
        except ConnectionError:
            request.closed_early = True
        finally:
            if not eof.done():
                eof.cancel()
        return False


# -- scripted misbehaviour (an endpoint that answers wrongly) ----------------------------------------------

MISBEHAVIOURS = ("html", "invalid_json", "wrong_type", "cut", "disconnect", "error_event")


@dataclass
class Misbehaviour:
    """One wrong answer, queued like a `Reply` on a `MisbehavingOpenAI`:

    - `html`: HTTP 200 with an HTML page (what a web server in front of the API sends);
    - `invalid_json`: a stream whose second event is not JSON;
    - `wrong_type`: a stream chunk whose `choices[0].delta.content` is a number;
    - `cut`: `text` streamed, then the connection closed cleanly without `data: [DONE]`;
    - `disconnect`: `text` streamed, then the connection dropped before the announced body length;
    - `error_event`: `text` streamed, then `data: {"error": {...}}`.
    """

    kind: str
    text: str = "a partial answer"

    def __post_init__(self) -> None:
        assert self.kind in MISBEHAVIOURS, self.kind


class MisbehavingOpenAI(FakeOpenAI):
    """`FakeOpenAI` that also plays the queued `Misbehaviour`s (streaming requests; `html` for any)."""

    async def _respond(self, request: RecordedRequest, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> bool:
        with self._lock:
            head = self._queue[0] if self._queue else None
            if isinstance(head, Misbehaviour):
                self._queue.popleft()
        if not isinstance(head, Misbehaviour):
            return await super()._respond(request, reader, writer)
        if head.kind == "html":
            page = b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>"
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: "
                         + str(len(page)).encode() + b"\r\n\r\n" + page)
            await writer.drain()
            return True
        length = b"content-length: 1000000\r\n" if head.kind == "disconnect" else b""
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n" + length + b"\r\n")

        def event(payload: Any) -> bytes:
            return f"data: {json.dumps(payload)}\n\n".encode()

        def delta(content: Any) -> bytes:
            return event({"id": "chatcmpl-x", "object": "chat.completion.chunk", "created": 0, "model": "fake-model",
                          "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]})

        pieces = [delta(head.text[i:i + 5]) for i in range(0, len(head.text), 5)]
        if head.kind == "invalid_json":
            pieces.append(b'data: {"choices": [{"delta": {"content": "oops"\n\n')
        elif head.kind == "wrong_type":
            pieces.append(delta(42))
        elif head.kind == "error_event":
            pieces.append(event({"error": {"message": "the model crashed", "type": "server_error"}}))
        if head.kind in ("invalid_json", "wrong_type", "error_event"):
            pieces.append(b"data: [DONE]\n\n")
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
        if head.kind == "disconnect":  # no clean end: the connection is reset
            transport = writer.transport
            sock = transport.get_extra_info("socket")
            if sock is not None:
                import socket as _socket
                import struct

                sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        return False


class FloodingOpenAI(FakeOpenAI):
    """Streams every answer as `deltas` copies of one chunk, generated as it goes (no answer is built up
    front), as fast as the connection takes them: the load for responsiveness tests."""

    def __init__(self, deltas: int, chunk: str = "word ") -> None:
        super().__init__()
        self.deltas = deltas
        self.chunk = chunk

    async def _respond(self, request: RecordedRequest, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> bool:
        if not request.stream:
            return await super()._respond(request, reader, writer)

        def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return ("data: " + json.dumps({"id": "chatcmpl-flood", "object": "chat.completion.chunk", "created": 0,
                                           "model": "fake-model", "choices": [{"index": 0, "delta": delta,
                                                                               "finish_reason": finish}]})
                    + "\n\n").encode()

        piece = event({"content": self.chunk})
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
                     + event({"role": "assistant", "content": ""}))
        try:
            for sent in range(self.deltas):
                writer.write(piece)
                if sent % 64 == 63:
                    await writer.drain()
            writer.write(event({}, "stop") + b"data: [DONE]\n\n")
            await writer.drain()
        except ConnectionError:
            request.closed_early = True
        return False


def _serve_from_the_command_line() -> None:
    """`python -m tests.support.fake_openai --deltas N`: a flooding endpoint in a process of its own (so its
    work does not share a test's interpreter); prints its base URL, stops when stdin closes."""
    import argparse
    import sys

    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=2000, help="text chunks per answer")
    parser.add_argument("--chunk", default="word ", help="the text of each chunk")
    options = parser.parse_args()
    server = FloodingOpenAI(options.deltas, options.chunk).start()
    print(server.base_url, flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    _serve_from_the_command_line()
