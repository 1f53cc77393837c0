"""Notices: what a provider left out of a run on purpose, and why, for whoever shows the run.

Private notes that are refused (a link leading out, a FIFO, another user's notes) contribute nothing to the
prompt (seed: "Missing or unauthorized notes contribute nothing"); the reason is told here instead. A
provider calls `notice(self, message)`; `listening(callback)` hears the notices of the code it wraps (a
context variable, so per task and inherited by the tasks it starts). The run service turns them into `notice`
run events, the preview into each provider's `notices`. Without a listener a notice is dropped.
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


_listener: ContextVar[Callable[[ProviderNotice], None] | None] = ContextVar("oscova_notices", default=None)


def notice(provider: object, message: str) -> None:
    """Tells the current listener (if any) what `provider` left out and why. Call it on the event loop."""
    listener = _listener.get()
    if listener is not None:
        listener(ProviderNotice(full_type_name(provider), message))


@contextlib.contextmanager
def listening(callback: Callable[[ProviderNotice], None]) -> Iterator[None]:
    """Within the block, notices go to `callback` (instead of an outer listener)."""
    token = _listener.set(callback)
    try:
        yield
    finally:
        _listener.reset(token)
