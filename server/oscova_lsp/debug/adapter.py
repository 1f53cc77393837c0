"""The debug adapter: answers a DAP client's requests and runs one agent under the stepper.

The session follows the protocol's order: `initialize` (the capabilities; then the `initialized` event), the
breakpoints, `configurationDone` and `launch` (the run starts once both came, in either order). While the run
is stopped the client reads `threads`, `stackTrace`, `scopes`, `variables`, `exceptionInfo`, edits with
`setVariable` / `setExpression`, and resumes with `continue`, `next`, `stepIn`, `stepOut`; `terminate` and
`disconnect` cancel the run. The streamed answer and the run's tool calls come as `output` events; the run's
end as `exited` and `terminated`. A request that cannot be served gets an error response saying why; nothing
a client sends ends the session but `disconnect` or the end of its input.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

from ..runs.events import describe_exception
from .breakpoints import EXCEPTION_FILTERS, Breakpoints
from .launch import DebugRun, Launch, LaunchRefused, launch_arguments, open_run
from .stepper import Resume, RunStepper, Stop
from .variables import EditRefused

log = logging.getLogger(__name__)

THREAD_ID = 1
CAPABILITIES: dict[str, Any] = {
    "supportsConfigurationDoneRequest": True,
    "supportsFunctionBreakpoints": True,
    "supportsSetVariable": True,
    "supportsSetExpression": True,
    "supportsTerminateRequest": True,
    "supportsExceptionInfoRequest": True,
    "supportsEvaluateForHovers": False,
    "exceptionBreakpointFilters": list(EXCEPTION_FILTERS),
}
Send = Callable[[dict[str, Any]], None]


class RequestFailed(Exception):
    """A request that cannot be served: the message is the error response's, for the user."""

    def __init__(self, message: str, *, show: bool = True) -> None:
        super().__init__(message)
        self.show = show
        """`showUser`: VS Code pops up the message (false: it shows it where the request came from, or not)."""


class NotStopped(RequestFailed):
    """A request about a stop that has ended: a view refreshing after the user continued (VS Code asks for
    the top frame's scopes once it has drawn the call stack) is no error to pop up. An edit that did not
    apply is (`show`)."""

    def __init__(self, *, show: bool = False) -> None:
        super().__init__("The run is not stopped", show=show)


@dataclass(slots=True)
class _Pending:
    """A run that has its launch and waits for `configurationDone` (or the reverse)."""

    launch: Launch | None = None
    configured: bool = False


