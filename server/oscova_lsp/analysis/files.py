"""Parsing one file into plain facts: a pure function of its path and text.

Everything here is per file and independent of the rest of the workspace, so it can be cached by
content, run in worker processes, and redone for one file when it changes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oscova_runtime.definition import AgentDefinition
from oscova_runtime.evaluation import Evaluation
from oscova_runtime.host_config import HostConfig
from oscova_runtime.paths import MAX_TEXT_BYTES, too_large
from pydantic import ValidationError

from .diagnostics import Problem
from .disk import (  # noqa: F401  (the file kinds, named here too: every parser's caller imports them from here)
    DEFINITION_SUFFIXES,
    EVAL_SUFFIXES,
    HOST_FILENAMES,
    TEMPLATE_SUFFIXES,
    FileKind,
    declares_oscova,
    decode,
    file_kind,
)
from .jinja_facts import TemplateFacts, TemplateReference, VariableUse
from .jinja_source import analyze_template
from .rules import schema, syntax
from .text import LineIndex, Position, Range
from .toml_source import TomlDocument, parse_toml
from .yaml_source import Path, Span, YamlDocument, parse_yaml, yaml_suppressions

MAX_FILE_BYTES = MAX_TEXT_BYTES
TOO_LARGE = "the file is larger than 1 MB"
"""How every too-large reason begins (`paths.too_large`): a notice, not a finding."""

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
    offsets: tuple[int, ...] | None = None
    """For a one-line quoted scalar with escapes (`\\"`, `\\n`, `''`): the file offset of each character of its value."""
    line_starts: tuple[int, ...] = (0,)
    """Where each line of that value starts, in its characters (`\\n` escapes break lines)."""

    def position(self, lines: LineIndex, text: str, line: int, col: int, name: str, nth: int) -> Position:
        if self.offsets is not None and 0 <= line < len(self.line_starts):
            index = self.line_starts[line] + col
            return lines.position(self.offsets[index] if index < len(self.offsets) else self.raw_end - 1)
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
        indicator = _INDENTATION_INDICATOR.match(text, span.start_offset)
        if indicator and indicator.group(1):  # `|2`: the content starts that far past the key's indentation
            column = (span.key.start.character if span.key else 0) + int(indicator.group(1))
        else:
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
        offsets, line_starts = _quoted_offsets(text, span) if span.style in ("'", '"') else (None, (0,))
        return ScalarMap("line", start_pos.line, col, span.start_offset, span.end_offset, offsets, line_starts)
    return ScalarMap("search", start_pos.line, 0, span.start_offset, span.end_offset)


_INDENTATION_INDICATOR = re.compile(r"\|[-+]?([1-9])?")
_DOUBLE_QUOTED_ESCAPE_LENGTHS = {"x": 4, "u": 6, "U": 10}
"""How many characters of the file a `\\x..`, `\\u....` or `\\U........` escape takes (any other takes 2)."""
_ESCAPED_BREAKS = frozenset("nr")
"""Escapes that break a line of the value as Jinja and the checks count lines (`\\N`, `\\L`, `\\P` do not)."""


def _quoted_offsets(text: str, span: Span) -> tuple[tuple[int, ...] | None, tuple[int, ...]]:
    """For a one-line quoted scalar whose value differs from its text (escapes, a doubled `''`): the file offset
    of each character of the value, and where the value's lines start (None, (0,): the text is the value)."""
    start, end = span.start_offset + 1, span.end_offset - 1  # inside the quotes
    double = span.style == '"'
    if ("\\" if double else "''") not in text[start:end]:
        return None, (0,)
    offsets: list[int] = []
    line_starts = [0]
    i = start
    while i < end:
        offsets.append(i)
        if double and text[i] == "\\":
            escape = text[i + 1:i + 2]
            i += _DOUBLE_QUOTED_ESCAPE_LENGTHS.get(escape, 2)
            if escape in _ESCAPED_BREAKS and not (escape == "r" and text[i:i + 2] == "\\n"):
                line_starts.append(len(offsets))  # `\\r\\n` is one break, as the value's lines count it
        else:
            i += 2 if not double and text[i:i + 2] == "''" else 1
    return tuple(offsets), tuple(line_starts)


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
    borrows_all: bool = False
    """Whether, while this file is broken, other files see its last good version whole (nothing could be read)."""
    borrowed_keys: frozenset[str] = frozenset()
    """The keys other files read from this file's last good version while it is broken (the rest is its own)."""


@dataclass
class EvalFile(ParsedFile):
    doc: YamlDocument | None = None
    evaluation: Evaluation | None = None
    """The evaluation as validated; values that do not validate are left out (their findings say why)."""


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
    borrows_all: bool = False
    """Whether `config` is the last good one, standing in while this file does not parse."""


def parse_file(path: str, text: str | None, skipped: str | None = None) -> ParsedFile:
    """The file's facts; never raises: a parser failing on hostile input leaves the file with an OSC001."""
    kind = file_kind(path)
    if kind is None:  # a caller's mistake, not the file's: only discovered or opened workspace files come here
        raise ValueError(f"not an agent definition, template, host configuration or evaluation: {path}")
    if text is None:
        return _unread(path, kind, skipped)
    try:
        return _parse_text(path, kind, text)
    except Exception as error:  # noqa: BLE001 - the last resort: one file's diagnostic, never a traceback
        return _unread(path, kind, syntax.analysis_failed(error))


