"""Where a source breakpoint can go: a definition's `context_providers` entry, or a line of instructions.

The file is read through the file gateway (a regular file, inside the workspace when the launch named one,
at most the text limit); a line that takes no breakpoint gets a sentence saying where one can go.
"""

from __future__ import annotations

import os

from oscova_runtime.paths import FileRefused, read_text

from ..analysis.yaml_source import parse_yaml
from .breakpoints import SourceBreakpoint, line_fragments

NOT_HERE_DEFINITION = ("A breakpoint in a definition goes on a `context_providers` entry (after that provider) "
                       "or on a line of its inline `instructions` (before the model call that sends it)")


def place_breakpoint(path: str, line: int, root: str | None) -> SourceBreakpoint | str:
    """The breakpoint at `line` (1-based) of `path`, or why that line takes none."""
    try:
        text = read_text(path, root=root)
    except FileRefused as refused:
        return f"{os.path.basename(path)}: {refused}"
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return f"{os.path.basename(path)} has no line {line}"
    if path.endswith(".agent.yaml"):
        return _in_definition(path, line, text, lines)
    return _instructions_line(path, line, lines[line - 1], agent_line=False)


def _in_definition(path: str, line: int, text: str, lines: list[str]) -> SourceBreakpoint | str:
    doc = parse_yaml(text)
    providers = doc.value_range(("context_providers",))
    if providers is not None:
        index = 0
        while (entry := doc.value_range(("context_providers", index))) is not None:
            if entry.start.line + 1 <= line <= entry.end.line + (0 if entry.end.character == 0 else 1):
                return SourceBreakpoint(0, path, entry.start.line + 1, agent_line=True)
            index += 1
    instructions = doc.value_range(("instructions",))
    if instructions is not None and instructions.start.line + 1 <= line <= instructions.end.line + 1:
        placed = _instructions_line(path, line, lines[line - 1], agent_line=False)
        if isinstance(placed, SourceBreakpoint) or line != instructions.start.line + 1:
            return placed
    return NOT_HERE_DEFINITION


def _instructions_line(path: str, line: int, text: str, *, agent_line: bool) -> SourceBreakpoint | str:
    if text.strip().startswith("instructions:"):
        text = text.split(":", 1)[1].lstrip(" |>-")
    fragments = line_fragments(text)
    if not fragments:
        return ("This line has no text of its own (only template tags, or nothing): a breakpoint goes on a line "
                "whose words the instructions show")
    return SourceBreakpoint(0, path, line, agent_line, fragments)
