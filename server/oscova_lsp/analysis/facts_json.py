"""The facts cache's entries as JSON, and back with every value checked (`cache.FactsCache` reads and writes
them): a template's facts, a definition's YAML document with the facts of its inline instructions. Imported
when the facts cache is used, not for the stored results of a whole check (the warm start needs no parser).
"""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any

from .diagnostics import Problem
from .disk import FileKind
from .files import DefinitionFile, ParsedFile, TemplateFile, parse_definition, parse_template
from .jinja_facts import TemplateFacts, WireFacts, facts_from_wire, facts_to_wire
from .text import LineIndex, range_from_row, range_to_row
from .yaml_source import Path, Span, YamlDocument


class Uncacheable(Exception):
    """A value the JSON form cannot hold exactly: the file is parsed every time instead."""


def encode(parsed: ParsedFile) -> list[Any]:
    if isinstance(parsed, TemplateFile) and parsed.facts is not None:
        return ["t", _template_to_json(facts_to_wire(parsed.facts))]
    if isinstance(parsed, DefinitionFile) and parsed.doc is not None:
        doc = parsed.doc
        value, marked = _value_to_json(doc.value)
        # Keyed by the path's repr (exact for tuples of str, int and bool, and cheap to compute on lookup).
        spans = json.dumps({repr(path): [list(path), range_to_row(span.key), range_to_row(span.value), span.style,
                                         span.start_offset, span.end_offset] for path, span in doc.spans.items()},
                           ensure_ascii=False, separators=(",", ":"))
        problems = [[p.code, range_to_row(p.range), p.message, [[range_to_row(rng), words] for rng, words in p.related]]
                    for p in doc.problems]
        inline = _template_to_json(facts_to_wire(parsed.inline.facts)) if parsed.inline is not None else None
        return ["d", value, marked, spans, problems, doc.ok, doc.recovered, inline]
    raise Uncacheable


def decode(path: str, kind: FileKind, text: str, data: Any) -> ParsedFile | None:
    """The parsed file from its cached facts; None (or an exception) when the entry does not fit."""
    if kind is FileKind.TEMPLATE and data[0] == "t" and len(data) == 2:
        return parse_template(path, text, _template_from_json(text, data[1]))
    if kind is FileKind.DEFINITION and data[0] == "d" and len(data) == 8:
        _, value, marked, spans, problems, ok, recovered, inline = data
        if not (type(marked) is bool and type(ok) is bool and type(recovered) is bool and type(spans) is str):
            return None
        doc = _CachedDocument(text, LineIndex(text), _value_from_json(value) if marked else value, {},
                              [_problem(row) for row in problems], ok, recovered)
        doc.rows = spans
        return parse_definition(path, text, doc, None if inline is None else _template_from_json(text, inline))
    return None


class _CachedDocument(YamlDocument):
    """A YAML document whose spans stay JSON until used, and are then decoded one path at a time: the checks
    of a definition read a few of its spans (its `id`, its `agent_tools`), most cached definitions none."""

    rows: Any = None
    """The spans as JSON text, then as the decoded mapping of path keys to rows; None once all are decoded."""

    @property  # type: ignore[override]
    def spans(self) -> dict[Path, Span]:
        rows = self._rows()
        if rows is not None:
            self.rows = None
            self._spans = {_path(row[0]): _span(row) for row in rows.values()}
        return self._spans

    @spans.setter
    def spans(self, value: dict[Path, Span]) -> None:
        self._spans = value

    def span(self, path: Path) -> Span | None:
        rows = self._rows()
        if rows is None:
            return self._spans.get(path)
        found = self._spans.get(path)
        if found is None:
            row = rows.get(repr(path))
            if row is not None:
                found = self._spans[path] = _span(row)
        return found

    def _rows(self) -> dict[str, Any] | None:
        if isinstance(self.rows, str):
            decoded = json.loads(self.rows)
            if type(decoded) is not dict:
                raise ValueError("spans")
            self.rows = decoded
        return self.rows


def _path(parts: Any) -> Path:
    if not (type(parts) is list and all(type(part) in _PATH_PARTS for part in parts)):
        raise ValueError("path")
    return tuple(parts)


_PATH_PARTS = (str, int, bool)


def _span(row: Any) -> Span:
    _, key, value, style, start, end = row
    if not (type(start) is int and type(end) is int and (style is None or type(style) is str)):
        raise ValueError("span")
    return Span(None if key is None else range_from_row(key), range_from_row(value), style, start, end)


