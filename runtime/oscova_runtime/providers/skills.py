"""SkillsContextProvider: describes the assigned skills and offers `load_skill`.

A skill is `<skills root>/<name>/SKILL.md`, with optional YAML front matter holding `description`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..context import AIContext, AIContextProvider, InvokingContext
from ..filecache import read_text
from ..front_matter import split_front_matter
from ..paths import FileRefused
from ..tools import function_from_callable


class SkillsContextProvider(AIContextProvider):
    """`boundary`: the folder skill files are read inside, after symlinks (default: the skills root); a skill
    whose name or file leads out, or whose file is a FIFO or a device, is listed with the reason, not read."""

    def __init__(self, skills_root: str, skills: Sequence[str], *, boundary: str | None = None) -> None:
        self.skills_root = skills_root
        self.skills = tuple(skills)
        self.boundary = boundary if boundary is not None else skills_root
        self.load_tool = function_from_callable(self.load_skill, name="load_skill")

    def _read(self, name: str) -> tuple[dict, str] | None:
        """(front matter, body), None when not assigned or missing; FileRefused when not read."""
        if name not in self.skills:
            return None
        return read_text(os.path.join(self.skills_root, name, "SKILL.md"), split_front_matter, root=self.boundary)

    async def load_skill(self, name: str) -> str:
        """Loads the full instructions of one assigned skill by name."""
        try:
            parsed = self._read(name)
        except FileRefused as refused:
            return f"The skill {name!r} was not read: {refused}"
        if parsed is None:
            return f"No assigned skill is named {name!r}."
        return parsed[1].strip()

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        lines = []
        for name in self.skills:
            try:
                parsed = self._read(name)
            except FileRefused as refused:
                lines.append(f"- {name}: (not read: {refused})")
                continue
            if parsed is None:
                continue
            meta = parsed[0]
            description = str(meta.get("description") or "").strip()
            lines.append(f"- {name}" + (f": {description}" if description else ""))
        if not lines:
            return AIContext()
        instructions = "## Skills\nLoad a skill with `load_skill` before using it:\n" + "\n".join(lines)
        return AIContext(instructions=instructions, tools=[self.load_tool])
