"""A custom context provider for the example workspace: the open support tickets, as template data.

Declared in oscova.toml as `[providers.tickets]` with `template = "templates/tickets.j2"`: the host
renders that template with what `template_variables` returns. The tickets are untrusted data
(`trusted = false`), so the template fences them in a `<tickets>` block.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

from oscova_runtime import AIContextProvider

TICKETS = Path(__file__).resolve().parent.parent / "data" / "tickets.json"
PRIORITY = {"high": 0, "medium": 1, "low": 2}
MAX_TICKETS = 10


class TicketContextProvider(AIContextProvider):
    """Lists the open tickets, those sharing words with the user's request first, then by priority."""

    def __init__(self) -> None:
        self._cache: tuple[float, dict[str, Any]] | None = None

    async def _load(self) -> dict[str, Any]:
        """The ticket file, re-read only when it changes."""
        mtime = os.stat(TICKETS).st_mtime
        if self._cache is None or self._cache[0] != mtime:
            text = await asyncio.to_thread(TICKETS.read_text, encoding="utf-8")
            self._cache = (mtime, json.loads(text))
        return self._cache[1]

    async def template_variables(self, context: Any) -> dict[str, Any]:
        data = await self._load()
        request = " ".join(m.text for m in context.ai_context.messages or () if m.role == "user")
        words = {w for w in re.findall(r"[a-z0-9-]+", request.lower()) if len(w) > 2}

        def rank(ticket: dict[str, Any]) -> tuple[int, int, int]:
            title = f"{ticket['title']} {ticket.get('region') or ''}".lower()
            overlap = sum(1 for w in words if w in title)
            return (-overlap, PRIORITY.get(ticket.get("priority", "low"), 3), -int(ticket["number"]))

        open_tickets = sorted((t for t in data.get("tickets", []) if t.get("status") == "open"), key=rank)
        lines = [f"- #{t['number']} [{t.get('priority', 'low')}] {t['title']} (opened {t.get('opened', '?')})"
                 for t in open_tickets[:MAX_TICKETS]]
        return {"open_tickets": "\n".join(lines) or "- none open", "ticket_owner": data.get("owner", "unassigned")}
