"""Parsing one file into plain facts: a pure function of its path and text.

Everything here is per file and independent of the rest of the workspace, so it can be cached by
content, run in worker processes, and redone for one file when it changes.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from oscova_runtime.definition import AgentDefinition
from oscova_runtime.host_config import HostConfig
from oscova_runtime.paths import MAX_TEXT_BYTES, FileRefused, decode_text, too_large
from pydantic import BaseModel, ValidationError

from .jinja_source import SyntaxProblem, TemplateFacts, TemplateReference, VariableUse, analyze_template
from .suggest import did_you_mean
from .text import LineIndex, Position, Range
from .toml_source import TomlDocument, parse_toml
from .yaml_source import Path, Span, YamlDocument, YamlProblem, parse_yaml, yaml_suppressions

MAX_FILE_BYTES = MAX_TEXT_BYTES
TOO_LARGE = "the file is larger than 1 MB"
"""How every too-large reason begins (`paths.too_large`): a notice, not a finding."""

DEFINITION_SUFFIXES = (".agent.yaml", ".agent.yml")
TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2")
HOST_FILENAMES = ("oscova.toml", "pyproject.toml")


class FileKind(Enum):
    DEFINITION = "definition"
    TEMPLATE = "template"
    HOST = "host"


def file_kind(path: str) -> FileKind | None:
    name = os.path.basename(path)
    if name.endswith(DEFINITION_SUFFIXES):
        return FileKind.DEFINITION
    if name.endswith(TEMPLATE_SUFFIXES):
        return FileKind.TEMPLATE
    if name in HOST_FILENAMES:
        return FileKind.HOST
    return None


@dataclass(frozen=True, slots=True)
class Problem:
    """A finding of one file before any cross-file check; converted into a Diagnostic later."""

    code: str
    range: Range
    message: str
    related: tuple[tuple[Range, str], ...] = ()
    fix: tuple[str, tuple[tuple[Range, str], ...]] | None = None
    """(title, ((range, new text), ...)) within the same file."""


# --------------------------------------------------------------------------------------------------
# Inline templates: positions inside a YAML scalar mapped back to the file


@dataclass(frozen=True, slots=True)
class ScalarMap:
    """Maps (line, column) in a scalar's value to the file. Exact for literal blocks and one-line scalars."""

    kind: str  # "block" | "line" | "search"
    first_line: int
    column: int
    raw_start: int
    raw_end: int

    def position(self, lines: LineIndex, text: str, line: int, col: int, name: str, nth: int) -> Position:
        if self.kind == "block":
            return lines.position_of_char(self.first_line + line, self.column + col)
        if self.kind == "line" and line == 0:
            return lines.position_of_char(self.first_line, self.column + col)
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        matches = list(pattern.finditer(text, self.raw_start, self.raw_end))
        if matches:
            return lines.position(matches[min(nth, len(matches) - 1)].start())
        return lines.position(self.raw_start)


def scalar_map(text: str, lines: LineIndex, span: Span) -> ScalarMap:
    start_pos = lines.position(span.start_offset)
    if span.style in ("|",):
        header_line = start_pos.line
        first_line = header_line + 1
        column = 0
        for n in range(first_line, lines.line_count):
            line_text = lines.line_text(n)
            if line_text.strip():
                column = len(line_text) - len(line_text.lstrip(" "))
                break
        return ScalarMap("block", first_line, column, span.start_offset, span.end_offset)
    end_pos = lines.position(span.end_offset)
    if start_pos.line == end_pos.line:
        # Column in characters: the raw offset minus the line's start offset.
        col = span.start_offset - lines.line_start(start_pos.line) + (1 if span.style in ("'", '"') else 0)
        return ScalarMap("line", start_pos.line, col, span.start_offset, span.end_offset)
    return ScalarMap("search", start_pos.line, 0, span.start_offset, span.end_offset)


@dataclass
class InlineTemplate:
    facts: TemplateFacts
    map: ScalarMap


# --------------------------------------------------------------------------------------------------
# Parsed files


@dataclass
class ParsedFile:
    path: str
    kind: FileKind
    text: str
    lines: LineIndex
    problems: list[Problem] = field(default_factory=list)
    skipped: str | None = None
    """Why the file was not analysed (too large, not text), or None."""
    suppressions: dict[int, frozenset[str] | None] = field(default_factory=dict)


