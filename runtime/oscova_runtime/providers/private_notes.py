"""PrivateNotesContextProvider: the user's private notes for one agent (requested, non-shared agents)."""

from __future__ import annotations

import os

from ..context import AIContext, AIContextProvider, InvokingContext
from ..filecache import read_text
from ..paths import FileRefused, refusal_note

MAX_NOTES_CHARS = 8000


class PrivateNotesContextProvider(AIContextProvider):
    """Reads `<notes root>/<user id>/<agent id>.md`; missing notes contribute nothing. `boundary`: the folder the
    read stays inside after symlinks (default: the notes root); a notes file that is a FIFO, a device or a link
    leading out is not read, and the reason stands in its place."""

    def __init__(self, notes_root: str, user_id: str | None, agent_id: str, *, boundary: str | None = None) -> None:
        self.path = os.path.join(notes_root, user_id, f"{agent_id}.md") if user_id else None
        self.boundary = boundary if boundary is not None else notes_root

    def _read(self) -> str | None:
        if self.path is None:
            return None
        try:
            text = read_text(self.path, limit=MAX_NOTES_CHARS, root=self.boundary)
        except FileRefused as refused:
            return refusal_note(os.path.basename(self.path), refused)
        return text.strip() or None if text is not None else None

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        notes = self._read()
        if not notes:
            return AIContext()
        return AIContext(instructions=f"<private_notes>\n{notes}\n</private_notes>")
