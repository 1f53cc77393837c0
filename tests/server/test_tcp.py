"""`serve --tcp`: loopback only, LSP framing only (a web page's `fetch` is closed on),
one client per server, no second `initialize`."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .test_wire import frame

SECONDS = 15


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def listening(tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "oscova_lsp", "serve", "--tcp", "--port", str(port)],
                            stderr=subprocess.PIPE, cwd=tmp_path)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()  # a probe: never speaks LSP
            break
        except OSError:
            assert time.monotonic() < deadline and proc.poll() is None, "the server never listened"
            time.sleep(0.1)
    yield port, proc
    proc.kill()
    proc.wait()


def connect(port: int) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=SECONDS)
    return conn


def read_message(conn: socket.socket) -> dict[str, Any] | None:
    """The next frame, or None when the server closed the connection (or stayed silent)."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(1)
            if not chunk:
                return None
            data += chunk
        length = int(data.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        body = b""
        while len(body) < length:
            chunk = conn.recv(length - len(body))
            if not chunk:
                return None
            body += chunk
    except (TimeoutError, ConnectionResetError):
        return None
    return json.loads(body)


def closed(conn: socket.socket) -> bool:
    try:
        return conn.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def answer(conn: socket.socket, msg_id: int) -> dict[str, Any] | None:
    while (message := read_message(conn)) is not None:
        if "method" in message and "id" in message:
            conn.sendall(frame({"jsonrpc": "2.0", "id": message["id"], "result": None}))
        elif message.get("id") == msg_id:
            return message
    return None


def initialize(msg_id: int, root: Path) -> bytes:
    return frame({"jsonrpc": "2.0", "id": msg_id, "method": "initialize",
                  "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}})


def test_a_host_that_is_not_loopback_is_refused_with_a_sentence(tmp_path: Path):
    try:
        proc = subprocess.run([sys.executable, "-m", "oscova_lsp", "serve", "--tcp", "--host", "0.0.0.0",
                               "--port", str(free_port())], capture_output=True, timeout=SECONDS, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail("the server listened on 0.0.0.0")
    assert proc.returncode == 2
    assert "is not a loopback address" in proc.stderr.decode() and "Traceback" not in proc.stderr.decode()


def test_an_http_post_is_closed_on_without_an_answer_and_the_editor_can_still_connect(
        listening: tuple[int, subprocess.Popen[bytes]], tmp_path: Path):
    port, proc = listening
    body = initialize(1, tmp_path).split(b"\r\n\r\n", 1)[1]
    with connect(port) as page:  # what a web page's fetch("http://127.0.0.1:port", {method: "POST"}) sends
        page.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nOrigin: https://example.com\r\n"
                     b"Content-Type: text/plain;charset=UTF-8\r\nContent-Length: %d\r\n\r\n%s" % (port, len(body), body))
        assert read_message(page) is None
        assert closed(page), "the connection stayed open"
    with connect(port) as editor:
        editor.sendall(initialize(7, tmp_path))
        reply = answer(editor, 7)
        assert reply is not None and "capabilities" in reply["result"]
    assert proc.poll() is None or proc.returncode == 0


def test_a_second_connection_is_refused_and_a_second_initialize_is_an_error(
        listening: tuple[int, subprocess.Popen[bytes]], tmp_path: Path):
    port, _ = listening
    with connect(port) as editor:
        editor.sendall(initialize(1, tmp_path))
        assert answer(editor, 1) is not None
        editor.sendall(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        with connect(port) as intruder:
            intruder.sendall(initialize(2, tmp_path))
            assert read_message(intruder) is None and closed(intruder)  # never answered
        editor.sendall(initialize(3, tmp_path))
        refused = answer(editor, 3)
        assert refused is not None and refused["error"]["code"] == -32600
        editor.sendall(frame({"jsonrpc": "2.0", "id": 4, "method": "workspace/symbol", "params": {"query": "z"}}))
        reply = answer(editor, 4)  # the editor still gets its answers: nobody took the writer over
        assert reply is not None and reply["result"] == []
