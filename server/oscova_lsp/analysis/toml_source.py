"""TOML with positions: `tomllib` for the value, a line scanner for where each key and table sits.

`tomllib` rejects a duplicate key outright; the scanner finds it first, so the file reports OSC004 at
the second key and the rest of the file is still checked. `tomllib` recurses once per nested array or
inline table: nesting is bounded like YAML's (`MAX_DEPTH`) before it parses.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

from .diagnostics import Problem
from .rules import syntax
from .rules.syntax import MAX_DEPTH
from .text import LineIndex, Range
from .yaml_source import Path, Span

_KEY_PART = r"""[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*'"""
"""One part of a TOML key: bare, or quoted (a quoted part may hold `]`, `.`, `#` and spaces)."""
_DOTTED_KEY = rf"(?:{_KEY_PART})(?:\s*\.\s*(?:{_KEY_PART}))*"
_HEADER_RE = re.compile(rf"^\s*(\[\[?)\s*({_DOTTED_KEY})\s*\]\]?\s*(?:#.*)?$")
_KEY_RE = re.compile(rf"^\s*({_DOTTED_KEY})\s*=")
_KEY_PART_RE = re.compile(_KEY_PART)
_ERROR_POS_RE = re.compile(r"at line (\d+), column (\d+)")
_SPECIAL_RE = re.compile(r"""[#"'\[\]{}]""")


@dataclass
class TomlDocument:
    text: str
    lines: LineIndex
    value: dict[str, Any] = field(default_factory=dict)
    spans: dict[Path, Span] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    ok: bool = True
    recovered: bool = False
    """With a syntax error, `value` holds what the lines around the broken ones say."""

    def key_range(self, path: Path) -> Range | None:
        span = self.spans.get(path)
        return (span.key or span.value) if span else None

    def value_range(self, path: Path) -> Range | None:
        span = self.spans.get(path)
        return span.value if span else None

    def best_range(self, path: Path) -> Range:
        for end in range(len(path), 0, -1):
            span = self.spans.get(path[:end])
            if span is not None:
                return span.value if end == len(path) else (span.key or span.value)
        return self.lines.line_range(0)


def toml_key(part: str) -> str:
    """One key part as TOML writes it: bare where it can be, else a quoted basic string (`"a]b"`)."""
    return part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else json.dumps(part)


def _split_key(raw: str) -> tuple[str, ...]:
    parts = []
    for m in _KEY_PART_RE.finditer(raw):
        part = m.group()
        if part[0] in "\"'":
            part = part[1:-1]
        parts.append(part)
    return tuple(parts)


def parse_toml(text: str) -> TomlDocument:
    doc = TomlDocument(text=text, lines=LineIndex(text))
    duplicate_lines = _scan(doc)
    source = text
    if duplicate_lines:
        kept = text.split("\n")
        for line in duplicate_lines:
            kept[line] = ""
        source = "\n".join(kept)
    too_deep = _bracket_depth_exceeds(source, MAX_DEPTH)
    if too_deep is not None:
        return _too_deep(doc, doc.lines.range(too_deep, too_deep + 1))
    try:
        doc.value = tomllib.loads(source)
        if _value_depth(doc.value) > MAX_DEPTH:  # dotted keys nest without brackets: `a.b.c.….z = 1`
            doc.value = {}
            return _too_deep(doc, doc.lines.line_range(0))
    except RecursionError:
        return _too_deep(doc, doc.lines.line_range(0))
    except tomllib.TOMLDecodeError as exc:
        doc.ok = False
        message = str(exc)
        m = _ERROR_POS_RE.search(message)
        if m:
            line, col = int(m.group(1)) - 1, max(int(m.group(2)) - 1, 0)
            rng = doc.lines.line_range(line) if col >= len(doc.lines.line_text(line)) else Range(
                doc.lines.position_of_char(line, col), doc.lines.position_of_char(line, col + 1))
            message = _ERROR_POS_RE.sub("", message).rstrip(" ()")
        else:
            rng = doc.lines.line_range(0)
        doc.problems.append(syntax.toml_syntax_error(rng, message))
        recovered = _recover(source, exc)
        if recovered is not None:
            doc.value, doc.recovered = recovered, True
    return doc


def _recover(source: str, exc: tomllib.TOMLDecodeError) -> dict[str, Any] | None:
    """What the document says with its broken lines blanked, one at a time (a bounded number of times)."""
    lines = source.split("\n")
    for _ in range(20):
        m = _ERROR_POS_RE.search(str(exc))
        line = int(m.group(1)) - 1 if m else -1
        if not 0 <= line < len(lines) or not lines[line].strip():
            return None
        header = lines[line].lstrip().startswith("[")
        lines[line] = ""
        while header and line + 1 < len(lines) and not lines[line + 1].lstrip().startswith("["):
            line += 1  # a broken table header takes its keys along: they must not land in the table before
            lines[line] = ""
        try:
            return tomllib.loads("\n".join(lines))
        except tomllib.TOMLDecodeError as again:
            exc = again
    return None
def _too_deep(doc: TomlDocument, rng: Range) -> TomlDocument:
    doc.ok = False
    doc.problems.append(syntax.CANNOT_READ.problem(
        rng, syntax.nests_too_deep("arrays, inline tables or dotted keys")))
    return doc


def _bracket_depth_exceeds(text: str, bound: int) -> int | None:
    """The offset of the first `[` or `{` nested deeper than `bound` outside strings and comments, or None.
    Table headers count too (`[[a]]` is two), which only ever over-counts by two."""
    depth = 0
    i, n = 0, len(text)
    while True:
        m = _SPECIAL_RE.search(text, i)
        if m is None:
            return None
        i = m.start()
        ch = text[i]
        if ch == "#":
            end = text.find("\n", i)
            i = n if end == -1 else end
        elif text.startswith(('"""', "'''"), i):
            quote = text[i:i + 3]
            j = i + 3
            while True:
                j = text.find(quote, j)
                if j == -1 or quote == "'''" or _unescaped(text, j):
                    break
                j += 1
            if j == -1:
                return None
            i = j + 3
            for _ in range(2):  # a closing run of up to five quotes ends with the last three
                if i < n and text[i] == quote[0]:
                    i += 1
            continue
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if ch == '"' and text[j] == "\\" else 1
            i = j
        elif ch in "[{":
            depth += 1
            if depth > bound:
                return i
        else:
            depth = max(depth - 1, 0)
        i += 1


def _unescaped(text: str, at: int) -> bool:
    backslashes = 0
    while at - backslashes - 1 >= 0 and text[at - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 0


def _value_depth(value: Any) -> int:
    """How deep tables and arrays nest in a parsed value, walked without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            return deepest
        children = current.values() if isinstance(current, dict) else current if isinstance(current, list) else ()
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _scan(doc: TomlDocument) -> list[int]:
    """Records spans of tables and keys; returns lines that repeat a key (reported as OSC004)."""
    table: tuple[str, ...] = ()
    seen: dict[Path, Range] = {}
    duplicates: list[int] = []
    array_counts: dict[tuple[str, ...], int] = {}
    line_no = 0
    total = doc.lines.line_count
    while line_no < total:
        line = doc.lines.line_text(line_no)
        header = _HEADER_RE.match(line)
        if header and not _KEY_RE.match(line):
            path = _split_key(header.group(2))
            start = line.index(header.group(2))
            rng = Range(doc.lines.position_of_char(line_no, start),
                        doc.lines.position_of_char(line_no, start + len(header.group(2))))
            if header.group(1) == "[[":
                index = array_counts.get(path, 0)
                array_counts[path] = index + 1
                table = (*path, str(index))  # an array-of-tables entry, e.g. ("tools", "0")
            else:
                table = path
                if path in seen:
                    doc.problems.append(syntax.duplicate_toml_table(rng, path, seen[path]))
                seen[path] = rng
            doc.spans[table] = Span(rng, doc.lines.line_range(line_no))
            line_no += 1
            continue
        key = _KEY_RE.match(line)
        if key:
            parts = _split_key(key.group(1))
            path = (*table, *parts)
            key_start = line.index(key.group(1))
            key_range = Range(doc.lines.position_of_char(line_no, key_start),
                              doc.lines.position_of_char(line_no, key_start + len(key.group(1))))
            value_start = key.end()
            while value_start < len(line) and line[value_start] in " \t":
                value_start += 1
            end_line = _value_end_line(doc.lines, line_no, value_start)
            end_text = doc.lines.line_text(end_line)
            end_col = len(_strip_comment(end_text).rstrip()) if end_line != line_no else len(
                _strip_comment(line).rstrip())
            value_range = Range(doc.lines.position_of_char(line_no, value_start),
                                doc.lines.position_of_char(end_line, max(end_col, 0)))
            if path in seen:
                doc.problems.append(syntax.duplicate_toml_key(key_range, parts, seen[path]))
                duplicates.extend(range(line_no, end_line + 1))
            else:
                seen[path] = key_range
                doc.spans[path] = Span(key_range, value_range)
                if line[value_start:value_start + 1] == "[":
                    _scan_array(doc, path, line_no, value_start, end_line)
                for i in range(1, len(parts)):
                    doc.spans.setdefault((*table, *parts[:i]), Span(key_range, value_range))
            line_no = end_line + 1
            continue
        line_no += 1
    return duplicates


def _scan_array(doc: TomlDocument, path: Path, line_no: int, start: int, end_line: int) -> None:
    """Records the span of each item of the array at (`line_no`, `start`) as `(*path, index)`, so a finding
    about one entry (a grant, a code of `[lint]`) covers exactly that entry."""
    depth, item_start, index = 0, -1, 0
    for n in range(line_no, end_line + 1):
        text = doc.lines.line_text(n)
        i = start if n == line_no else 0
        while i < len(text):
            ch = text[i]
            if ch == "#":
                break
            if ch in "\"'":  # a string: skipped whole (a basic string's escapes included)
                close = re.match(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', text[i:])
                end = i + (len(close.group()) if close else len(text) - i)
                if depth == 1 and item_start < 0:
                    item_start = i
                if depth == 1 and item_start == i:
                    doc.spans[(*path, index)] = Span(None, Range(doc.lines.position_of_char(n, i),
                                                                  doc.lines.position_of_char(n, end)))
                i = end
                continue
            if ch in "[{":
                depth += 1
            elif ch in "]}":
                depth -= 1
                if depth == 0:
                    return
            elif ch == "," and depth == 1:
                index, item_start = index + 1, -1
            elif depth == 1 and item_start < 0 and not ch.isspace():
                item_start = i
            i += 1


def _strip_comment(line: str) -> str:
    in_str: str | None = None
    for i, ch in enumerate(line):
        if in_str:
            if ch == in_str:
                in_str = None
        elif ch in "\"'":
            in_str = ch
        elif ch == "#":
            return line[:i]
    return line


def _value_end_line(lines: LineIndex, line_no: int, value_start: int) -> int:
    """The last line of a value that may span lines (arrays, inline tables, multi-line strings)."""
    text = lines.line_text(line_no)[value_start:]
    for quote in ('"""', "'''"):
        if text.startswith(quote):
            if text.count(quote) >= 2:
                return line_no
            n = line_no + 1
            while n < lines.line_count:
                if quote in lines.line_text(n):
                    return n
                n += 1
            return line_no
    depth = 0
    n = line_no
    segment = text
    while True:
        cleaned = _strip_comment(re.sub(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', '""', segment))
        depth += cleaned.count("[") + cleaned.count("{") - cleaned.count("]") - cleaned.count("}")
        if depth <= 0 or n + 1 >= lines.line_count:
            return n
        n += 1
        segment = lines.line_text(n)
