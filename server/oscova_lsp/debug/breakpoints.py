"""Breakpoints of a debug session: function breakpoints by step, exception filters, source breakpoints.

Function breakpoints name a step: `model` (before each model request), `tool` / `tool:<name>` (before a tool
call), `provider:<type>` (after that provider's contribution), `agent:<id>` (entering that agent, called as a
tool). Exception filters: `failed` (a model call or tool call raised) and `denied` (governance refused a tool
call). Source breakpoints: a definition's `context_providers` entry (after that provider), or a line of
instructions (a template's, or a definition's inline ones): before each model call whose instructions contain
the line's text (its words outside `{{ }}` and `{% %}` tags, in order).
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

EXCEPTION_FILTERS = (
    {"filter": "failed", "label": "Failed calls", "description": "A model call or a tool call raised",
     "default": False},
    {"filter": "denied", "label": "Denied tool calls", "description": "The host's policy refused a tool call",
     "default": False},
)
FUNCTION_KINDS = ("model", "tool", "provider", "agent")
TAG = re.compile(r"{{.*?}}|{%.*?%}|{#.*?#}")


@dataclass(frozen=True, slots=True)
class Step:
    """A step of a run, as breakpoints see it."""

    kind: str
    """`provider`, `model` or `tool`."""
    name: str | None
    """The provider type, the tool name; None for a model call."""
    agent: str
    """The agent whose step it is."""
    entering: str | None = None
    """A tool call of an agent called as a tool: that agent's id."""
    instructions: str | None = None
    """A model call: the instructions it sends."""
    path: str | None = None
    """The agent's definition file."""
    line: int | None = None
    """A provider listed in `context_providers`: its entry's line (1-based)."""


@dataclass(frozen=True, slots=True)
class FunctionBreakpoint:
    id: int
    kind: str
    name: str | None

    def matches(self, step: Step) -> bool:
        if self.kind == "agent":
            return step.entering is not None and step.entering == self.name
        return step.kind == self.kind and (self.name is None or self.name == step.name)


def parse_function(text: str) -> tuple[str, str | None] | str:
    """(kind, name) of a function breakpoint, or the sentence saying why `text` is not one."""
    kind, colon, name = text.strip().partition(":")
    kind, name = kind.strip(), name.strip()
    if kind not in FUNCTION_KINDS:
        return (f"{text.strip()!r} is not a step: use model, tool, tool:<name>, provider:<type> or agent:<id>")
    if kind == "model" and colon:
        return "model takes no name: it stops before every model request"
    if kind in ("provider", "agent") and not name:
        return f"{kind} needs a name: {kind}:<{'type' if kind == 'provider' else 'id'}>"
    if colon and not name:
        return f"{kind}: needs a name after the colon"
    return kind, name or None


@dataclass(frozen=True, slots=True)
class SourceBreakpoint:
    id: int
    path: str
    line: int
    agent_line: bool
    """A `context_providers` entry of the definition at `path` (else an instructions line)."""
    fragments: tuple[str, ...] = ()
    """An instructions line: its text outside template tags, each piece found in order."""

    def matches(self, step: Step) -> bool:
        if self.agent_line:
            return step.kind == "provider" and step.path == self.path and step.line == self.line
        if step.kind != "model" or step.instructions is None:
            return False
        if self.path.endswith(".agent.yaml") and step.path != self.path:
            return False  # inline instructions are that agent's own
        at = 0
        for piece in self.fragments:
            found = step.instructions.find(piece, at)
            if found < 0:
                return False
            at = found + len(piece)
        return True


def line_fragments(text: str) -> tuple[str, ...]:
    return tuple(piece.strip() for piece in TAG.split(text) if piece.strip())


@dataclass(slots=True)
class Breakpoints:
    functions: list[FunctionBreakpoint] = field(default_factory=list)
    launched: list[FunctionBreakpoint] = field(default_factory=list)
    """Function breakpoints the launch configuration names (`functionBreakpoints`), for clients without a UI
    for them (nvim-dap, dape); `setFunctionBreakpoints` leaves them."""
    sources: dict[str, list[SourceBreakpoint]] = field(default_factory=dict)
    exceptions: set[str] = field(default_factory=set)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def _next_id(self) -> int:
        return next(self._ids)

    def set_functions(self, names: list[Any], *, launch: bool = False) -> list[dict[str, Any]]:
        """Replaces the function breakpoints (`launch`: those of the launch configuration, kept apart); the DAP
        `breakpoints` answer, one per name, in order."""
        if launch:
            self.functions, kept = [], self.functions
            answers = self.set_functions(names)
            self.launched, self.functions = self.functions, kept
            return answers
        self.functions = []
        answers = []
        for name in names:
            parsed = parse_function(name) if isinstance(name, str) else "a function breakpoint's name is text"
            if isinstance(parsed, str):
                answers.append({"verified": False, "message": parsed})
                continue
            breakpoint = FunctionBreakpoint(self._next_id(), *parsed)
            self.functions.append(breakpoint)
            answers.append({"id": breakpoint.id, "verified": True})
        return answers

    def set_exceptions(self, filters: list[Any]) -> list[dict[str, Any]]:
        known = {f["filter"] for f in EXCEPTION_FILTERS}
        self.exceptions = {f for f in filters if isinstance(f, str) and f in known}
        return [{"verified": isinstance(f, str) and f in known} | ({} if isinstance(f, str) and f in known else
                {"message": f"{f!r} is not a filter: failed or denied"}) for f in filters]

    def set_sources(self, path: str, lines: list[int], place: Callable[[str, int], SourceBreakpoint | str],
                    ) -> list[dict[str, Any]]:
        """Replaces the breakpoints of one file; `place` makes one (or says why a line takes none)."""
        path = os.path.abspath(path)
        kept: list[SourceBreakpoint] = []
        answers: list[dict[str, Any]] = []
        for line in lines:
            placed = place(path, line)
            if isinstance(placed, str):
                answers.append({"verified": False, "line": line, "message": placed})
                continue
            placed = SourceBreakpoint(self._next_id(), placed.path, placed.line, placed.agent_line, placed.fragments)
            kept.append(placed)
            answers.append({"id": placed.id, "verified": True, "line": line})
        self.sources[path] = kept
        return answers

    def hits(self, step: Step) -> list[int]:
        found = [b.id for b in (*self.functions, *self.launched) if b.matches(step)]
        return found + [b.id for group in self.sources.values() for b in group if b.matches(step)]

    def is_source(self, ids: list[int]) -> bool:
        function_ids = {b.id for b in (*self.functions, *self.launched)}
        return all(i not in function_ids for i in ids)

    def catches(self, name: str) -> bool:
        return name in self.exceptions
