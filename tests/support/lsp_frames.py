"""LSP base-protocol framing for tests and benchmarks that speak to the server in raw bytes."""

from __future__ import annotations

import json
from typing import IO, Any


def frame(payload: Any) -> bytes:
    """`payload` as one `Content-Length` framed message."""
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frame(stream: IO[bytes]) -> Any | None:
    """The next framed message's decoded body, or None at the end of the stream."""
    header = b""
    while not header.endswith(b"\r\n\r\n"):
        byte = stream.read(1)
        if not byte:
            return None
        header += byte
    length = int(header.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    return json.loads(stream.read(length))
