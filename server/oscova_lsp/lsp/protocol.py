"""Every override of pygls, in one place: the JSON-RPC protocol of the server (`OscovaProtocol`).

pygls 2.1.1 gets several things wrong for this server (a frame that is not JSON-RPC, a request before
`initialize`, a notification's Future kept for ever, `$/cancelRequest` leaving a command running), and some
of the fixes override or call its private names. Those names are listed below (`PYGLS_PRIVATE_METHODS`,
`PYGLS_PRIVATE_ATTRIBUTES`, `PYGLS_OVERRIDES`), and `tests/server/test_pygls_contract.py` checks, against
the installed pygls (`PYGLS_CHECKED`), that each still exists with the shape relied on and that this module
uses no other. No other module of the server touches a private name of pygls.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from lsprotocol import types as lsp
from oscova_runtime.framing import Dropped, Message
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol, lsp_method

from .capabilities import COMMANDS, initialize_result
from .convert import CONVERTER
from .runs import Runs

logger = logging.getLogger(__name__)

PYGLS_CHECKED = "2.1.1"
"""The pygls release the names below were checked against: another one fails the contract test until they
are checked again."""
PYGLS_PRIVATE_METHODS: dict[str, tuple[str, ...]] = {
    "_execute_handler": ("msg_id", "handler", "callback", "args", "kwargs"),  # overridden
    "_send_response": ("msg_id", "result", "error"),  # overridden
    "_handle_cancel_notification": ("msg_id",),  # overridden
    "_send_data": ("data",),  # called
}
"""Private methods of pygls's protocol this module overrides or calls, with their parameters after `self`."""
PYGLS_PRIVATE_ATTRIBUTES: dict[str, type] = {
    "_request_futures": dict,  # the Future of each request in flight, by id
    "_shutdown": bool,  # set by `shutdown`
    "_server": object,  # the server the protocol serves
}
"""Private attributes of pygls's protocol this module reads or writes, with their type."""
PYGLS_OVERRIDES: dict[str, tuple[str, ...]] = {
    "structure_message": ("data",),
    "handle_message": ("message",),
    "lsp_initialize": ("params",),
    "lsp_shutdown": ("args",),
    "lsp_text_document__did_open": ("params",),
    "lsp_text_document__did_change": ("params",),
    "lsp_text_document__did_close": ("params",),
    "lsp_workspace__execute_command": ("params",),
}
"""Public methods of pygls's protocol replaced here (its built-in handlers by their `lsp_method` name)."""


class _BadRequest:
    """A request whose params do not deserialize: answered with InvalidParams instead of never."""

    def __init__(self, msg_id: Any, method: str, error: Exception) -> None:
        self.id = msg_id
        self.method = method
        self.error = error