def _problem(row: Any) -> Problem:
    """A parser's finding (a parser's have no fix)."""
    code, rng, message, related = row
    if not (type(code) is str and type(message) is str and type(related) is list
            and all(type(pair) is list and len(pair) == 2 and type(pair[1]) is str for pair in related)):
        raise ValueError("problem")
    return Problem(code, range_from_row(rng), message, tuple((range_from_row(place), words) for place, words in related))


# A template's wire form (`facts_to_wire`) with frozensets as sorted lists; each column's types, checked exactly.
_INT, _STR, _BOOL, _NONE = (int,), (str,), (bool,), (type(None),)
_USE = (_STR, _INT, _INT, _INT, _STR)
_REFERENCE = (_STR, _STR, _INT, _INT, _INT, _BOOL, _BOOL)
_ERROR = (_STR, _INT, _INT, _INT + _NONE)
_INTERVAL = (_INT, _INT)


def _template_to_json(wire: WireFacts) -> list[Any]:
    uses, refs, errors, local_names, suppressions, delimited = wire
    return [uses, refs, errors, sorted(local_names),
            [[line, None if codes is None else sorted(codes)] for line, codes in suppressions], delimited]


def _template_from_json(text: str, data: Any) -> TemplateFacts:
    uses, refs, errors, local_names, suppressions, delimited = data
    if not (_rows(uses, _USE) and _rows(refs, _REFERENCE) and _rows(errors, _ERROR) and _rows(delimited, _INTERVAL)
            and type(local_names) is list and all(type(name) is str for name in local_names)
            and type(suppressions) is list):
        raise ValueError("template facts")
    lines: list[tuple[int, frozenset[str] | None]] = []
    for line, codes in suppressions:
        if type(line) is not int or not (codes is None or (type(codes) is list and all(type(c) is str for c in codes))):
            raise ValueError("suppression")
        lines.append((line, None if codes is None else frozenset(codes)))
    return facts_from_wire(text, (uses, refs, errors, local_names, lines, [tuple(pair) for pair in delimited]))


def _rows(value: Any, shape: tuple[tuple[type, ...], ...]) -> bool:
    allowed = _ROW_TYPES.get(shape)
    if allowed is None:
        allowed = _ROW_TYPES[shape] = frozenset(itertools.product(*shape))
    # A row's exact cell types as one tuple, looked up among the allowed ones (mapped in C: entries are many).
    return type(value) is list and all(type(row) is list and tuple(map(type, row)) in allowed for row in value)


_ROW_TYPES: dict[tuple[tuple[type, ...], ...], frozenset[tuple[type, ...]]] = {}


# A YAML value: JSON's own types as they are; what JSON cannot hold (mappings with keys other than strings,
# bytes from `!!binary`) as a one-key object whose key starts with NUL, which no YAML key of a valid entry
# can (such a mapping is stored as pairs itself). `marked` says whether any such object is in the value.

_PAIRS, _BYTES = "\x00pairs", "\x00bytes"


def _value_to_json(value: Any) -> tuple[Any, bool]:
    marked = False

    def encode(item: Any) -> Any:
        nonlocal marked
        kind = type(item)
        if item is None or kind in (str, int, float, bool):
            return item
        if kind is list:
            return [encode(x) for x in item]
        if kind is dict:
            if all(type(k) is str and not k.startswith("\x00") for k in item):
                return {k: encode(v) for k, v in item.items()}
            marked = True
            return {_PAIRS: [[encode(k), encode(v)] for k, v in item.items()]}
        if kind is bytes:
            marked = True
            return {_BYTES: base64.b64encode(item).decode("ascii")}
        raise Uncacheable

    return encode(value), marked


def _value_from_json(value: Any) -> Any:
    if type(value) is list:
        return [_value_from_json(x) for x in value]
    if type(value) is dict:
        if len(value) == 1 and _PAIRS in value:
            return {_hashable(_value_from_json(k)): _value_from_json(v) for k, v in value[_PAIRS]}
        if len(value) == 1 and _BYTES in value:
            return base64.b64decode(value[_BYTES], validate=True)
        return {k: _value_from_json(v) for k, v in value.items()}
    return value


def _hashable(key: Any) -> Any:
    hash(key)  # a list or mapping here is a forged entry: TypeError, and the file is parsed again
    return key
