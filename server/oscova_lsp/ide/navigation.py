"""Go to definition, references, rename (agent ids), document links."""

from __future__ import annotations

import os
import re

from oscova_runtime.definition import AGENT_ID_PATTERN

from ..analysis.diagnostics import TextEdit
from ..analysis.files import DefinitionFile, HostFile, ParsedFile
from ..analysis.text import Position, Range
from ..analysis.workspace import Workspace
from .locate import Target, target_at
from .model import DocumentLink, Location, RenameError
from .queries import (
    agent_occurrences,
    definition_location,
    reference_occurrences,
    variable_declarations,
    variable_occurrences,
)

_FILE_START = Range.of(0, 0, 0, 0)
_AGENT_ID_RE = re.compile(AGENT_ID_PATTERN)


def definition(ws: Workspace, parsed: ParsedFile, pos: Position) -> list[Location]:
    target = target_at(ws, parsed, pos)
    if target is None:
        return []
    kind = target.kind
    if kind == "agent":
        found = definition_location(ws, target.value)
        return [found] if found else []
    if kind == "template":
        return [Location(target.value, _FILE_START)] if _exists(ws, target.value) else []
    if kind == "variable":
        return variable_declarations(ws, target.value)
    host = ws.host_file
    if host is None or host.doc is None:
        return []
    section = {"provider": "providers", "model": "models", "tool": "tools"}.get(kind)
    if section is not None:
        rng = host.doc.key_range((*host.prefix, section, target.value))
        return [Location(host.path, rng)] if rng is not None else []
    return []


def _exists(ws: Workspace, path: str) -> bool:
    """A template to offer or link: inside the workspace root (after symlinks) and there."""
    return ws.inside(path) and (path in ws.files or os.path.isfile(path))


def references(ws: Workspace, parsed: ParsedFile, pos: Position, include_declaration: bool = True) -> list[Location]:
    target = target_at(ws, parsed, pos)
    if target is None:
        return []
    if target.kind == "agent":
        return [Location(o.path, o.range) for o in agent_occurrences(ws, target.value)
                if include_declaration or not o.declaration]
    if target.kind == "variable":
        return variable_references(ws, target.value, include_declaration)
    return []


def variable_references(ws: Workspace, name: str, include_declaration: bool = True) -> list[Location]:
    out = [Location(path, occ.range) for path in sorted(ws.files)
           for occ in variable_occurrences(ws.files[path]) if occ.name == name]
    if include_declaration:
        out = variable_declarations(ws, name) + out
    return out


def prepare_rename(ws: Workspace, parsed: ParsedFile, pos: Position) -> Target | None:
    """The agent id under the cursor, if it can be renamed."""
    target = target_at(ws, parsed, pos)
    if target is None or target.kind != "agent":
        return None
    if target.value not in ws.defs_by_id:
        return None
    return target


def rename(ws: Workspace, parsed: ParsedFile, pos: Position, new_name: str) -> list[TextEdit]:
    """One edit per `id:` and `agent_tools` item across the workspace."""
    target = prepare_rename(ws, parsed, pos)
    if target is None:
        raise RenameError("only agent ids can be renamed: put the cursor on an `id:` value or an `agent_tools` item")
    if not _AGENT_ID_RE.match(new_name):
        raise RenameError(f"`{new_name}` is not a valid agent id (letters, digits, `_`, `.`, `-`; not first `_.-`)")
    if new_name != target.value and new_name in ws.defs_by_id:
        raise RenameError(f"an agent with the id `{new_name}` already exists")
    return [TextEdit(o.path, o.range, new_name) for o in agent_occurrences(ws, target.value)]


def document_links(ws: Workspace, parsed: ParsedFile) -> list[DocumentLink]:
    out: list[DocumentLink] = []
    for ref in reference_occurrences(ws, parsed):
        if _exists(ws, ref.target):
            inner = Range(Position(ref.range.start.line, ref.range.start.character + 1),
                          Position(ref.range.end.line, max(ref.range.end.character - 1, ref.range.start.character + 1)))
            out.append(DocumentLink(inner, ref.target, f"{ref.reference.kind} {ref.reference.path}"))
    if isinstance(parsed, DefinitionFile) and parsed.doc is not None and parsed.definition is not None:
        value = parsed.definition.instructions_file
        if value:
            target = target_at(ws, parsed, _start_of(parsed, ("instructions_file",)))
            if target is not None and target.kind == "template" and _exists(ws, target.value):
                out.append(DocumentLink(target.range, target.value, "instructions file"))
    if isinstance(parsed, HostFile) and parsed.doc is not None and parsed.config is not None:
        config = parsed.config
        keys: list[tuple[str, ...]] = [("environment", "template"), ("memory", "system_prompt")]
        keys += [("providers", name, "template") for name in config.providers]
        for key in keys:
            rng = parsed.doc.value_range((*parsed.prefix, *key))
            if rng is None:
                continue
            target = target_at(ws, parsed, rng.start)
            if target is not None and target.kind == "template" and _exists(ws, target.value):
                out.append(DocumentLink(target.range, target.value, "template"))
    return out


def _start_of(parsed: DefinitionFile, path: tuple[str, ...]) -> Position:
    rng = parsed.doc.value_range(path) if parsed.doc is not None else None
    if rng is None:
        return Position(0, 0)
    return Position(rng.start.line, rng.start.character + 1)
