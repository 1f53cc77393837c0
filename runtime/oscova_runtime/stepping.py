"""Stepping hooks: where a debugger attached to a run (`oscova-lsp debug`) sees, pauses and edits it.

A run with a stepper (`stepping(stepper)`: a context variable, like the model tap, so the run's task and the
agents it calls as tools share it) calls it at the run's own steps:

- `provider_contributed`: after each context provider of any agent added its part (the agent's pipeline);
- `model_stream` / `model_complete`: before each model request of any agent, with the request in wire form
  (what the OpenAI-compatible client sends: `model`, `messages`, `tools`, options). The stepper may edit it in
  place; `send` then sends what it holds (through the model tap, so a transcript records the edited request);
- `tool`: around each tool call the loop runs (an agent called as a tool included: `context.function.agent_id`);
  the stepper may edit `context.arguments` before `run()` runs it;
- `refused`: a tool call governance refused (it is not run).

Without a stepper every hook reads one context variable and does nothing else.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import Any, Protocol


class Stepper(Protocol):
    async def provider_contributed(self, agent: Any, index: int, provider: Any, context: Any, session: Any) -> None:
        """`provider` (the agent's `index`-th) has contributed; `context` is the `AIContext` so far."""
        ...

    def model_stream(self, request: dict[str, Any], send: Callable[[dict[str, Any]], AsyncGenerator[Any, None]],
                     ) -> AsyncGenerator[Any, None]:
        """A streaming model request about to be sent; `send(request)` sends it."""
        ...

    async def model_complete(self, request: dict[str, Any], send: Callable[[dict[str, Any]], Awaitable[Any]]) -> Any:
        """A non-streaming model request about to be sent; `send(request)` sends it."""
        ...

    async def tool(self, context: Any, run: Callable[[], Awaitable[Any]]) -> Any:
        """A tool call (`FunctionInvocationContext`) about to run; `run()` runs it with `context.arguments`."""
        ...

    async def refused(self, call: Any, reason: str) -> None:
        """A tool call (`FunctionCallContent`) governance refused; `reason` is what the model is told."""
        ...


_STEPPER: ContextVar[Stepper | None] = ContextVar("oscova_stepper", default=None)


@contextlib.contextmanager
def stepping(stepper: Stepper | None) -> Iterator[None]:
    """Runs started in this context (and the tasks they start) call `stepper` at each step."""
    token = _STEPPER.set(stepper)
    try:
        yield
    finally:
        _STEPPER.reset(token)


def current_stepper() -> Stepper | None:
    return _STEPPER.get()
