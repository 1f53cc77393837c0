"""JSON-RPC 2.0 over a Content-Length framed stream, in both directions: requests (answered by handlers running
as tasks), responses, notifications, and `$/cancel` of a request in progress. The run host's two sides speak it."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from oscova_runtime.framing import FramingError, MessageReader, encode

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""The largest message read: a preview or a run's messages can be large, and both ends are this program."""
CANCEL = "$/cancel"


class RemoteError(Exception):
    """The other side answered a request with an error; the message is its sentence."""


class Gone(Exception):
    """The other side stopped before it answered; the message says how."""


Handler = Callable[[dict[str, Any]], Awaitable[Any]]
Listener = Callable[[dict[str, Any]], None]


class Endpoint:
    """One side of the connection. `requests`: the methods it answers; `notifications`: the ones it hears."""

    def __init__(self, reader: asyncio.StreamReader, write: Callable[[bytes], None], *,
                 requests: Mapping[str, Handler] | None = None,
                 notifications: Mapping[str, Listener] | None = None) -> None:
        self._reader = MessageReader(reader, MAX_MESSAGE_BYTES)
        self._write = write
        self._requests = dict(requests or {})
        self._notifications = dict(notifications or {})
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._handling: dict[Any, asyncio.Task[None]] = {}
        self._gone: str | None = None

    async def serve(self, *, fail_at_end: bool = True) -> None:
        """Reads until the stream ends, then (with `fail_at_end`) fails every request still waiting for an answer;
        without it, the caller does, once it knows why the other side stopped."""
        try:
            while True:
                try:
                    message = await self._reader.read()
                except FramingError as error:
                    logger.warning("run host: %s", error)
                    continue
                if message is None:
                    break
                self._dispatch(message)
        finally:
            if fail_at_end:
                self.fail_pending(self._gone or "the connection ended")
            for task in list(self._handling.values()):
                task.cancel()

    def fail_pending(self, why: str) -> None:
        """Every request waiting for an answer fails with `Gone(why)`; later requests fail at once. The first
        reason given stays."""
        self._gone = self._gone or why
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(Gone(why))

    async def request(self, method: str, params: dict[str, Any], *, answer_when_cancelled: bool = False) -> Any:
        """The other side's answer; RemoteError for an error answer, Gone when it stops first. Cancelling the
        call sends `$/cancel` for it; with `answer_when_cancelled`, the call then still waits for the answer
        (what a cancelled evaluation finished) and returns it."""
        if self._gone is not None:
            raise Gone(self._gone)
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        try:
            try:
                return await asyncio.shield(future)
            except asyncio.CancelledError:
                if self._gone is None:
                    self.notify(CANCEL, {"id": msg_id})
                task = asyncio.current_task()
                if not answer_when_cancelled or task is None:
                    raise
                task.uncancel()
                return await future
        finally:
            self._pending.pop(msg_id, None)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        if self._gone is None:
            self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _send(self, message: dict[str, Any]) -> None:
        try:
            self._write(encode(message))
        except (OSError, RuntimeError) as error:  # the pipe closed: what waits learns it from `serve`
            logger.info("run host: a message could not be sent: %s", error)

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:  # a response
            future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if future is None or future.done():
                return
            error = message.get("error")
            if isinstance(error, dict):
                future.set_exception(RemoteError(str(error.get("message") or "the request failed")))
            else:
                future.set_result(message.get("result"))
            return
        raw = message.get("params")
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if "id" not in message:
            if method == CANCEL:
                task = self._handling.get(params.get("id"))
                if task is not None:
                    task.cancel()
                return
            listener = self._notifications.get(method)
            if listener is not None:
                try:
                    listener(params)
                except Exception:  # noqa: BLE001 - one listener's failure stops nothing else
                    logger.exception("run host: the notification %s failed", method)
            return
        msg_id = message["id"]
        handler = self._requests.get(method)
        if handler is None:
            self._send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": f"no method {method}"}})
            return
        self._handling[msg_id] = asyncio.ensure_future(self._answer(msg_id, handler, params))

    async def _answer(self, msg_id: Any, handler: Handler, params: dict[str, Any]) -> None:
        try:
            result = await handler(params)
        except asyncio.CancelledError:
            self._send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32800, "message": "cancelled"}})
        except Exception as error:  # noqa: BLE001 - every failure is an answer in words
            self._send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32000, "message": str(error) or
                                                                  type(error).__name__}})
        else:
            self._send({"jsonrpc": "2.0", "id": msg_id, "result": result})
        finally:
            self._handling.pop(msg_id, None)

    async def close(self) -> None:
        for task in list(self._handling.values()):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._handling.values(), return_exceptions=True)
