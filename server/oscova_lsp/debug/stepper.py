"""The debugger's stepper (`oscova_runtime.stepping.Stepper`): where a run stops, what a stop shows, how it goes on.

Steps: after each provider's contribution, before each model request, before each tool call (an agent called
as a tool is entered there), a refused tool call, a failure. A step stops the run when a breakpoint matches it
(`breakpoints.py`) or the client stepped to it: `next` stops at the next step of the same agent or one that
called it, `stepIn` at the very next step (inside an agent called as a tool), `stepOut` when the current
agent's tool call has returned. A stop holds its frames (agent → step, nested agents below their tool call),
its scopes and the edits made to it; the run waits until the client resumes it. Edits at a model stop change
the request as it is sent; edits at a tool stop the arguments the tool gets. Each edit is written to the
transcript as an `edit` record when the run resumes (a replay applies it again).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from oscova_runtime.messages import ChatResponseUpdate, UpdateAccumulator

from ..runs.events import conversation_message, describe_exception, jsonable
from .breakpoints import Breakpoints, Step
from .variables import EditRefused, Entry, Variables

Resume = Literal["continue", "next", "stepIn", "stepOut", "pause"]


class Locator(Protocol):
    """Where an agent's parts are written (the run's definitions)."""

    def agent_source(self, agent_id: str) -> tuple[str | None, int]:
        """The agent's definition file and its `id:` line (1-based)."""
        ...

    def provider(self, agent_id: str, index: int, requested: bool) -> tuple[str, int | None]:
        """The type of the agent's `index`-th provider and the line of its `context_providers` entry, if listed."""
        ...


@dataclass(slots=True)
class Level:
    """An agent on the run's stack: the requested one, or one called as a tool (`entered_by`: that call)."""

    agent_id: str
    entered_by: str | None = None
    session: Any = None


@dataclass(slots=True, eq=False)
class Stop:
    reason: str
    """The DAP `stopped` reason: `entry`, `step`, `pause`, `function breakpoint`, `breakpoint`, `exception`."""
    description: str
    frames: list[dict[str, Any]]
    variables: Variables
    scopes: list[tuple[str, int]]
    """(name, variables reference) per scope."""
    depth: int
    hit: list[int] = field(default_factory=list)
    exception: dict[str, Any] | None = None
    edits: list[dict[str, Any]] = field(default_factory=list)
    where: dict[str, Any] = field(default_factory=dict)
    """What an edit record names: `{step: "model", call: N}` or `{step: "tool", callId, within}`."""
    resumed: asyncio.Future[Resume] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


EditSink = Callable[[dict[str, Any]], None]


