"""A bound on work that could block forever (a reader waiting on a FIFO): the test fails instead of hanging."""

from __future__ import annotations

import threading
from collections.abc import Callable


def within(seconds: float, work: Callable[[], object]) -> object:
    """`work()`'s result or exception, in a daemon thread: a reader blocked on a FIFO fails the test instead
    of hanging it (generous bound: a blocked reader never returns at all)."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still blocked after {seconds} s"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]