@dataclass
class DefinitionFile(ParsedFile):
    doc: YamlDocument | None = None
    definition: AgentDefinition | None = None
    raw_id: str | None = None
    """The id as written, even when the rest of the definition is invalid."""
    inline: InlineTemplate | None = None
    null_entries: list[int] = field(default_factory=list)
    borrowed: frozenset[str] = frozenset()
    """Keys other files read from this file's last good version while it is broken ("*": all of them)."""


@dataclass
class TemplateFile(ParsedFile):
    facts: TemplateFacts | None = None


@dataclass
class HostFile(ParsedFile):
    doc: TomlDocument | None = None
    config: HostConfig | None = None
    prefix: Path = ()
    """("tool", "oscova") in a pyproject.toml."""
    present: bool = True
    """False for a pyproject.toml without `[tool.oscova]`."""
    borrowed: bool = False
    """Whether `config` is the last good one, standing in while this file does not parse."""


def decode(data: bytes) -> tuple[str | None, str | None]:
    """(text, None) or (None, why it cannot be read): UTF-8 with or without a BOM, UTF-16/32 with one."""
    if len(data) > MAX_FILE_BYTES:
        return None, too_large(len(data), MAX_FILE_BYTES)
    try:
        return decode_text(data), None
    except FileRefused as refused:
        return None, str(refused)


def parse_file(path: str, text: str | None, skipped: str | None = None) -> ParsedFile:
    """The file's facts; never raises: a parser failing on hostile input leaves the file with an OSC001."""
    kind = file_kind(path)
    if kind is None:  # a caller's mistake, not the file's: only discovered or opened workspace files come here
        raise ValueError(f"not an agent definition, template or host configuration: {path}")
    if text is None:
        return _unread(path, kind, skipped)
    try:
        return _parse_text(path, kind, text)
    except Exception as error:  # noqa: BLE001 - the last resort: one file's diagnostic, never a traceback
        why = "it nests too deeply" if isinstance(error, RecursionError) else f"{type(error).__name__}: {error}"
        return _unread(path, kind, f"the file could not be analysed ({why}) and was skipped")


def _unread(path: str, kind: FileKind, skipped: str | None) -> ParsedFile:
    cls = {FileKind.DEFINITION: DefinitionFile, FileKind.TEMPLATE: TemplateFile, FileKind.HOST: HostFile}[kind]
    parsed = cls(path, kind, "", LineIndex(""), skipped=skipped)
    if not (skipped or "").startswith(TOO_LARGE):
        # Too large is a notice, not a finding; unreadable text is OSC001.
        parsed.problems.append(Problem("OSC001", Range.of(0, 0, 0, 0), skipped or "the file cannot be read"))
    return parsed


def _parse_text(path: str, kind: FileKind, text: str) -> ParsedFile:
    if len(text) > MAX_FILE_BYTES:
        return _unread(path, kind, too_large(len(text), MAX_FILE_BYTES, "characters"))
    if kind is FileKind.DEFINITION:
        return parse_definition(path, text)
    if kind is FileKind.TEMPLATE:
        return parse_template(path, text)
    return parse_host(path, text)


# --------------------------------------------------------------------------------------------------
# Definitions

_DEFINITION_KEYS = list(AgentDefinition.model_fields)


def parse_definition(path: str, text: str, doc: YamlDocument | None = None,
                     inline: TemplateFacts | None = None) -> DefinitionFile:
    """`doc` and the `inline` instructions' facts may come precomputed (from the facts cache)."""
    doc = doc if doc is not None else parse_yaml(text)
    parsed = DefinitionFile(path, FileKind.DEFINITION, text, doc.lines, doc=doc)
    parsed.suppressions = yaml_suppressions(text)
    parsed.problems.extend(_yaml_problems(doc.problems))
    if not doc.ok and not doc.recovered:
        return parsed
    data = doc.value
    if data is None:
        data = {}
    if not isinstance(data, dict):
        if doc.ok:
            parsed.problems.append(Problem("OSC002", doc.best_range(()), "an agent definition must be a YAML mapping"))
        return parsed
    data = dict(data)
    reported = len(parsed.problems)
    if doc.recovered:  # the keys of blanked lines read as null or absent: not findings while the file is broken
        data = {key: value for key, value in data.items() if value is not None}
    if isinstance(data.get("id"), str):
        parsed.raw_id = data["id"]
    providers = data.get("context_providers")
    if isinstance(providers, list):
        kept = []
        for index, entry in enumerate(providers):
            if entry is None:
                parsed.null_entries.append(index)
                parsed.problems.append(_null_entry_problem(doc, index))
            else:
                kept.append(entry)
        data["context_providers"] = kept
    parsed.definition = _validate(AgentDefinition, data, doc, parsed.problems, _DEFINITION_KEYS,
                                  index_map=_index_map(len(providers) if isinstance(providers, list) else 0,
                                                        parsed.null_entries))
    if doc.recovered:
        parsed.problems[reported:] = [p for p in parsed.problems[reported:]
                                      if not p.message.startswith("missing required key")]
    if parsed.definition is not None and parsed.definition.instructions:
        span = doc.span(("instructions",))
        if span is not None:
            facts = inline if inline is not None else analyze_template(parsed.definition.instructions)
            parsed.inline = InlineTemplate(facts, scalar_map(text, doc.lines, span))
    return parsed


