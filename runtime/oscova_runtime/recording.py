"""The model tap: one place every model call of a run passes through, to record it or to answer it.

A run sets a tap for its task (`tapped(tap)`); each call the OpenAI-compatible client gets inside it, from
the requested agent, an agent called as a tool or the compaction reducer, goes to `tap.stream` /
`tap.complete` with the request in wire form (`model`, `messages`, `tools`, options; never the key) and a
thunk making the real call. A recorder makes the call and notes request and response; a replayer answers
from a recording and never calls the endpoint. Outside a tapped run the client is untouched.

The clock templates read (`current_date`, `current_time`) is `now()`: a run freezes it at its start
(`clock_at`), and a replay at the recorded run's, so the same templates render the same text. Likewise a
replay shows the environment provider the recorded machine's facts (`facts_at`): operating system,
shell, home folder.

Tool calls pass through the tap too: every agent a build makes has `tapped_tool` as a function middleware, so
in a tapped run each tool call of any agent (the requested one, and the agents it calls as tools) goes to
`tap.tool`, which records its result or (a replay) answers with the recorded one. `TOOL_SCOPE` holds the id
of the tool call in progress (the innermost), so a model call or tool call made inside an agent called as a
tool is known as such.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol

from .messages import ChatResponse, ChatResponseUpdate


class ModelTap(Protocol):
    def stream(self, request: dict[str, Any], real: Callable[[], AsyncGenerator[ChatResponseUpdate, None]],
               ) -> AsyncGenerator[ChatResponseUpdate, None]: ...

    async def complete(self, request: dict[str, Any], real: Callable[[], Awaitable[ChatResponse]]) -> ChatResponse: ...

    async def tool(self, context: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        """A tool call of any agent of the run: `context` is its `FunctionInvocationContext`; `call_next` runs it."""
        ...


MODEL_TAP: ContextVar[ModelTap | None] = ContextVar("oscova_model_tap", default=None)
TOOL_SCOPE: ContextVar[str | None] = ContextVar("oscova_tool_scope", default=None)


@contextlib.contextmanager
def tapped(tap: ModelTap | None) -> Iterator[None]:
    """Model calls made in this context (and tasks started from it) go through `tap`."""
    token = MODEL_TAP.set(tap)
    try:
        yield
    finally:
        MODEL_TAP.reset(token)


def current_tap() -> ModelTap | None:
    return MODEL_TAP.get()


async def tapped_tool(context: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
    """Function middleware of every built agent: in a tapped run the tap sees the call, elsewhere it just runs."""
    tap = MODEL_TAP.get()
    return await (tap.tool(context, call_next) if tap is not None else call_next(context))


_CLOCK: ContextVar[_dt.datetime | None] = ContextVar("oscova_clock", default=None)


@contextlib.contextmanager
def clock_at(moment: _dt.datetime) -> Iterator[None]:
    """`now()` in this context is `moment` (an aware datetime)."""
    token = _CLOCK.set(moment)
    try:
        yield
    finally:
        _CLOCK.reset(token)


def now(zone: _dt.tzinfo | None = None) -> _dt.datetime:
    """The time templates show: the run's frozen clock, else the current time; in `zone` (None: local)."""
    frozen = _CLOCK.get()
    if frozen is None:
        return _dt.datetime.now(zone)
    return frozen.astimezone(zone) if zone is not None else frozen.astimezone().replace(tzinfo=None)


_FACTS: ContextVar[dict[str, str] | None] = ContextVar("oscova_environment_facts", default=None)


@contextlib.contextmanager
def facts_at(facts: dict[str, str] | None) -> Iterator[None]:
    """The environment provider shows `facts` (a replay: the recorded machine's) in this context."""
    token = _FACTS.set(facts)
    try:
        yield
    finally:
        _FACTS.reset(token)


def recorded_facts() -> dict[str, str] | None:
    return _FACTS.get()
