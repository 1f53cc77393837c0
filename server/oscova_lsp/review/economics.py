"""The token delta of an agent's request and whether its cacheable prefix moved.

A review shows, per changed agent, what this returns (`AgentChange.economics`, `economics` in the JSON):
`{"tokensBefore", "tokensAfter", "delta", "cacheableBefore", "cacheableAfter", "prefixMoved", "exact",
"tokenizer"}`, counted by `oscova_runtime.tokens` in each side's model's own tokenizer (the preview's
`tokens`). None when either side's request could not be assembled: no figure is ever guessed.
"""

from __future__ import annotations

from typing import Any

from .render import Rendered


def prompt_economics(agent_id: str, before: Rendered, after: Rendered) -> dict[str, Any] | None:
    """The token figures of one agent's request before and after the change; None when a side has none."""
    old, new = before.tokens, after.tokens
    if not old or not new:
        return None
    old_prefix = int((old.get("cacheable") or {}).get("tokens", 0))
    new_prefix = int((new.get("cacheable") or {}).get("tokens", 0))
    return {"tokensBefore": old["total"], "tokensAfter": new["total"], "delta": new["total"] - old["total"],
            "cacheableBefore": old_prefix, "cacheableAfter": new_prefix, "prefixMoved": old_prefix != new_prefix,
            "exact": bool(old.get("exact")) and bool(new.get("exact")), "tokenizer": new.get("tokenizer")}