def _index_map(length: int, null_entries: list[int]) -> dict[int, int]:
    """Index in the list without nulls -> index in the file's list."""
    nulls = set(null_entries)
    return dict(enumerate(i for i in range(length) if i not in nulls))


NULL_ENTRY = "null entry in `context_providers`: the agent fails when it is built"


def _null_entry_problem(doc: YamlDocument, index: int) -> Problem:
    span = doc.span(("context_providers", index))
    if span is None:  # the index comes from this document's own list; without its span, no fix
        return Problem("OSC010", doc.best_range(("context_providers",)), NULL_ENTRY)
    text = doc.text
    dash = text.rfind("-", 0, span.start_offset + 1)
    if span.start_offset == span.end_offset and dash != -1:
        # A bare `-`: the item is the dash itself.
        rng = doc.lines.range(dash, dash + 1)
    else:
        rng = span.value
    line = rng.start.line
    line_text = doc.lines.line_text(line)
    stripped = line_text.strip()
    alone_on_its_line = stripped.startswith("-") and stripped.lstrip("- ").split("#")[0].strip() in (
        "", "null", "~", "Null", "NULL")
    # A block item alone on its line goes with its line; a flow item (`[a, null]`) goes by itself.
    delete = Range(Position(line, 0), Position(line + 1, 0)) if alone_on_its_line else rng
    return Problem("OSC010", rng, NULL_ENTRY, fix=("Remove the null entry", ((delete, ""),)))


def _yaml_problems(problems: list[YamlProblem]) -> list[Problem]:
    out = []
    for p in problems:
        related = ((p.related, "first defined here"),) if p.related else ()
        out.append(Problem(p.code, p.range, p.message, related))
    return out


def _validate(model: type[BaseModel], data: dict[str, Any], doc: YamlDocument | TomlDocument,
              problems: list[Problem], known_keys: list[str], prefix: Path = (),
              index_map: dict[int, int] | None = None) -> Any:
    """Validates `data`; reports OSC002/OSC003; retries without the faulty keys so the rest is checked."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    reported: set[Path] = set()
    drop: list[tuple[Any, ...]] = []
    for error in errors:
        loc = tuple(error["loc"])
        path = _document_path(loc, doc, prefix, index_map or {})
        drop.append(loc)
        if path in reported:
            continue
        reported.add(path)
        if error["type"] == "extra_forbidden":
            key = str(loc[-1])
            siblings = _known_keys_at(model, loc[:-1]) or known_keys
            close = did_you_mean(key, siblings)
            rng = doc.key_range(path) or doc.best_range(path)
            fix = (f"Rename to `{close.name}`", ((rng, close.name),)) if close else None
            problems.append(Problem("OSC003", rng, f"unknown key `{key}`" + (close.words if close else ""), fix=fix))
        else:
            rng = _error_range(error, path, doc, prefix)
            problems.append(Problem("OSC002", rng, _error_message(error, loc)))
    if any(loc[:1] == ("id",) for loc in drop) and model is AgentDefinition:
        return None
    return _validate_without(model, data, drop)


def _validate_without(model: type[BaseModel], data: dict[str, Any], drop: list[tuple[Any, ...]]) -> Any:
    """Validates again with each faulty value removed, so one bad key does not hide the rest of the file."""
    lenient: Any = copy.deepcopy(data)
    for _ in range(8):
        for loc in drop:
            _remove_path(lenient, loc)
        try:
            return model.model_validate(lenient)
        except ValidationError as exc:
            drop = [tuple(e["loc"]) for e in exc.errors(include_url=False)]
        except (TypeError, ValueError):
            return None
    return None


def _remove_path(data: Any, loc: tuple[Any, ...]) -> None:
    """Removes the value at a pydantic location (union tags skipped); a model-level error removes nothing."""
    parent = data
    keys = [part for part in loc if isinstance(part, int) or not _is_union_tag(part)]
    if not keys:
        # The one model-level rule: `instructions` with `instructions_file`; keep the inline text.
        if isinstance(data, dict):
            data.pop("instructions_file", None)
        return
    for part in keys[:-1]:
        try:
            parent = parent[part]
        except (KeyError, IndexError, TypeError):
            return
    last = keys[-1]
    if isinstance(parent, dict):
        parent.pop(last, None)
    elif isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
        parent.pop(last)


def _is_union_tag(part: Any) -> bool:
    return isinstance(part, str) and (part in ("str", "ProviderEntry", "bool", "CompactionSettings") or "[" in part)


def _known_keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    current: Any = model
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel) and isinstance(part, str):
            field_info = current.model_fields.get(part)
            if field_info is None:
                return []
            annotation = field_info.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                current = annotation
                continue
            args = getattr(annotation, "__args__", ())
            models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
            current = models[-1] if models else None
        elif isinstance(part, str) and current is not None and not isinstance(current, type):
            return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or name for name, f in current.model_fields.items()]
    return []


def _document_path(loc: tuple[Any, ...], doc: YamlDocument | TomlDocument, prefix: Path,
                   index_map: dict[int, int]) -> Path:
    """Pydantic's error location as a document path: union tags dropped, list indices remapped."""
    path: list[str | int] = list(prefix)
    for i, part in enumerate(loc):
        if isinstance(part, int):
            if i == 1 and loc[0] == "context_providers":
                part = index_map.get(part, part)
            path.append(part)
        elif (*path, part) in doc.spans:
            path.append(part)
        elif _is_union_tag(part):
            continue
        else:
            path.append(part)
    return tuple(path)