def _unread(path: str, kind: FileKind, skipped: str | None) -> ParsedFile:
    cls = {FileKind.DEFINITION: DefinitionFile, FileKind.TEMPLATE: TemplateFile, FileKind.HOST: HostFile,
           FileKind.EVAL: EvalFile}[kind]
    parsed = cls(path, kind, "", LineIndex(""), skipped=skipped)
    if not (skipped or "").startswith(TOO_LARGE):
        # Too large is a notice, not a finding; unreadable text is OSC001.
        parsed.problems.append(syntax.unreadable(skipped))
    return parsed


def _parse_text(path: str, kind: FileKind, text: str) -> ParsedFile:
    if len(text) > MAX_FILE_BYTES:
        return _unread(path, kind, too_large(len(text), MAX_FILE_BYTES, "characters"))
    if kind is FileKind.DEFINITION:
        return parse_definition(path, text)
    if kind is FileKind.TEMPLATE:
        return parse_template(path, text)
    if kind is FileKind.EVAL:
        return parse_eval(path, text)
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
    parsed.problems.extend(doc.problems)
    if not doc.ok and not doc.recovered:
        return parsed
    data = doc.value
    if data is None:
        data = {}
    if not isinstance(data, dict):
        if doc.ok:
            parsed.problems.append(schema.not_a_mapping(doc))
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
            if entry is None:  # reported by `rules/providers.py` (OSC010)
                parsed.null_entries.append(index)
            else:
                kept.append(entry)
        data["context_providers"] = kept
    parsed.definition = schema.validate(path, AgentDefinition, data, doc, parsed.problems, _DEFINITION_KEYS,
                                        index_map=_index_map(len(providers) if isinstance(providers, list) else 0,
                                                              parsed.null_entries))
    if doc.recovered:
        parsed.problems[reported:] = [p for p in parsed.problems[reported:]
                                      if not p.message.startswith(schema.MISSING_KEY)]
    if parsed.definition is not None and parsed.definition.instructions:
        span = doc.span(("instructions",))
        if span is not None:
            facts = inline if inline is not None else analyze_template(parsed.definition.instructions)
            parsed.inline = InlineTemplate(facts, scalar_map(text, doc.lines, span))
    return parsed


def _index_map(length: int, null_entries: list[int]) -> dict[int, int]:
    """Index in the list without nulls -> index in the file's list."""
    if not null_entries:
        return dict(enumerate(range(length)))  # without a generator step per entry
    nulls = set(null_entries)
    return dict(enumerate(i for i in range(length) if i not in nulls))


# --------------------------------------------------------------------------------------------------
# Evaluations

_EVAL_KEYS = list(Evaluation.model_fields)


def parse_eval(path: str, text: str) -> EvalFile:
    """An evaluation file against its model; a broken file keeps its syntax findings and nothing else."""
    doc = parse_yaml(text)
    parsed = EvalFile(path, FileKind.EVAL, text, doc.lines, doc=doc)
    parsed.suppressions = yaml_suppressions(text)
    parsed.problems.extend(doc.problems)
    if not doc.ok:
        return parsed
    data = doc.value if doc.value is not None else {}
    if not isinstance(data, dict):
        parsed.problems.append(schema.not_a_mapping(doc, "an evaluation"))
        return parsed
    parsed.evaluation = schema.validate(path, Evaluation, dict(data), doc, parsed.problems, _EVAL_KEYS)
    return parsed


# --------------------------------------------------------------------------------------------------
# Templates


def parse_template(path: str, text: str, facts: TemplateFacts | None = None) -> TemplateFile:
    """`facts` may come precomputed (from a worker process)."""
    facts = facts if facts is not None else analyze_template(text)
    parsed = TemplateFile(path, FileKind.TEMPLATE, text, LineIndex(text), facts=facts)
    parsed.suppressions = facts.suppressions  # syntax errors: `rules/templates.py` (OSC100)
    return parsed


# --------------------------------------------------------------------------------------------------
# Host configuration

_HOST_KEYS = list(HostConfig.model_fields)


def parse_host(path: str, text: str) -> HostFile:
    doc = parse_toml(text)
    is_pyproject = os.path.basename(path) == "pyproject.toml"
    prefix: Path = ("tool", "oscova") if is_pyproject else ()
    parsed = HostFile(path, FileKind.HOST, text, doc.lines, doc=doc, prefix=prefix)
    parsed.suppressions = yaml_suppressions(text)
    parsed.problems.extend(doc.problems)
    if not doc.ok and not doc.recovered:
        parsed.present = not is_pyproject or declares_oscova(text)
        return parsed
    data: Any = doc.value
    if is_pyproject:
        data = data.get("tool", {}).get("oscova")
        if data is None:
            parsed.present = not doc.ok and declares_oscova(text)
            return parsed
    if doc.recovered:  # what the lines around the broken ones say; not findings while the file is broken
        parsed.config = _lenient_host(data)
        return parsed
    parsed.config = schema.validate(path, HostConfig, data, doc, parsed.problems, _HOST_KEYS, prefix) or \
        _lenient_host(data)
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
