"""`oscova-lsp debug` over stdio: DAP messages in on stdin, out on stdout (nothing else is written there)."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

from oscova_runtime.framing import MAX_HEADER_BYTES, FramingError, MessageReader, ProtocolOutput, encode

from .adapter import DebugAdapter


async def serve(stdin: Any, out: ProtocolOutput) -> int:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=max(MAX_HEADER_BYTES * 2, 1 << 16))
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)

    def send(message: dict[str, Any]) -> None:
        try:
            out.write(encode(message))
        except OSError:  # the client is gone: the end of its input ends the session
            pass

    adapter = DebugAdapter(send)
    messages = MessageReader(reader)
    ended = asyncio.ensure_future(adapter.ended.wait())
    try:
        while not adapter.ended.is_set():
            reading = asyncio.ensure_future(messages.read())
            await asyncio.wait({reading, ended}, return_when=asyncio.FIRST_COMPLETED)
            if not reading.done():
                reading.cancel()
                break
            try:
                message = reading.result()
            except FramingError as error:
                adapter.malformed(str(error))
                continue
            if message is None:
                break
            await adapter.handle(message)
    finally:
        ended.cancel()
        await adapter.close()
    return 0


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="oscova-lsp debug: %(message)s")
    out = ProtocolOutput()
    return asyncio.run(serve(sys.stdin.buffer, out))
