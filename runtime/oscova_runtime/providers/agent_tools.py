"""AgentAsToolProvider: exposed child agents as tools, snapshotted when the provider is constructed."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..context import AIContext, AIContextProvider, InvokingContext
from ..tools import AIFunction


def tool_name_for(agent_id: str) -> str:
    """OpenAI tool names allow letters, digits, `_` and `-`."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", agent_id)[:64]


class AgentAsToolProvider(AIContextProvider):
    """Snapshots the successfully resolved children at construction; missing ids are skipped.

    A changed child stays as it was until the parent is rebuilt.
    """

    def __init__(self, agent_ids: Sequence[str], resolved: Mapping[str, Any]) -> None:
        self.tools: tuple[AIFunction, ...] = tuple(
            resolved[agent_id].as_ai_function(name=tool_name_for(agent_id))
            for agent_id in agent_ids if agent_id in resolved
        )

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        return AIContext(tools=list(self.tools)) if self.tools else AIContext()
