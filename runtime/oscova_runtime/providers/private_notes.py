"""PrivateNotesContextProvider: the user's private notes for one agent (requested, non-shared agents)."""

from __future__ import annotations

import os

from ..context import AIContext, AIContextProvider, InvokingContext
from ..filecache import read_text

MAX_NOTES_CHARS = 8000


class PrivateNotesContextProvider(AIContextProvider):
    """Reads `<notes root>/<user id>/<agent id>.md`; missing or unreadable notes contribute nothing."""

    def __init__(self, notes_root: str, user_id: str | None, agent_id: str) -> None:
        self.path = os.path.join(notes_root, user_id, f"{agent_id}.md") if user_id else None

    def _read(self) -> str | None:
        if self.path is None:
            return None
        text = read_text(self.path, limit=MAX_NOTES_CHARS)
        return text.strip() or None if text is not None else None

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        notes = self._read()
        if not notes:
            return AIContext()
        return AIContext(instructions=f"<private_notes>\n{notes}\n</private_notes>")