class RunStepper:
    """Stops one run at its steps. `on_stop` hears each stop; `resume` lets the run go on."""

    def __init__(self, agent_id: str, locator: Locator, breakpoints: Breakpoints, *,
                 on_stop: Callable[[Stop], None], stop_on_entry: bool = False) -> None:
        self.locator = locator
        self.breakpoints = breakpoints
        self.on_stop = on_stop
        self.levels = [Level(agent_id)]
        self.mode: Resume | Literal["entry", "run"] = "entry" if stop_on_entry else "run"
        self.target_depth = 0
        self.model_calls = 0
        self.last_response: dict[str, Any] | None = None
        self.current: Stop | None = None
        self.write_edit: EditSink = lambda record: None
        """Where edit records go: the run's transcript (`Recorder.write`)."""
        self._tool_scope: list[str] = []

    @property
    def depth(self) -> int:
        return len(self.levels) - 1

    # -- deciding ------------------------------------------------------------------------------------

    def _reason(self, step: Step) -> tuple[str | None, list[int]]:
        hit = self.breakpoints.hits(step)
        stepped = {"entry": "entry", "stepIn": "step", "pause": "pause"}.get(self.mode)
        if self.mode == "next" and self.depth <= self.target_depth or self.mode == "stepOut" and \
                self.depth < self.target_depth:
            stepped = "step"
        if stepped is not None:
            return stepped, hit
        if hit:
            return ("breakpoint" if self.breakpoints.is_source(hit) else "function breakpoint"), hit
        return None, []

    def resume(self, how: Resume) -> bool:
        """Lets the stopped run go on (`pause` while it runs: stop at the next step). False: nothing to resume."""
        stop = self.current
        if how == "pause":
            self.mode = "pause"
            return stop is None
        if stop is None or stop.resumed.done():
            return False
        self.mode = "run" if how == "continue" else how
        self.target_depth = stop.depth
        stop.resumed.set_result(how)
        return True

    async def _pause(self, stop: Stop) -> None:
        self.mode = "run"
        self.current = stop
        self.on_stop(stop)
        try:
            await stop.resumed
        finally:
            self.current = None
            for edit in stop.edits:
                self.write_edit({"record": "edit", **stop.where, **edit})

    # -- what a stop shows -------------------------------------------------------------------------------

    def _frames(self, step_name: str, line: int | None = None) -> list[dict[str, Any]]:
        ids = itertools.count(1)
        path, id_line = self.locator.agent_source(self.levels[-1].agent_id)
        frames = [_frame(next(ids), step_name, path, line or id_line)]
        for level in reversed(self.levels):
            path, id_line = self.locator.agent_source(level.agent_id)
            frames.append(_frame(next(ids), f"agent {level.agent_id}", path, id_line))
            if level.entered_by is not None:
                parent = self.levels[self.levels.index(level) - 1]
                parent_path, parent_line = self.locator.agent_source(parent.agent_id)
                frames.append(_frame(next(ids), level.entered_by, parent_path, parent_line))
        return frames

    def _common(self) -> list[tuple[str, list[Entry]]]:
        response = [Entry(k, v) for k, v in (self.last_response or {}).items()]
        session = self.levels[-1].session
        state = [Entry(str(k), jsonable(v)) for k, v in getattr(session, "state_bag", {}).items()]
        return [("Last response", response), ("Session", state)]

    def _stop(self, reason: str, hit: list[int], description: str, frames: list[dict[str, Any]],
              scopes: list[tuple[str, list[Entry]]], **fields: Any) -> Stop:
        stop: Stop | None = None

        def edited(entry: Entry, was: Any, value: Any) -> None:
            if stop is not None:
                stop.edits.append({"scope": entry.scope, "path": list(entry.path), "was": jsonable(was),
                                   "value": jsonable(value)})

        variables = Variables(edited)
        stop = Stop(reason, description, frames, variables, [(name, variables.scope(entries))
                                                               for name, entries in scopes], self.depth, hit,
                    **fields)
        return stop

    # -- providers --------------------------------------------------------------------------------------

    async def provider_contributed(self, agent: Any, index: int, provider: Any, context: Any, session: Any) -> None:
        self.levels[-1].session = session
        kind, line = self.locator.provider(agent.id, index, self.depth == 0)
        reason, hit = self._reason(Step("provider", kind, agent.id, line=line, path=self._path()))
        if reason is None:
            return
        name = f"provider {index + 1}: {kind}"
        shown = [Entry("instructions", context.instructions),
                 Entry("messages", [conversation_message(m).wire() for m in context.messages or ()]),
                 Entry("tools", [getattr(t, "name", type(t).__name__) for t in context.tools or ()])]
        about = [Entry("type", kind), Entry("class", type(provider).__name__), Entry("index", index + 1),
                 Entry("agent", agent.id)]
        await self._pause(self._stop(reason, hit, f"After {name} of {agent.id}", self._frames(name, line),
                                     [("Context", shown), ("Provider", about), *self._common()]))

    def _path(self) -> str | None:
        return self.locator.agent_source(self.levels[-1].agent_id)[0]

    # -- model calls ----------------------------------------------------------------------------------

    async def _before_model(self, request: dict[str, Any]) -> int:
        self.model_calls += 1
        number = self.model_calls
        system = _system_message(request)
        instructions = system.get("content") if system is not None else None
        reason, hit = self._reason(Step("model", None, self.levels[-1].agent_id, instructions=instructions,
                                        path=self._path()))
        if reason is None:
            return number
        context = [Entry("messages", request.get("messages"), _no_assign, ("messages",), "request"),
                   Entry("tools", [t.get("function", {}).get("name") for t in request.get("tools") or ()])]
        if system is not None:
            context.insert(0, Entry("instructions", instructions, lambda v: system.__setitem__("content", v),
                                    ("messages", request["messages"].index(system), "content"), "request"))
        wire = [Entry(str(k), v, _setter(request, k), (k,), "request") for k, v in request.items()]
        name = f"model call {number}"
        await self._pause(self._stop(reason, hit, f"Before {name} ({self.levels[-1].agent_id})", self._frames(name),
                                     [("Context", context), ("Request", wire), *self._common()],
                                     where={"step": "model", "call": number}))
        return number

    def model_stream(self, request: dict[str, Any], send: Callable[[dict[str, Any]], AsyncGenerator[Any, None]],
                     ) -> AsyncGenerator[Any, None]:
        return self._stream(request, send)

    async def _stream(self, request: dict[str, Any], send: Callable[[dict[str, Any]], AsyncGenerator[Any, None]],
                      ) -> AsyncGenerator[Any, None]:
        number = await self._before_model(request)
        updates = UpdateAccumulator()
        try:
            async with contextlib.aclosing(send(request)) as stream:
                async for update in stream:
                    updates.add(update)
                    yield update
        except Exception as error:
            await self._failed(error, f"model call {number}")
            raise
        self._answered(updates)

    async def model_complete(self, request: dict[str, Any], send: Callable[[dict[str, Any]], Awaitable[Any]]) -> Any:
        number = await self._before_model(request)
        try:
            response = await send(request)
        except Exception as error:
            await self._failed(error, f"model call {number}")
            raise
        updates = UpdateAccumulator()
        for message in response.messages:
            updates.add(ChatResponseUpdate(message.role, list(message.contents)))
        self._answered(updates)
        return response

    def _answered(self, updates: UpdateAccumulator) -> None:
        messages = [conversation_message(m).wire() for m in updates.messages()]
        self.last_response = {"agent": self.levels[-1].agent_id, "call": self.model_calls, "messages": messages}

    # -- tools ------------------------------------------------------------------------------------------

    async def tool(self, context: Any, run: Callable[[], Awaitable[Any]]) -> Any:
        call, agent_tool = context.call, context.function.agent_id
        reason, hit = self._reason(Step("tool", call.name, self.levels[-1].agent_id, entering=agent_tool,
                                        path=self._path()))
        name = f"tool call {call.name} ({call.call_id})"
        if reason is not None:
            arguments = [Entry(str(k), v, _setter(context.arguments, k), (k,), "arguments")
                         for k, v in context.arguments.items()]
            about = [Entry("name", call.name), Entry("callId", call.call_id)]
            if agent_tool is not None:
                about.append(Entry("agent", agent_tool))
            where = {"step": "tool", "callId": call.call_id, "within": self._tool_scope[-1] if self._tool_scope else None}
            await self._pause(self._stop(reason, hit, f"Before {name}", self._frames(name),
                                         [("Arguments", arguments), ("Tool call", about), *self._common()],
                                         where=where))
        if agent_tool is not None:
            self.levels.append(Level(agent_tool, name))
        self._tool_scope.append(call.call_id)
        try:
            result = await run()
        except Exception as error:
            self._leave(agent_tool)
            await self._failed(error, name)
            raise
        except BaseException:
            self._leave(agent_tool)
            raise
        self._leave(agent_tool)
        if agent_tool is not None and self.mode == "stepOut" and self.depth < self.target_depth:
            await self._returned(name, result)
        return result

    def _leave(self, agent_tool: str | None) -> None:
        self._tool_scope.pop()
        if agent_tool is not None:
            self.levels.pop()

    async def _returned(self, name: str, result: Any) -> None:
        step = f"{name} returned"
        await self._pause(self._stop("step", [], step, self._frames(step),
                                     [("Result", [Entry("result", jsonable(result))]), *self._common()]))

    async def refused(self, call: Any, reason: str) -> None:
        if not self.breakpoints.catches("denied"):
            return
        name = f"tool call {call.name} ({call.call_id})"
        details = [Entry("name", call.name), Entry("callId", call.call_id), Entry("reason", reason),
                   Entry("arguments", jsonable(call.arguments))]
        await self._pause(self._stop("exception", [], f"Denied: {name}", self._frames(name),
                                     [("Denied", details), *self._common()],
                                     exception={"exceptionId": "denied", "description": reason,
                                                "breakMode": "always"}))

    async def _failed(self, error: Exception, name: str) -> None:
        if not self.breakpoints.catches("failed"):
            return
        text = describe_exception(error)
        details = [Entry("type", type(error).__name__), Entry("message", text), Entry("step", name)]
        await self._pause(self._stop("exception", [], f"Failed: {name}: {text}", self._frames(name),
                                     [("Exception", details), *self._common()],
                                     exception={"exceptionId": "failed", "description": text, "breakMode": "always",
                                                "details": {"typeName": type(error).__name__, "message": text}}))


def _setter(container: dict[str, Any], key: str) -> Callable[[Any], None]:
    def assign(value: Any) -> None:
        container[key] = value

    return assign


def _no_assign(value: Any) -> None:
    raise EditRefused("edit one message's fields (its content), not the whole list")


def _system_message(request: dict[str, Any]) -> dict[str, Any] | None:
    messages = request.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[0], dict) and messages[0].get("role") == "system":
        return messages[0]
    return None


def _frame(frame_id: int, name: str, path: str | None, line: int | None) -> dict[str, Any]:
    frame: dict[str, Any] = {"id": frame_id, "name": name, "line": line or 0, "column": 0}
    if path is not None:
        frame["source"] = {"name": os.path.basename(path), "path": path}
        frame["column"] = 1
    return frame
