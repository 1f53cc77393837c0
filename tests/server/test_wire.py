"""The wire and the lifecycle: framing read as raw bytes by the server as a
subprocess, a fuzz of headers and lengths, requests after `shutdown`, a second `initialize`, memory over many
notifications, and a document too large to analyse."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from ..support.lsp_frames import frame, read_frame
from .conftest import SERVER_COMMAND

ANSWER_SECONDS = 15
"""Generous: the machine is shared. A deaf server never answers at all."""


class RawServer:
    """The server as a subprocess, spoken to in raw bytes; its frames and stderr lines are collected by threads."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=root)
        self.root = root
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr: list[str] = []
        self._ids = iter(range(10**6, 10**7))
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while (message := read_frame(stream)) is not None:
            self.messages.put(message)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, method: str, params: Any = None) -> int:
        msg_id = next(self._ids)
        self.send(frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
        return msg_id

    def answer(self, msg_id: Any, timeout: float = ANSWER_SECONDS) -> dict[str, Any] | None:
        """The response to `msg_id` (requests from the server are answered with null meanwhile), or None when
        the server exited or stayed silent."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = self.messages.get(timeout=0.1)
            except queue.Empty:
                if self.proc.poll() is not None and self.messages.empty():
                    return None
                continue
            if "method" in message and "id" in message:
                self.send(frame({"jsonrpc": "2.0", "id": message["id"], "result": None}))
            elif "method" not in message and message.get("id") == msg_id:
                return message
        return None

    def initialize(self) -> None:
        msg_id = self.request("initialize", {"processId": None, "rootUri": self.root.as_uri(), "capabilities": {},
                                             "workspaceFolders": [{"uri": self.root.as_uri(), "name": "ws"}]})
        assert self.answer(msg_id) is not None, "no answer to initialize"
        self.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))

    def said(self, text: str, timeout: float = ANSWER_SECONDS) -> bool:
        """Whether a stderr line holds `text`, waiting for it: stdout and stderr are read by two threads, so the
        answer to the next request may be seen before the line about the frame before it."""
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.stderr) and time.monotonic() < deadline:
            time.sleep(0.05)
        return any(text in line for line in self.stderr)

    def alive_and_answering(self) -> bool:
        reply = self.answer(self.request("workspace/symbol", {"query": "zzz"}))
        return reply is not None and "result" in reply

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def raw(tmp_path: Path):
    (tmp_path / "oscova.toml").write_text("")
    server = RawServer(tmp_path)
    server.initialize()
    yield server
    server.close()


def valid_request(server: RawServer) -> tuple[int, bytes]:
    msg_id = next(server._ids)
    return msg_id, frame({"jsonrpc": "2.0", "id": msg_id, "method": "workspace/symbol", "params": {"query": "z"}})


# ------------------------------------------------------------------------------------------ framing

def test_a_huge_content_length_is_dropped_with_a_sentence_and_the_next_request_answered(raw: RawServer):
    msg_id, request = valid_request(raw)
    raw.send(b"Content-Length: 100000000000\r\n\r\n{\"jsonrpc\": \"2.0\"" + request)
    reply = raw.answer(msg_id)
    assert reply is not None and reply["result"] == [], f"no answer; stderr: {raw.stderr[-5:]}"
    assert raw.said("100,000,000,000 bytes is over the 64 MB limit")
    assert raw.proc.poll() is None


BODY = b'{"jsonrpc": "2.0", "method": "$/unknown", "params": {}}'
BAD_FRAMES = {
    "too short": b"Content-Length: 10\r\n\r\n" + BODY,
    "too long": b"Content-Length: 5000\r\n\r\n" + BODY,
    "missing": b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + BODY,
    "not a number": b"Content-Length: twelve\r\n\r\n" + BODY,
    "negative": b"Content-Length: -12\r\n\r\n" + BODY,
    "a header that is not one": b"GET / HTTP/1.1\r\n\r\n" + BODY,
    "no header at all": BODY,
}


@pytest.mark.parametrize("bad", list(BAD_FRAMES), ids=list(BAD_FRAMES))
def test_a_bad_frame_is_dropped_with_a_line_on_stderr_and_the_next_request_answered(raw: RawServer, bad: str):
    msg_id, request = valid_request(raw)
    raw.send(BAD_FRAMES[bad] + request)
    reply = raw.answer(msg_id)
    assert reply is not None and reply["result"] == [], f"deaf after a frame {bad}; stderr: {raw.stderr[-5:]}"
    assert raw.said("bad message from the client")
    assert raw.alive_and_answering()


def test_a_body_that_is_not_json_gets_the_json_rpc_parse_error(raw: RawServer):
    raw.send(b"Content-Length: 9\r\n\r\n{not json")
    reply = raw.answer(None)
    assert reply is not None and reply["error"]["code"] == -32700
    assert raw.alive_and_answering()


def test_a_message_that_is_not_json_rpc_gets_invalid_request(raw: RawServer):
    raw.send(frame({"id": 5, "method": "workspace/symbol"}) + frame([1, 2, 3]))
    assert (raw.answer(5) or {}).get("error", {}).get("code") == -32600
    assert (raw.answer(None) or {}).get("error", {}).get("code") == -32600
    assert raw.alive_and_answering()


HEADER_NAMES = st.sampled_from([b"Content-Length", b"content-length", b"Content-Type", b"X-Junk", b"Content-Len",
                                b"GET / HTTP/1.1", b""])
LENGTHS = st.one_of(st.integers(-10, 300).map(lambda n: str(n).encode()),
                    st.integers(300, 5000).map(lambda n: str(n).encode()), st.just(b"100000000000"),
                    st.just(b"abc"), st.just(b" 12 "), st.just(b"1e3"), st.binary(max_size=6))
BODIES = st.one_of(st.binary(max_size=200), st.just(BODY), st.just(BODY[:20]),
                   st.just(b'{"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": 7}'),
                   st.just(b"[" * 2000), st.just(b'"\xff\xfe"'))
SEPARATORS = st.sampled_from([b"\r\n\r\n", b"\r\n", b"\n\n", b"", b"\r\n\r\n\r\n"])


@st.composite
def garbage(draw: st.DrawFn) -> bytes:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        parts.append(draw(HEADER_NAMES) + b": " + draw(LENGTHS) + draw(SEPARATORS) + draw(BODIES))
    return b"".join(parts)


def test_fuzzed_headers_and_lengths_never_leave_the_server_silent_and_alive(tmp_path: Path):
    """After any garbage, a valid request is answered, or the server has exited with a line on stderr."""
    (tmp_path / "oscova.toml").write_text("")
    server = RawServer(tmp_path)
    server.initialize()

    @settings(max_examples=60, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(junk=garbage())
    def run(junk: bytes) -> None:
        seen.append(junk)
        msg_id, request = valid_request(server)
        server.send(junk + request)
        reply = server.answer(msg_id, timeout=ANSWER_SECONDS)
        if reply is None:
            assert server.proc.poll() is not None and server.stderr, \
                f"silent and alive after {junk!r}; stderr: {server.stderr[-3:]}"
            pytest.fail(f"the server exited after {junk!r}: {server.stderr[-3:]}")

    seen: list[bytes] = []
    try:
        run()
    finally:
        server.close()
    assert len(seen) >= 50  # the examples did run


# ---------------------------------------------------------------------------------------- lifecycle

@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    (tmp_path / "agents").mkdir()
    (tmp_path / "oscova.toml").write_text("")
    (tmp_path / "agents" / "a.agent.yaml").write_text("name: a\ninstructions: Hello\n")
    lsp_client.root = tmp_path  # type: ignore[attr-defined]
    lsp_client.params = lsp.InitializeParams(  # type: ignore[attr-defined]
        capabilities=client_capabilities("neovim@v0.7.0"), root_uri=from_fs_path(str(tmp_path)),
        workspace_folders=[lsp.WorkspaceFolder(uri=from_fs_path(str(tmp_path)), name="ws")])
    await lsp_client.initialize_session(lsp_client.params)  # type: ignore[attr-defined]
    yield
    try:
        await asyncio.wait_for(lsp_client.shutdown_async(None), ANSWER_SECONDS)
    except (JsonRpcException, TimeoutError):  # the test shut it down already
        pass
    lsp_client.exit(None)


async def test_requests_after_shutdown_get_invalid_request_and_exit_still_works(client: LanguageClient):
    await asyncio.wait_for(client.shutdown_async(None), ANSWER_SECONDS)
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="")), ANSWER_SECONDS)
    assert error.value.code == -32600 and "after shutdown" in error.value.message


async def test_a_second_initialize_is_refused_and_the_open_documents_are_kept(client: LanguageClient):
    root: Path = client.root  # type: ignore[attr-defined]
    uri = from_fs_path(str(root / "agents" / "a.agent.yaml"))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="yaml", version=1, text="name: a\ninstructions: Hello\nbogus_key: 1\n")))
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(client.initialize_async(client.params), ANSWER_SECONDS)  # type: ignore[attr-defined]
    assert error.value.code == -32600 and "already initialized" in error.value.message
    symbols = await asyncio.wait_for(client.text_document_document_symbol_async(lsp.DocumentSymbolParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri))), ANSWER_SECONDS)
    assert symbols and "bogus_key" in json.dumps(client.protocol._converter.unstructure(symbols))


# ------------------------------------------------------------------------------------------- memory

def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads RSS from /proc")
def test_ten_thousand_notifications_do_not_grow_memory(raw: RawServer):
    """pygls 2.1.1 kept a Future per notification (about 2 KB each: 20 MB per 10,000)."""
    path = raw.root / "t.jinja"
    uri = path.as_uri()
    raw.send(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "jinja", "version": 1, "text": "Hello {{ name }}\n"}}}))

    def edits(first: int, count: int) -> None:
        batch = []
        for version in range(first, first + count):
            batch.append(frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
                                    "text": "hH"[version % 2]}]}}))
            if len(batch) == 500:
                raw.send(b"".join(batch))
                batch = []
        raw.send(b"".join(batch))
        assert raw.alive_and_answering()

    edits(2, 3000)  # warm up: caches, arenas
    before = _rss_kb(raw.proc.pid)
    edits(3002, 10_000)
    grown = _rss_kb(raw.proc.pid) - before
    assert grown < 8 * 1024, f"RSS grew {grown} KB over 10,000 notifications"


# -------------------------------------------------------------------------------------- large files

async def _wait(condition: Any, timeout: float = ANSWER_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        await asyncio.sleep(0.05)


async def test_a_document_over_the_limit_gets_the_notice_and_its_edits_are_kept(client: LanguageClient):
    root: Path = client.root  # type: ignore[attr-defined]
    uri = from_fs_path(str(root / "big.jinja"))
    text = "{# filler #}\n" * 200_000  # 2.6 MB
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="jinja", version=1, text=text)))
    await _wait(lambda: any("big.jinja" in m.message for m in client.messages))
    notice = next(m for m in client.messages if "big.jinja" in m.message)
    assert "larger than 1 MB" in notice.message and "not checked" in notice.message
    assert notice.type == lsp.MessageType.Warning
    # Incremental edits (kept in blocks, not re-joined): one in the middle, then all but two lines deleted,
    # leaving an unclosed block that the checker must now see.
    version = 1
    for line in (100_000, 3, 199_998):
        version += 1
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(start=lsp.Position(line, 0), end=lsp.Position(line, 3)), text="{% if x %}")]))
    version += 1
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[lsp.TextDocumentContentChangePartial(
            range=lsp.Range(start=lsp.Position(4, 0), end=lsp.Position(199_998, 0)), text="")]))
    lines = text.split("\n")
    for line in (100_000, 3, 199_998):
        lines[line] = "{% if x %}" + lines[line][3:]
    expected = "\n".join(lines[:4] + lines[199_998:])
    same = from_fs_path(str(root / "same.jinja"))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=same, language_id="jinja", version=1, text=expected)))
    await _wait(lambda: bool(client.diagnostics.get(uri)) and bool(client.diagnostics.get(same)))
    assert [(d.range, d.message) for d in client.diagnostics[uri]] == \
        [(d.range, d.message) for d in client.diagnostics[same]]
    assert len(client.messages) == 1, "one notice per document"
