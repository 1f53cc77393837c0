"""The wire: LSP base-protocol framing (`Content-Length` headers, then a JSON body) read by our own loop
instead of pygls's, which crashes on a huge length and goes deaf for good on any bad frame.

Over stdio a bad frame is dropped with a line on stderr (and, for a body that is not JSON, the JSON-RPC
parse error with a null id) and reading resynchronises on the next `Content-Length` header. Over TCP the
peer may be anything on the machine (a web page's `fetch` among them), so the first bad byte closes the
connection. No pygls import here: `launch` reads the first message with this module before pygls loads.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:  # asyncio is imported by the readers only: the phase before pygls does without it
    import asyncio

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest body accepted; a longer one is dropped (and never allocated)."""
MAX_HEADER_BYTES = 8 * 1024
STALL_SECONDS = 1.0
"""A body still incomplete after this long without a byte, while another header already follows inside
it, had a length that was too long: it is dropped and reading resumes at that header."""
CHUNK = 64 * 1024

_TOKEN = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_HEADER_LINE = re.compile(rb"[A-Za-z0-9-]+[ \t]*:[ \t]*[\x20-\x7e]*")
_HEADER_START = re.compile(rb"[A-Za-z0-9-]*")
_DIGITS = re.compile(rb"[0-9]+")
_SPACE = re.compile(rb"[ \t\r\n]*")


class FramingError(Exception):
    """A bad frame on a strict stream (TCP): the connection is closed."""


@dataclass
class Message:
    value: Any


@dataclass
class Dropped:
    reason: str
    not_json: bool = False
    """The body was not JSON: JSON-RPC answers a parse error (id null)."""


class Framer:
    """Splits a byte stream into LSP messages, resynchronising after a bad frame (or raising FramingError
    when strict)."""

    def __init__(self, strict: bool = False) -> None:
        self.strict = strict
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
        length, problem = _parse_header(bytes(buffer[:end]))
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


def _parse_header(header: bytes) -> tuple[int | None, str | None]:
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
        if length > MAX_MESSAGE_BYTES:
            return None, f"a message of {length:,} bytes is over the {MAX_MESSAGE_BYTES // 2**20} MB limit"
    return length, None


def _show(raw: bytes) -> str:
    text = raw[:60].decode("ascii", "replace")
    return repr(text + ("…" if len(raw) > 60 else ""))


# ------------------------------------------------------------------------------------------ writing

def frame(payload: dict[str, Any]) -> bytes:
    """One message to the client as it goes on the wire: the header, then the JSON body."""
    body = json.dumps(payload).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def write_message(stream: BinaryIO, payload: dict[str, Any]) -> None:
    """One message to the client, framed and flushed: `launch`'s answer to `initialize` (`early` batches its
    writes of `frame`s)."""
    stream.write(frame(payload))
    stream.flush()


# ------------------------------------------------------------------------------------------ reading

def read_first(fd: int, framer: Framer, report: Callable[[Dropped], None]) -> Message | None:
    """Blocking: the first message of a stream (bad frames before it reported), or None at end of input."""
    while True:
        item = framer.next()
        if isinstance(item, Message):
            return item
        if isinstance(item, Dropped):
            report(item)
            continue
        data = os.read(fd, CHUNK)
        if not data:
            return None
        framer.feed(data)


class FdReader:
    """Reads a file descriptor in a daemon thread (a blocked read never holds up the process's exit), a
    few chunks ahead of the event loop."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        import asyncio

        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._room = threading.Semaphore(16)
        self._loop = loop
        self._fd = fd
        threading.Thread(target=self._run, name="oscova-stdin", daemon=True).start()

    def _run(self) -> None:
        while True:
            self._room.acquire()
            try:
                data = os.read(self._fd, CHUNK)
            except OSError:
                data = b""
            self._loop.call_soon_threadsafe(self._queue.put_nowait, data)
            if not data:
                return

    async def read(self) -> bytes:
        data = await self._queue.get()
        self._room.release()
        return data


async def pump(framer: Framer, read: Callable[[], Awaitable[bytes]],
               dispatch: Callable[[Message | Dropped], None], stop: threading.Event | None = None) -> None:
    """Feeds `dispatch` every message until end of input (or FramingError, on a strict stream)."""
    import asyncio

    pending: asyncio.Future[bytes] | None = None
    try:
        while stop is None or not stop.is_set():
            while (item := framer.next()) is not None:
                dispatch(item)
            if pending is None:
                pending = asyncio.ensure_future(read())
            timeout = STALL_SECONDS if framer.awaiting_overrun() else None
            done, _ = await asyncio.wait({pending}, timeout=timeout)
            if not done:
                dropped = framer.stalled()
                if dropped is not None:
                    dispatch(dropped)
                continue
            data = pending.result()
            pending = None
            if not data:
                return
            framer.feed(data)
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
