"""PrivateNotesContextProvider: the user's private notes for one agent (requested, non-shared agents)."""

from __future__ import annotations

import os

from ..context import AIContext, AIContextProvider, InvokingContext, block
from ..filecache import read_text_async
from ..notices import notice
from ..paths import FileRefused, is_inside

MAX_NOTES_CHARS = 8000
LEFT_OUT = "The private notes were left out of the prompt: {reason}"


class PrivateNotesContextProvider(AIContextProvider):
    """Reads `<notes root>/<user id>/<agent id>.md`. Missing or unauthorized notes contribute nothing (seed).

    Unauthorized: a notes folder that leads out of `boundary` (it, or a folder above it, is a link out of the
    workspace), a notes file that is a FIFO or a device, a link leading out of the user's own notes folder
    (out of the workspace, or to another user's notes), or a user id that names another folder. Such notes
    are not read; the reason goes to the run's listener (`notices`), never into the prompt, and the run goes
    on. `boundary`: the folder the read also stays inside after symlinks (the configured host passes the
    workspace root). The content is read in a worker thread (`filecache.read_text_async`), so a cancelled run
    stops waiting at once.
    """

    def __init__(self, notes_root: str, user_id: str | None, agent_id: str, *, boundary: str | None = None) -> None:
        self.notes_root = notes_root
        self.user_folder = os.path.join(notes_root, user_id) if user_id else None
        self.path = os.path.join(self.user_folder, f"{agent_id}.md") if self.user_folder else None
        self.boundary = boundary if boundary is not None else notes_root
        self._user_id_refusal = _user_id_refusal(user_id)

    def _check(self) -> None:
        """FileRefused when the notes may not be read as this user's (see the class)."""
        if not is_inside(self.notes_root, self.boundary):  # checked on every run: the folder may become a link
            shown = os.path.relpath(self.notes_root, self.boundary) if is_inside(
                self.notes_root, self.boundary, real=False) else self.notes_root
            raise FileRefused(f"the notes folder `{shown}` leads outside the workspace root")
        if self._user_id_refusal is not None:
            raise FileRefused(self._user_id_refusal)
        own_folder = os.path.join(os.path.realpath(self.notes_root), os.path.basename(self.user_folder or ""))
        if self.user_folder and os.path.lexists(self.user_folder) and os.path.realpath(self.user_folder) != own_folder:
            raise FileRefused("the user's notes folder is a link to another folder")
        if self.path and os.path.lexists(self.path) and not is_inside(self.path, own_folder):
            raise FileRefused("it is a symlink that leads outside the user's own notes folder")

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        if self.path is None:
            return AIContext()
        try:
            self._check()
            text = await read_text_async(self.path, limit=MAX_NOTES_CHARS, root=self.boundary)
        except FileRefused as refused:
            notice(self, LEFT_OUT.format(reason=refused))
            return AIContext()
        notes = text.strip() if text else ""
        if not notes:
            return AIContext()
        return AIContext(instructions=block(f"<private_notes>\n{notes}\n</private_notes>"))


def _user_id_refusal(user_id: str | None) -> str | None:
    """Why a user id cannot name a notes folder of its own (it is a path reaching another folder), or None."""
    if not user_id:
        return None
    if user_id in (".", "..") or "/" in user_id or (os.altsep and os.altsep in user_id) or os.sep in user_id:
        return f"the user id {user_id!r} is a path, not a name, so it could reach another user's notes"
    return None