def _error_range(error: Any, path: Path, doc: YamlDocument | TomlDocument, prefix: Path) -> Range:
    if error["type"] == "missing":
        parent = path[:-1]
        if len(parent) > len(prefix):
            return doc.key_range(parent) or doc.best_range(parent)
        first = next((p for p in doc.spans if len(p) == len(prefix) + 1 and p[: len(prefix)] == prefix), None)
        if first is not None:
            return doc.key_range(first) or doc.best_range(first)
        return doc.best_range(prefix)
    if not error["loc"]:
        # A model-level rule: point at `instructions_file`, which is what conflicts.
        return doc.key_range((*prefix, "instructions_file")) or doc.best_range(prefix)
    return doc.best_range(path)


def _error_message(error: Any, loc: tuple[Any, ...]) -> str:
    where = ".".join(str(p) for p in loc if not (isinstance(p, str) and (p in ("str", "ProviderEntry") or "[" in p)))
    msg = str(error["msg"])
    msg = msg.removeprefix("Value error, ")
    if error["type"] == "missing":
        return f"missing required key `{loc[-1]}`"
    if "context_providers" in loc and error["type"] in ("string_type", "model_type", "model_attributes_type"):
        return f"`{where}`: a provider entry is a type name or a mapping with `type`"
    if where:
        return f"`{where}`: {msg[0].lower() + msg[1:] if msg else msg}"
    return msg


# --------------------------------------------------------------------------------------------------
# Templates


def parse_template(path: str, text: str, facts: TemplateFacts | None = None) -> TemplateFile:
    """`facts` may come precomputed (from a worker process)."""
    facts = facts if facts is not None else analyze_template(text)
    parsed = TemplateFile(path, FileKind.TEMPLATE, text, LineIndex(text), facts=facts)
    parsed.suppressions = facts.suppressions
    for error in facts.syntax_errors:
        parsed.problems.append(Problem("OSC100", syntax_error_range(parsed.lines, error),
                                       f"template syntax error: {error.message}"))
    return parsed


def syntax_error_range(lines: LineIndex, error: SyntaxProblem) -> Range:
    """The failing construct's range on its line (the whole line when Jinja gave no construct)."""
    line = min(error.line, lines.line_count - 1)
    if error.end_column is None or error.end_column <= error.column:
        return lines.line_range(line)
    return Range(lines.position_of_char(line, error.column), lines.position_of_char(line, error.end_column))


# --------------------------------------------------------------------------------------------------
# Host configuration

_HOST_KEYS = list(HostConfig.model_fields)


