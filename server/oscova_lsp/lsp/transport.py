"""The language server's reading loop, over the one framer (`oscova_runtime.framing`), instead of pygls's,
which crashes on a huge length and goes deaf for good on any bad frame.

Over stdio a bad frame is dropped with a line on stderr (and, for a body that is not JSON, the JSON-RPC
parse error with a null id) and reading resynchronises on the next `Content-Length` header. Over TCP the
peer may be anything on the machine (a web page's `fetch` among them), so the first bad byte closes the
connection. No pygls import here: `launch` reads the first message with this module before pygls loads.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, BinaryIO

from oscova_runtime.framing import CHUNK, Dropped, Framer, Message, encode

if TYPE_CHECKING:  # asyncio is imported by the readers only: the phase before pygls does without it
    import asyncio

logger = logging.getLogger(__name__)

STALL_SECONDS = 1.0
"""A body still incomplete after this long without a byte, while another header already follows inside
it, had a length that was too long: it is dropped and reading resumes at that header (`Framer.stalled`)."""


def write_message(stream: BinaryIO, payload: dict[str, Any]) -> None:
    """One message to the client, encoded and flushed: `launch`'s answer to `initialize` (`early` batches its
    writes)."""
    stream.write(encode(payload))
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