class DebugAdapter:
    def __init__(self, send: Send) -> None:
        self._send = send
        self._seq = itertools.count(1)
        self.breakpoints = Breakpoints()
        self._pending = _Pending()
        self.launch: Launch | None = None
        self.stepper: RunStepper | None = None
        self.run: DebugRun | None = None
        self.ended = asyncio.Event()
        """Set once the session is over: `disconnect`, or the run ended and was reported."""
        self.disconnected = False
        self._watcher: asyncio.Task[None] | None = None
        self._handlers: dict[str, Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]] = {
            "initialize": self._initialize, "launch": self._launch, "attach": self._attach,
            "setBreakpoints": self._set_breakpoints, "setFunctionBreakpoints": self._set_function_breakpoints,
            "setExceptionBreakpoints": self._set_exception_breakpoints,
            "configurationDone": self._configuration_done, "threads": self._threads,
            "stackTrace": self._stack_trace, "scopes": self._scopes, "variables": self._variables,
            "setVariable": self._set_variable, "setExpression": self._set_expression, "evaluate": self._evaluate,
            "exceptionInfo": self._exception_info, "continue": self._resume("continue"), "next": self._resume("next"),
            "stepIn": self._resume("stepIn"), "stepOut": self._resume("stepOut"), "pause": self._pause,
            "terminate": self._terminate, "disconnect": self._disconnect,
        }

    # -- messages ---------------------------------------------------------------------------------------

    def event(self, name: str, body: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"seq": next(self._seq), "type": "event", "event": name}
        if body is not None:
            message["body"] = body
        self._send(message)

    def _respond(self, request_seq: int, command: str, body: dict[str, Any] | None) -> None:
        message: dict[str, Any] = {"seq": next(self._seq), "type": "response", "request_seq": request_seq,
                                   "success": True, "command": command}
        if body is not None:
            message["body"] = body
        self._send(message)

    def _fail(self, request_seq: int, command: str, text: str, *, show: bool = True) -> None:
        self._send({"seq": next(self._seq), "type": "response", "request_seq": request_seq, "success": False,
                    "command": command, "message": text,
                    "body": {"error": {"id": 1, "format": text.replace("{", "{{").replace("}", "}}"),
                                       "showUser": show}}})

    def malformed(self, why: str) -> None:
        """A message that was not a request (not DAP, not JSON): said in the client's console."""
        self.event("output", {"category": "important", "output": f"oscova-lsp debug: {why}\n"})

    async def handle(self, message: dict[str, Any]) -> None:
        seq = message.get("seq")
        request_seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else 0
        command = message.get("command")
        if message.get("type") != "request":
            if message.get("type") not in ("response", "event"):
                self.malformed(f"a message of type {message.get('type')!r} is not a request; it was ignored")
            return
        if not isinstance(command, str):
            self._fail(request_seq, "", "The request has no command")
            return
        arguments = message.get("arguments", {})
        handler = self._handlers.get(command)
        if handler is None:
            self._fail(request_seq, command, f"oscova-lsp debug does not support the request {command!r}")
            return
        if not isinstance(arguments, dict) or not isinstance(seq, int):
            self._fail(request_seq, command, f"The {command} request needs an integer `seq` and an object "
                                             "`arguments`")
            return
        try:
            body = await handler(arguments)
        except RequestFailed as refused:
            self._fail(request_seq, command, str(refused), show=refused.show)
            return
        except (LaunchRefused, EditRefused) as refused:
            self._fail(request_seq, command, str(refused))
            return
        except Exception as error:  # noqa: BLE001 - one request fails, the session goes on
            log.warning("The %s request failed: %s", command, describe_exception(error))
            self._fail(request_seq, command, f"The {command} request failed: {describe_exception(error)}")
            return
        self._respond(request_seq, command, body)
        if command == "initialize":
            self.event("initialized")

    # -- configuration ----------------------------------------------------------------------------------

    async def _initialize(self, arguments: dict[str, Any]) -> dict[str, Any]:
        return CAPABILITIES

    async def _attach(self, arguments: dict[str, Any]) -> None:
        raise RequestFailed("oscova-lsp debug launches runs (`request: launch`); it cannot attach to one")

    async def _set_function_breakpoints(self, arguments: dict[str, Any]) -> dict[str, Any]:
        given = arguments.get("breakpoints", [])
        if not isinstance(given, list):
            raise RequestFailed("`breakpoints` must be a list of {name}")
        names = [b.get("name") if isinstance(b, dict) else None for b in given]
        return {"breakpoints": self.breakpoints.set_functions(names)}

    async def _set_exception_breakpoints(self, arguments: dict[str, Any]) -> dict[str, Any]:
        filters = arguments.get("filters", [])
        if not isinstance(filters, list):
            raise RequestFailed("`filters` must be a list: failed, denied")
        return {"breakpoints": self.breakpoints.set_exceptions(filters)}

    async def _set_breakpoints(self, arguments: dict[str, Any]) -> dict[str, Any]:
        source = arguments.get("source")
        path = source.get("path") if isinstance(source, dict) else None
        if not isinstance(path, str) or not path:
            raise RequestFailed("setBreakpoints needs `source.path`")
        given = arguments.get("breakpoints", [])
        if not isinstance(given, list) or not all(isinstance(b, dict) and _is_int(b.get("line")) for b in given):
            raise RequestFailed("`breakpoints` must be a list of {line}")
        lines = [int(b["line"]) for b in given]
        return {"breakpoints": self.breakpoints.set_sources(path, lines, self._placer())}

    def _placer(self) -> Callable[[str, int], Any]:
        from .sources import place_breakpoint

        return lambda path, line: place_breakpoint(path, line, self.launch.root if self.launch else None)

    async def _configuration_done(self, arguments: dict[str, Any]) -> None:
        self._pending.configured = True
        self._start_when_ready()

    async def _launch(self, arguments: dict[str, Any]) -> None:
        if self.launch is not None or self._pending.launch is not None:
            raise RequestFailed("This session has launched its run already; start another session for another run")
        self._pending.launch = launch = launch_arguments(arguments, os.getcwd())
        self.breakpoints.set_functions(list(launch.function_breakpoints), launch=True)
        self._start_when_ready()

    def _start_when_ready(self) -> None:
        pending = self._pending
        if pending.launch is None or not pending.configured or self.launch is not None:
            return
        self.launch = pending.launch
        self.stepper, self.run = open_run(self.launch, self.breakpoints, self._stopped, self._run_event)
        self._watcher = asyncio.ensure_future(self._watch())

    # -- the run ----------------------------------------------------------------------------------------

    def _stopped(self, stop: Stop) -> None:
        body: dict[str, Any] = {"reason": stop.reason, "description": stop.description, "threadId": THREAD_ID,
                                "allThreadsStopped": True}
        if stop.hit:
            body["hitBreakpointIds"] = stop.hit
        if stop.exception is not None:
            body["text"] = stop.exception["description"]
        self.event("stopped", body)

    def _run_event(self, event: dict[str, Any]) -> None:
        kind = event.get("kind")
        if kind == "delta":
            self.event("output", {"category": "stdout", "output": event.get("text", "")})
        elif kind == "toolCall":
            self.event("output", {"category": "console",
                                  "output": f"{_nested(event)}→ {event.get('name')}({event.get('arguments')})\n"})
        elif kind == "toolResult":
            shown = event.get("error") or event.get("result")
            self.event("output", {"category": "console", "output": f"{_nested(event)}← {event.get('name')}: {shown}\n"})
        elif kind == "notice":
            self.event("output", {"category": "console", "output": f"notice: {event.get('message')}\n"})
        elif kind in ("completed", "failed", "cancelled"):
            line = f"\n{kind}" + (f": {event['error']}" if event.get("error") else "") + "\n"
            self.event("output", {"category": "important" if kind == "failed" else "console", "output": line})

    async def _watch(self) -> None:
        result: dict[str, Any] = {}
        try:
            result = await self.run.result() if self.run is not None else {}
        finally:
            transcript = result.get("transcript")
            if transcript:
                self.event("output", {"category": "console", "output": f"transcript: {transcript}\n"})
            self.event("exited", {"exitCode": 0 if result.get("status") == "completed" else 1})
            self.event("terminated")

    def _stop(self, *, editing: bool = False) -> Stop:
        stop = self.stepper.current if self.stepper is not None else None
        if stop is None:
            raise NotStopped(show=editing)
        return stop

    async def _threads(self, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.launch is None:
            return {"threads": []}
        return {"threads": [{"id": THREAD_ID, "name": f"run {self.launch.agent}"}]}

    async def _stack_trace(self, arguments: dict[str, Any]) -> dict[str, Any]:
        frames = self._stop().frames
        start = arguments.get("startFrame", 0)
        levels = arguments.get("levels", 0)
        start = start if _is_int(start) and start >= 0 else 0
        shown = frames[start:start + levels] if _is_int(levels) and levels > 0 else frames[start:]
        return {"stackFrames": shown, "totalFrames": len(frames)}

    async def _scopes(self, arguments: dict[str, Any]) -> dict[str, Any]:
        stop = self._stop()
        if not any(frame["id"] == arguments.get("frameId") for frame in stop.frames):
            raise RequestFailed(f"No stack frame has the id {arguments.get('frameId')!r}")
        return {"scopes": [{"name": name, "variablesReference": reference, "expensive": False}
                           for name, reference in stop.scopes]}

    async def _variables(self, arguments: dict[str, Any]) -> dict[str, Any]:
        reference = arguments.get("variablesReference")
        if not _is_int(reference):
            raise RequestFailed("`variablesReference` must be an integer")
        return {"variables": self._stop().variables.listing(reference)}

    async def _set_variable(self, arguments: dict[str, Any]) -> dict[str, Any]:
        reference, name, value = (arguments.get(k) for k in ("variablesReference", "name", "value"))
        if not _is_int(reference) or not isinstance(name, str) or not isinstance(value, str):
            raise RequestFailed("setVariable needs an integer `variablesReference`, a `name` and a `value` (text)")
        variables = self._stop(editing=True).variables
        entry = variables.set(reference, name, value)
        return {k: v for k, v in variables.describe(entry).items() if k in ("value", "type", "variablesReference")}

    async def _set_expression(self, arguments: dict[str, Any]) -> dict[str, Any]:
        expression, value = arguments.get("expression"), arguments.get("value")
        if not isinstance(expression, str) or not isinstance(value, str):
            raise RequestFailed("setExpression needs an `expression` (a variable's evaluateName) and a `value`")
        variables = self._stop(editing=True).variables
        entry = variables.assign(variables.find(expression), value)
        return {k: v for k, v in variables.describe(entry).items() if k in ("value", "type", "variablesReference")}

    async def _evaluate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        expression = arguments.get("expression")
        if not isinstance(expression, str):
            raise RequestFailed("evaluate needs an `expression`")
        variables = self._stop().variables
        described = variables.describe(variables.find(expression))
        return {"result": described["value"], "type": described["type"],
                "variablesReference": described["variablesReference"]}

    async def _exception_info(self, arguments: dict[str, Any]) -> dict[str, Any]:
        stop = self._stop()
        if stop.exception is None:
            raise RequestFailed("The run is not stopped at a failure or a denial")
        return stop.exception

    def _resume(self, how: Resume) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]:
        async def resume(arguments: dict[str, Any]) -> dict[str, Any] | None:
            self._stop()
            if self.stepper is None or not self.stepper.resume(how):
                raise NotStopped()
            return {"allThreadsContinued": True} if how == "continue" else None

        return resume

    async def _pause(self, arguments: dict[str, Any]) -> None:
        if self.stepper is None:
            raise RequestFailed("No run has started yet")
        self.stepper.resume("pause")  # the run stops at its next step, with reason `pause`

    async def _terminate(self, arguments: dict[str, Any]) -> None:
        if self.run is None:
            self.ended.set()
            self.event("terminated")
            return
        self.run.cancel()

    async def _disconnect(self, arguments: dict[str, Any]) -> None:
        """Cancels the run and answers once it has ended (its transcript written); the session then ends."""
        self.disconnected = True
        if self.run is not None:
            self.run.cancel()
        if self._watcher is not None:
            await asyncio.gather(self._watcher, return_exceptions=True)
        self.ended.set()

    async def close(self) -> None:
        """The client is gone: the run is cancelled and reported."""
        if self.run is not None:
            self.run.cancel()
        if self._watcher is not None:
            await asyncio.gather(self._watcher, return_exceptions=True)
        if self.run is not None:
            await self.run.close()


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _nested(event: dict[str, Any]) -> str:
    """Before a tool call an agent called as a tool made: an indent and that agent's id."""
    return f"  {event.get('agentId') or ''} " if event.get("within") is not None else ""
