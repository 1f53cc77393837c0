"""The base protocol's framing, one implementation for every stream this program speaks: the language server's
(LSP), the debug adapter's (DAP) and the run host's. A message is `Content-Length: N\r\n\r\n` then N bytes of a
UTF-8 JSON body.

`Framer` splits bytes into messages without any I/O of its own (the language server feeds it before asyncio and
pygls are imported). A bad frame is dropped (`Dropped`, its reason) and reading resynchronises on the next
`Content-Length` header; a strict framer (a TCP peer, which may be anything on the machine) raises FramingError
instead. `MessageReader` reads an asyncio stream through a framer; `encode` writes one message.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the framer needs no asyncio: the language server frames its first messages without it
    import asyncio

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest body accepted by default; a longer one is dropped (and never allocated)."""
MAX_HEADER_BYTES = 8 * 1024
CHUNK = 64 * 1024
"""Bytes asked for by one read."""

_TOKEN = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_HEADER_LINE = re.compile(rb"[A-Za-z0-9-]+[ \t]*:[ \t]*[\x20-\x7e]*")
_HEADER_START = re.compile(rb"[A-Za-z0-9-]*")
_DIGITS = re.compile(rb"[0-9]+")
_SPACE = re.compile(rb"[ \t\r\n]*")


class FramingError(Exception):
    """A frame that cannot be read: on a strict stream the connection is closed; `MessageReader` raises one per
    bad frame and the stream goes on with the next."""


@dataclass
class Message:
    value: Any


@dataclass
class Dropped:
    reason: str
    not_json: bool = False
    """The body was not JSON: JSON-RPC answers a parse error (id null)."""


class Framer:
    """Splits a byte stream into messages, resynchronising after a bad frame (or raising FramingError when
    strict). `limit`: the largest body accepted."""

    def __init__(self, strict: bool = False, limit: int = MAX_MESSAGE_BYTES) -> None:
        self.strict = strict
        self.limit = limit
        self._buffer = bytearray()
        self._resync = False
        self._body: tuple[int, int] | None = None  # (body start, declared length) while a body is awaited
        self._scanned = 0  # how far an awaited body was searched for a header (each byte is searched once)
        self._overrun: int | None = None

    def feed(self, data: bytes) -> None:
        self._buffer += data

    def next(self) -> Message | Dropped | None:
        """The next message or dropped frame; None when more bytes are needed."""
        buffer = self._buffer
        if self._resync:
            found = _TOKEN.search(buffer)
            if found is None:
                del buffer[:max(0, len(buffer) - 20)]  # keep a tail: a header may be split across reads
                return None
            del buffer[:found.start()]
            self._resync = False
        lead = _SPACE.match(buffer).end()  # type: ignore[union-attr]
        if lead:
            del buffer[:lead]
        if not buffer:
            return None
        end = buffer.find(b"\r\n\r\n", 0, MAX_HEADER_BYTES + 4)
        if end == -1:
            problem = self._partial_header_problem()
            return self._bad(problem) if problem else None
        length, problem = _parse_header(bytes(buffer[:end]), self.limit)
        if problem or length is None:
            return self._bad(problem or "a message header without Content-Length")
        start = end + 4
        if len(buffer) < start + length:
            if self._body != (start, length):
                self._body, self._scanned, self._overrun = (start, length), start, None
            return None
        self._body = None
        body = bytes(buffer[start:start + length])
        try:
            value = json.loads(body)
        except (ValueError, RecursionError) as error:
            reason = "nests too deeply" if isinstance(error, RecursionError) else f"is not JSON ({error})"
            return self._bad(f"a message body of {length:,} bytes {reason}", not_json=True)
        del buffer[:start + length]
        return Message(value)

    def _partial_header_problem(self) -> str | None:
        buffer = self._buffer
        if len(buffer) >= MAX_HEADER_BYTES:
            return f"a message header longer than {MAX_HEADER_BYTES:,} bytes"
        lines = bytes(buffer).split(b"\r\n")
        for line in lines[:-1]:
            if not _HEADER_LINE.fullmatch(line):
                return f"not an LSP message header: {_show(line)}"
        if not _HEADER_START.fullmatch(lines[-1]) and not _HEADER_LINE.fullmatch(lines[-1]):
            return f"not an LSP message header: {_show(lines[-1])}"
        return None

    def awaiting_overrun(self) -> bool:
        """True while an incomplete body already holds the start of another message."""
        if self._body is None:
            return False
        if self._overrun is None:
            found = _TOKEN.search(self._buffer, self._scanned)
            self._scanned = max(self._scanned, len(self._buffer) - 20)
            self._overrun = found.start() if found else None
        return self._overrun is not None

    def stalled(self) -> Dropped | None:
        """Called when no byte came for STALL_SECONDS: a body that swallowed the next header is dropped."""
        if not self.awaiting_overrun():
            return None
        body, at = self._body, self._overrun
        if body is None or at is None:  # awaiting_overrun holds both; this only narrows their types
            return None
        (start, length), self._body, self._overrun = body, None, None
        got = at - start
        if self.strict:
            raise FramingError(f"a message claimed {length:,} bytes but the next one began after {got:,}")
        del self._buffer[:at]
        return Dropped(f"a message claimed {length:,} bytes but the next one began after {got:,}; dropped it")

    def _bad(self, reason: str, not_json: bool = False) -> Dropped:
        self._body = self._overrun = None
        if self.strict:
            raise FramingError(reason)
        del self._buffer[:1]  # past this header: the search for the next one starts after it
        self._resync = True
        return Dropped(f"{reason}; dropped it", not_json)


def _parse_header(header: bytes, limit: int) -> tuple[int | None, str | None]:
    length = None
    for line in header.split(b"\r\n"):
        if not _HEADER_LINE.fullmatch(line):
            return None, f"not an LSP message header: {_show(line)}"
        name, _, value = line.partition(b":")
        if name.strip().lower() != b"content-length":
            continue
        value = value.strip()
        if not _DIGITS.fullmatch(value):
            kind = "negative" if value.startswith(b"-") and _DIGITS.fullmatch(value[1:]) else "not a number"
            return None, f"Content-Length {_show(value)} is {kind}"
        length = int(value)
        if length > limit:
            return None, f"a message of {length:,} bytes is over the {limit // 2**20} MB limit"
    return length, None


def _show(raw: bytes) -> str:
    text = raw[:60].decode("ascii", "replace")
    return repr(text + ("…" if len(raw) > 60 else ""))


def encode(message: dict[str, Any]) -> bytes:
    """One message as it goes on the wire: the header, then the JSON body."""
    body = json.dumps(message, ensure_ascii=False, default=str).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class MessageReader:
    """The messages of an asyncio stream, in order, through a `Framer`: a frame that cannot be read (or a body
    that is not a JSON object) is one FramingError, and reading goes on with the next message."""

    def __init__(self, reader: asyncio.StreamReader, limit: int = MAX_MESSAGE_BYTES) -> None:
        self._reader = reader
        self._framer = Framer(limit=limit)

    async def read(self) -> dict[str, Any] | None:
        """The next message, None at the end of the stream; FramingError for a frame that cannot be read."""
        while True:
            item = self._framer.next()
            if isinstance(item, Dropped):
                raise FramingError(item.reason)
            if isinstance(item, Message):
                if not isinstance(item.value, dict):
                    raise FramingError("a message body that is not a JSON object; dropped it")
                return item.value
            data = await self._reader.read(CHUNK)
            if not data:
                return None
            self._framer.feed(data)


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
