"""Extension point: the token delta of an agent's request and whether its cacheable prefix moved.

A review shows, per changed agent, what this returns (`AgentChange.economics`, `economics` in the JSON).
Counting tokens needs the model's own tokenizer, which the prompt-economics work (issue 25) provides; until
then there is no count to show and this returns None, so no figure is ever guessed. The shape it is to
return: `{"tokensBefore", "tokensAfter", "delta", "prefixMoved"}`.
"""

from __future__ import annotations

from typing import Any

from .render import Rendered


def prompt_economics(agent_id: str, before: Rendered, after: Rendered) -> dict[str, Any] | None:
    """The token figures of one agent's request before and after the change; None: no token counts yet."""
    return None
