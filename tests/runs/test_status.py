"""A run ends in one of the final kinds: the type of a run's status and the set of final event kinds agree."""

from __future__ import annotations

from typing import get_args

from oscova_lsp.runs.events import FINAL_KINDS
from oscova_lsp.runs.service import RunStatus


def test_every_run_status_is_a_final_event_kind() -> None:
    assert set(get_args(RunStatus)) == set(FINAL_KINDS)
