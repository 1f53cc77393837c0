"""The base protocol's framing, as the debug adapter (DAP) and the run host speak it: `Content-Length: N\r\n\r\n`
then N bytes of a UTF-8 JSON object; a bad frame is dropped and reading resumes at the next header."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from typing import Any

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""A larger message is read past and refused: no client sends one, and holding it would cost the memory."""
MAX_HEADER_BYTES = 8192


class FramingError(Exception):
    """A message that cannot be read: the message says why; the stream goes on with the next one."""


_TOKEN = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_BLANK = re.compile(rb"[ \t\r\n]*")
CHUNK = 1 << 16


class MessageReader:
    """The messages of a stream, in order. A frame that cannot be read is one FramingError, and reading then
    resynchronises on the next `Content-Length` header: a bad length (`Content-Length: abc`) leaves its body in the
    stream, which would otherwise be read as the next header and swallow every message after it."""

    def __init__(self, reader: asyncio.StreamReader, limit: int = MAX_MESSAGE_BYTES) -> None:
        self._reader = reader
        self._limit = limit
        self._buffer = bytearray()
        self._resync = False

    async def _fill(self) -> bool:
        data = await self._reader.read(CHUNK)
        self._buffer += data
        return bool(data)

    async def read(self) -> dict[str, Any] | None:
        """The next message, None at the end of the stream; FramingError for a frame that cannot be read."""
        buffer = self._buffer
        while True:
            if self._resync:
                found = _TOKEN.search(buffer)
                if found is None:
                    del buffer[:max(0, len(buffer) - 20)]  # a header may be split across reads
                    if not await self._fill():
                        return None
                    continue
                del buffer[:found.start()]
                self._resync = False
            del buffer[:_BLANK.match(buffer).end()]  # type: ignore[union-attr]  # blank lines between messages
            end = _HEADER_END.search(buffer, 0, MAX_HEADER_BYTES + 4)
            if end is None:
                if len(buffer) > MAX_HEADER_BYTES:
                    del buffer[:1]
                    self._resync = True
                    raise FramingError("A message had a header longer than 8 KiB; it was skipped")
                if not await self._fill():
                    return None
                continue
            length, problem = _header(bytes(buffer[:end.start()]))
            del buffer[:end.end()]
            if problem is not None or length is None:
                self._resync = True
                raise FramingError(f"A message had {problem or 'no Content-Length header'}; it was skipped")
            if length > self._limit:
                if not await self._skip(length):
                    return None
                raise FramingError(f"A message of {length} bytes is larger than {self._limit} bytes; it was skipped")
            while len(buffer) < length:
                if not await self._fill():
                    return None
            body = bytes(buffer[:length])
            del buffer[:length]
            return _message(body)

    async def _skip(self, length: int) -> bool:
        """Reads past a body too large to hold; False when the stream ends first."""
        left = length
        while left:
            if not self._buffer and not await self._fill():
                return False
            taken = min(left, len(self._buffer))
            del self._buffer[:taken]
            left -= taken
        return True


def _header(header: bytes) -> tuple[int | None, str | None]:
    """The Content-Length of a header, or why it has none."""
    length: int | None = None
    for line in header.splitlines():
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() != "content-length":
            continue
        try:
            length = int(value.strip())
        except ValueError:
            return None, f"a Content-Length that is not a number ({value.strip()[:40]!r})"
        if length < 0:
            return None, "a negative Content-Length"
    return length, None


def _message(body: bytes) -> dict[str, Any]:
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise FramingError("A message body was not JSON; it was skipped") from None
    if not isinstance(message, dict):
        raise FramingError("A message body was not a JSON object; it was skipped")
    return message


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, default=str).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class ProtocolOutput:
    """stdout for the protocol alone: the process's own file descriptor 1 goes to stderr, so code that prints (a
    workspace's own) cannot corrupt the protocol stream. Written with `os.write` (no buffering)."""

    def __init__(self) -> None:
        sys.stdout.flush()
        self.fd = os.dup(sys.stdout.fileno())
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]
