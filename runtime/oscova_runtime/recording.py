"""The model tap: one place every model call of a run passes through, to record it or to answer it.

A run sets a tap for its task (`tapped(tap)`); each call the OpenAI-compatible client gets inside it, from
the requested agent, an agent called as a tool or the compaction reducer, goes to `tap.stream` /
`tap.complete` with the request in wire form (`model`, `messages`, `tools`, options; never the key) and a
thunk making the real call. A recorder makes the call and notes request and response; a replayer answers
from a recording and never calls the endpoint. Outside a tapped run the client is untouched.

`TOOL_SCOPE` holds the id of the requested agent's tool call in progress, so a model call made inside a
tool (an agent called as a tool) is known as such.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol

from .messages import ChatResponse, ChatResponseUpdate


class ModelTap(Protocol):
    def stream(self, request: dict[str, Any], real: Callable[[], AsyncGenerator[ChatResponseUpdate, None]],
               ) -> AsyncGenerator[ChatResponseUpdate, None]: ...

    async def complete(self, request: dict[str, Any], real: Callable[[], Awaitable[ChatResponse]]) -> ChatResponse: ...


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
