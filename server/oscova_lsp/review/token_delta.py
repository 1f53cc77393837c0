"""The token delta of an agent's request and whether its cacheable prefix moved.

A review shows, per changed agent, what this returns (`AgentChange.economics`, `economics` in the JSON report:
`wire.reports.PromptEconomics`), counted by `oscova_runtime.tokens` in each side's model's own tokenizer (the
preview's `tokens`). None when either side's request could not be assembled: no figure is ever guessed.
"""

from __future__ import annotations

from ..wire.reports import PromptEconomics
from .render import Rendered


def token_delta(agent_id: str, before: Rendered, after: Rendered) -> PromptEconomics | None:
    """The token figures of one agent's request before and after the change; None when a side has none."""
    old, new = before.tokens, after.tokens
    if not old or not new:
        return None
    old_prefix = int((old.get("cacheable") or {}).get("tokens", 0))
    new_prefix = int((new.get("cacheable") or {}).get("tokens", 0))
    return PromptEconomics(tokens_before=old["total"], tokens_after=new["total"], delta=new["total"] - old["total"],
                           cacheable_before=old_prefix, cacheable_after=new_prefix,
                           prefix_moved=old_prefix != new_prefix,
                           exact=bool(old.get("exact")) and bool(new.get("exact")), tokenizer=new.get("tokenizer"))