class OscovaProtocol(LanguageServerProtocol):
    suppressed_response: Any = None
    """The id of an `initialize` that `launch` already answered: pygls's own answer is dropped."""
    initialize_seen = False

    def receive(self, item: Message | Dropped) -> None:
        """One item off the wire (`transport.pump`): a dropped frame is logged (a body that is not JSON gets
        JSON-RPC's parse error), anything but a JSON-RPC 2.0 object gets InvalidRequest."""
        if isinstance(item, Dropped):
            logger.warning("bad message from the client: %s", item.reason)
            if item.not_json:
                self._send_error(None, -32700, f"Parse error: {item.reason}")
            return
        value = item.value
        if not isinstance(value, dict) or value.get("jsonrpc") != "2.0" or \
                not isinstance(value.get("method", ""), str):
            logger.warning("bad message from the client: not a JSON-RPC 2.0 message; dropped it")
            msg_id = value.get("id") if isinstance(value, dict) else None
            self._send_error(msg_id if isinstance(msg_id, (int, str)) else None, -32600,
                             "Invalid Request: not a JSON-RPC 2.0 message")
            return
        try:
            message = self.structure_message(value)
        except Exception as error:  # a notification or response whose params do not deserialize
            logger.warning("bad message from the client: %s; dropped it", error or type(error).__name__)
            return
        try:
            self.handle_message(message)
        except Exception:
            logger.exception("handling %s failed", value.get("method") or "a response")

    def send_json(self, message: dict[str, Any]) -> None:
        """A message that is JSON already (a publication, `wire_json`): written as it is, not through lsprotocol's
        types."""
        self._send_data(message)

    def _send_error(self, msg_id: int | str | None, code: int, text: str) -> None:
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": text}})

    def _execute_handler(self, msg_id: Any, handler: Any, callback: Any, args: Any = None,
                         kwargs: Any = None) -> None:
        # pygls 2.1.1 files the Future of every notification handler (and of every handler a generator
        # handler delegates to) in `_request_futures` under a fresh uuid and never removes it: about 2 KB
        # per notification. Each handler's entry goes when it is done (docs/upstream/pygls-request-futures.md).
        def done(future: Any) -> None:
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            callback(future)

        super()._execute_handler(msg_id, handler, done, args, kwargs)

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        if self.suppressed_response is not None and msg_id == self.suppressed_response:
            self.suppressed_response = None
            return
        super()._send_response(msg_id, result, error)

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                return _BadRequest(data["id"], str(data["method"]), exc)
            raise

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _BadRequest):
            error = JsonRpcInvalidParams(f"invalid params for {message.method}")
            self._send_response(message.id, error=error.to_response_error())
            return
        method = getattr(message, "method", None)
        if method is not None and hasattr(message, "id"):  # a request: the lifecycle the spec sets
            refusal: JsonRpcException | None = None
            if self._shutdown and method != lsp.EXIT:
                refusal = JsonRpcInvalidRequest(f"{method} after shutdown: the server only accepts exit now")
            elif method == lsp.INITIALIZE and self.initialize_seen:
                refusal = JsonRpcInvalidRequest("the server is already initialized (initialize is sent once)")
            elif method != lsp.INITIALIZE and not self.initialize_seen:
                refusal = JsonRpcServerNotInitialized(f"{method} before initialize")
            if refusal is not None:
                self._send_response(message.id, error=refusal.to_response_error())
                return
            self.initialize_seen = True
        super().handle_message(message)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        # pygls answers `$/cancelRequest` but leaves a command's coroutine running: a run is cancelled here,
        # and its result (status `cancelled`) answers the request.
        runs = getattr(self._server, "runs", None)
        if isinstance(runs, Runs) and runs.cancel_request(msg_id):
            return
        super()._handle_cancel_notification(msg_id)

    @lsp_method(lsp.WORKSPACE_EXECUTE_COMMAND)
    async def lsp_workspace__execute_command(self, params: lsp.ExecuteCommandParams) -> Any:  # type: ignore[override]
        """Every command gets the whole `ExecuteCommandParams` (its argument object, its `workDoneToken`), and
        runs as the request's own task, so the request's id is the task's."""
        handler = self.fm.commands.get(params.command)
        if handler is None:
            raise JsonRpcInvalidParams(f"unknown command {params.command!r}; the server offers {', '.join(COMMANDS)}")
        try:
            result = handler(params)
            if inspect.isawaitable(result):
                result = await result
        except JsonRpcException:
            raise
        except Exception as error:  # a bug: an error for this request, in a line, without pygls' traceback
            logger.exception("%s failed", params.command)
            raise JsonRpcInternalError(f"{params.command} failed: {type(error).__name__}: {error}") from None
        return result

    # pygls's own handlers of the three put each document into its workspace store first; here the handlers
    # do it, through `documents.OpenDocuments` (which keeps documents over the limit out of that store).

    @lsp_method(lsp.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: lsp.DidOpenTextDocumentParams) -> Any:  # type: ignore[override]
        if (user_handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield user_handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams) -> Any:  # type: ignore[override]
        if (user_handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: lsp.DidCloseTextDocumentParams) -> Any:  # type: ignore[override]
        if (user_handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield user_handler, (params,), None

    @lsp_method(lsp.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Any:  # type: ignore[override]
        # pygls's own, over a copy: cancelling a handler now removes its entry (`_execute_handler`).
        if (user_handler := self.fm.features.get(lsp.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams):  # type: ignore[override]
        # The engine counts columns in UTF-16 code units; pin the encoding whatever the client offers.
        general = params.capabilities.general
        if general is not None and general.position_encodings:
            general.position_encodings = [lsp.PositionEncodingKind.Utf16]
        yield from super().lsp_initialize(params)
        # The answer is the one `launch` gives before pygls loads, from the one feature table, not pygls's own.
        answer = initialize_result({"capabilities": CONVERTER.unstructure(params.capabilities)})
        return CONVERTER.structure(answer, lsp.InitializeResult)
