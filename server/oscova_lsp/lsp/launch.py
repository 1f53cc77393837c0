"""Starting the server. Over stdio, `initialize` is answered before pygls and lsprotocol are imported
(they take about half a second): the first message is read and answered here from `capabilities`, while a
thread imports the server; the same bytes are then replayed into pygls, whose own answer is dropped."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from typing import Any, BinaryIO

from .capabilities import initialize_result


def _import_server() -> None:
    from . import server  # noqa: F401  (imports pygls, lsprotocol and the engine)


def _read_message(stream: BinaryIO) -> tuple[bytes, Any] | None:
    """One framed JSON-RPC message: (its raw bytes, the decoded body), or None at end of input."""
    raw = bytearray()
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        raw += line
        if line in (b"\r\n", b"\n"):
            if length is not None:
                break
            continue
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return bytes(raw), None
    body = stream.read(length)
    raw += body
    try:
        return bytes(raw), json.loads(body)
    except ValueError:
        return bytes(raw), None


class _Replay:
    """A stdin that first yields bytes already read."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        self._head = head
        self._stream = stream

    def readline(self) -> bytes:
        if self._head:
            cut = self._head.find(b"\n")
            cut = len(self._head) if cut == -1 else cut + 1
            line, self._head = self._head[:cut], self._head[cut:]
            if line.endswith(b"\n"):
                return line
            return line + self._stream.readline()
        return self._stream.readline()

    def read(self, n: int) -> bytes:
        if self._head:
            part, self._head = self._head[:n], self._head[n:]
            if len(part) < n:
                part += self._stream.read(n - len(part))
            return part
        return self._stream.read(n)


def _write(stream: BinaryIO, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode("utf-8")
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def _configure_logging() -> None:
    level = os.environ.get("OSCOVA_LSP_LOG", "WARNING").upper()
    logging.basicConfig(level=getattr(logging, level, logging.WARNING), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if "OSCOVA_LSP_LOG" not in os.environ:
        # pygls logs every bad request and failing handler with a traceback; the client gets an error anyway.
        logging.getLogger("pygls").setLevel(logging.CRITICAL)


def serve_stdio(client_pid: int | None = None) -> int:
    _configure_logging()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # Nothing else may write to stdout: it carries the protocol.
    sys.stdout = sys.stderr
    loader = threading.Thread(target=_import_server, name="oscova-import", daemon=True)
    loader.start()
    first = _read_message(stdin)
    if first is None:
        return 0
    raw, message = first
    answered = None
    if isinstance(message, dict) and message.get("method") == "initialize" and "id" in message:
        _write(stdout, {"jsonrpc": "2.0", "id": message["id"], "result": initialize_result(message.get("params"))})
        answered = message["id"]
    loader.join()
    from .server import create_server

    server = create_server()
    server.client_pid = client_pid
    server.protocol.suppressed_response = answered  # type: ignore[attr-defined]
    server.start_io(_Replay(raw, stdin), stdout)  # type: ignore[arg-type]
    return 0


def serve_tcp(host: str, port: int, client_pid: int | None = None) -> int:
    _configure_logging()
    from .server import create_server

    server = create_server()
    server.client_pid = client_pid
    server.start_tcp(host, port)
    return 0