def parse_host(path: str, text: str) -> HostFile:
    doc = parse_toml(text)
    is_pyproject = os.path.basename(path) == "pyproject.toml"
    prefix: Path = ("tool", "oscova") if is_pyproject else ()
    parsed = HostFile(path, FileKind.HOST, text, doc.lines, doc=doc, prefix=prefix)
    parsed.suppressions = yaml_suppressions(text)
    parsed.problems.extend(_yaml_problems(doc.problems))
    if not doc.ok and not doc.recovered:
        parsed.present = not is_pyproject or "[tool.oscova" in text
        return parsed
    data: Any = doc.value
    if is_pyproject:
        data = data.get("tool", {}).get("oscova")
        if data is None:
            parsed.present = not doc.ok and "[tool.oscova" in text
            return parsed
    if doc.recovered:  # what the lines around the broken ones say; not findings while the file is broken
        parsed.config = _lenient_host(data)
        return parsed
    parsed.config = _validate(HostConfig, data, doc, parsed.problems, _HOST_KEYS, prefix) or _lenient_host(data)
    return parsed


def _lenient_host(data: Any) -> HostConfig:
    """The sections that validate, defaults for the rest, so a typo in one table keeps the others."""
    if not isinstance(data, dict):
        return HostConfig()
    kept = {}
    for key, value in data.items():
        try:
            HostConfig.model_validate({key: value})
        except ValidationError:
            continue
        kept[key] = value
    try:
        return HostConfig.model_validate(kept)
    except ValidationError:  # pragma: no cover - each section validated alone
        return HostConfig()


# --------------------------------------------------------------------------------------------------
# Where a template's facts sit in its file: one mapping for the checker and the editor features alike


def template_facts(parsed: ParsedFile) -> TemplateFacts | None:
    """The facts of a template file, or of a definition's inline `instructions`."""
    if isinstance(parsed, TemplateFile):
        return parsed.facts
    if isinstance(parsed, DefinitionFile) and parsed.inline is not None:
        return parsed.inline.facts
    return None


def variable_ranges(parsed: ParsedFile) -> list[tuple[VariableUse, Range]]:
    """Each free variable use with its range in the file (inline instructions mapped through their scalar)."""
    return [(use, where()) for use, where in variable_places(parsed)]


def variable_places(parsed: ParsedFile) -> list[tuple[VariableUse, Callable[[], Range]]]:
    """`variable_ranges` with each range computed only when asked for (a check reports few of the uses)."""
    facts = template_facts(parsed)
    if facts is None:
        return []
    if isinstance(parsed, TemplateFile):
        lines = parsed.lines

        def in_file(use: VariableUse) -> Callable[[], Range]:
            return lambda: Range(lines.position_of_char(use.line, use.column),
                                 lines.position_of_char(use.line, use.end_column))

        return [(use, in_file(use)) for use in facts.free_uses]
    inline = parsed.inline if isinstance(parsed, DefinitionFile) else None
    if inline is None:  # facts come from a template file or a definition's inline instructions only
        return []
    mapping = inline.map

    def in_scalar(use: VariableUse, count: int) -> Callable[[], Range]:
        def where() -> Range:
            pos = mapping.position(parsed.lines, parsed.text, use.line, use.column, use.name, count)
            return Range(pos, Position(pos.line, pos.character + len(use.name)))
        return where

    out: list[tuple[VariableUse, Callable[[], Range]]] = []
    nth: dict[str, int] = {}
    for use in facts.free_uses:
        count = nth.get(use.name, 0)
        nth[use.name] = count + 1
        out.append((use, in_scalar(use, count)))
    return out


def reference_ranges(parsed: ParsedFile) -> list[tuple[TemplateReference, Range]]:
    """Each include/import/extends path (quotes included) with its range in the file."""
    facts = template_facts(parsed)
    if facts is None:
        return []
    out: list[tuple[TemplateReference, Range]] = []
    for ref in facts.references:
        if isinstance(parsed, TemplateFile):
            rng = Range(parsed.lines.position_of_char(ref.line, ref.column),
                        parsed.lines.position_of_char(ref.line, ref.end_column))
        elif isinstance(parsed, DefinitionFile) and parsed.inline is not None:
            pos = parsed.inline.map.position(parsed.lines, parsed.text, ref.line, ref.column, ref.path, 0)
            rng = Range(pos, Position(pos.line, pos.character + ref.end_column - ref.column))
        else:  # facts come from a template file or a definition's inline instructions only
            continue
        out.append((ref, rng))
    return out
