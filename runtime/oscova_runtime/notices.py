"""Notices: what a provider left out of a run on purpose, and why, for whoever shows the run; and warnings:
what made a run's answer other than the model's whole answer (the repeated-call guard stopped its tool loop).

Private notes that are refused (a link leading out, a FIFO, another user's notes) contribute nothing to the
prompt (seed: "Missing or unauthorized notes contribute nothing"); the reason is told here instead. A
provider calls `notice(self, message)`; `listening(callback)` hears the notices of the code it wraps (a
context variable, so per task and inherited by the tasks it starts). The run service turns them into `notice`
run events, the preview into each provider's `notices`. `warn(reason, message)` reaches the same listener as a
`RunWarning`, which the run service turns into a `warning` event. Without a listener either is dropped.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from .messages import full_type_name


@dataclass(frozen=True, slots=True)
class ProviderNotice:
    source: str
    """The full type name of the provider that gave it."""
    message: str
    """A sentence for the user; never the left-out text itself."""


@dataclass(frozen=True, slots=True)
class RunWarning:
    reason: str
    """What happened, as a word of the `warning` event (`repeatedCall`)."""
    message: str
    """A sentence for the user."""


Heard = ProviderNotice | RunWarning
_listener: ContextVar[Callable[[Heard], None] | None] = ContextVar("oscova_notices", default=None)


def notice(provider: object, message: str) -> None:
    """Tells the current listener (if any) what `provider` left out and why. Call it on the event loop."""
    listener = _listener.get()
    if listener is not None:
        listener(ProviderNotice(full_type_name(provider), message))


AGENT = "{agent}"
"""Where a warning's message names the agent it is about (the listener knows which: the call in progress)."""


def warn(reason: str, message: str) -> None:
    """Tells the current listener (if any) that an answer is not the model's whole answer, and why; `AGENT` in
    `message` stands for the agent."""
    listener = _listener.get()
    if listener is not None:
        listener(RunWarning(reason, message))


@contextlib.contextmanager
def listening(callback: Callable[[Heard], None]) -> Iterator[None]:
    """Within the block, notices go to `callback` (instead of an outer listener)."""
    token = _listener.set(callback)
    try:
        yield
    finally:
        _listener.reset(token)
