"""DAP framing: `Content-Length: N\r\n\r\n` then N bytes of a UTF-8 JSON object (the base protocol)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""A larger message is read past and refused: no client sends one, and holding it would cost the memory."""
MAX_HEADER_BYTES = 8192


class FramingError(Exception):
    """A message that cannot be read as DAP: the message says why; the stream goes on with the next one."""


async def read_message(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, None at the end of the stream; FramingError for a header or body that is not DAP."""
    length: int | None = None
    header_bytes = 0
    problem: str | None = None
    seen = False
    while True:
        line = await reader.readline()
        if not line:
            return None
        header_bytes += len(line)
        text = line.decode("latin-1").strip()
        if not text:
            if seen:
                break
            continue  # blank lines between messages
        seen = True
        if header_bytes > MAX_HEADER_BYTES:
            problem = "a header longer than 8 KiB"
        name, _, value = text.partition(":")
        if name.strip().lower() == "content-length":
            try:
                length = int(value.strip())
            except ValueError:
                problem = f"a Content-Length that is not a number ({value.strip()[:40]!r})"
            else:
                if length < 0:
                    problem, length = "a negative Content-Length", None
    if length is None:
        raise FramingError(f"A message had {problem or 'no Content-Length header'}; it was skipped")
    try:
        body = await _read_body(reader, length)
    except asyncio.IncompleteReadError:
        return None
    if body is None:
        raise FramingError(f"A message of {length} bytes is larger than {MAX_MESSAGE_BYTES} bytes; it was skipped")
    if problem is not None:
        raise FramingError(f"A message had {problem}; it was skipped")
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise FramingError("A message body was not JSON; it was skipped") from None
    if not isinstance(message, dict):
        raise FramingError("A message body was not a JSON object; it was skipped")
    return message


async def _read_body(reader: asyncio.StreamReader, length: int) -> bytes | None:
    """The body, or None when it is too large (it is read and dropped, so the next message can be read)."""
    if length <= MAX_MESSAGE_BYTES:
        return await reader.readexactly(length)
    left = length
    while left:
        left -= len(await reader.readexactly(min(left, 1 << 16)))
    return None


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, default=str).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
