"""Positions and ranges as plain data (0-based line, UTF-16 column, as LSP counts them)."""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True, order=True)
class Position:
    line: int
    character: int


@dataclass(frozen=True, slots=True)
class Range:
    start: Position
    end: Position

    @staticmethod
    def of(start_line: int, start_char: int, end_line: int, end_char: int) -> Range:
        return Range(Position(start_line, start_char), Position(end_line, end_char))

    def contains(self, pos: Position) -> bool:
        return self.start <= pos <= self.end

    def to_json(self) -> dict[str, dict[str, int]]:
        return {
            "start": {"line": self.start.line, "character": self.start.character},
            "end": {"line": self.end.line, "character": self.end.character},
        }


ZERO_RANGE = Range.of(0, 0, 0, 0)


def range_to_row(rng: Range | None) -> list[int] | None:
    """A range as the cache stores it: [start line, start character, end line, end character]."""
    return None if rng is None else [rng.start.line, rng.start.character, rng.end.line, rng.end.character]


def range_from_row(value: Any) -> Range:
    """`range_to_row` back, every cell checked (a stored row of the wrong shape raises)."""
    a, b, c, d = value
    if not (type(a) is int and type(b) is int and type(c) is int and type(d) is int):
        raise ValueError("range")
    return _shared_range(a, b, c, d)


@functools.lru_cache(maxsize=1 << 14)
def _shared_range(a: int, b: int, c: int, d: int) -> Range:
    """One object for equal decoded ranges (a range is a value, and few differ: the 10,569 ranges stored for
    5,000 + 5,000 files are 48), remembered for the stored results and facts a start decodes."""
    return Range(Position(a, b), Position(c, d))


_BREAK_RE = re.compile(r"\r\n?|\n")


def _utf16_len(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


class LineIndex:
    """Converts between character offsets and LSP positions for one text."""

    __slots__ = ("text", "_starts", "_ascii")

    def __init__(self, text: str) -> None:
        self.text = text
        if "\r" in text:
            # LSP (and Jinja, and YAML) break lines at \r\n, \r and \n alike.
            starts = [0, *(m.end() for m in _BREAK_RE.finditer(text))]
        else:
            starts = [0]
            find = text.find
            i = find("\n")
            while i != -1:
                starts.append(i + 1)
                i = find("\n", i + 1)
        self._starts = starts
        self._ascii = text.isascii()

    def _line_end(self, line: int) -> int:
        """The offset where `line`'s text ends, before its line break."""
        if line + 1 >= len(self._starts):
            return len(self.text)
        end = self._starts[line + 1] - 1
        if end > self._starts[line] and self.text[end] == "\n" and self.text[end - 1] == "\r":
            end -= 1
        return end

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line_start(self, line: int) -> int:
        line = max(0, min(line, len(self._starts) - 1))
        return self._starts[line]

    def line_text(self, line: int) -> str:
        if line < 0 or line >= len(self._starts):
            return ""
        return self.text[self._starts[line] : self._line_end(line)]

    def line_column(self, offset: int) -> tuple[int, int]:
        """The line of an offset (clamped into the text) and its column counted in characters, as `position`'s line
        and the offset less its line's start, without `position`'s UTF-16 column."""
        line = bisect.bisect_right(self._starts, max(0, min(offset, len(self.text)))) - 1
        return line, offset - self._starts[line]

    def position(self, offset: int) -> Position:
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self._starts, offset) - 1
        col = offset - self._starts[line]
        if not self._ascii:
            col = _utf16_len(self.text[self._starts[line] : offset])
        return Position(line, col)

    def range_of_chars(self, start_line: int, start_col: int, end_line: int, end_col: int) -> Range:
        """Two (line, column counted in characters) pairs as an LSP range; in ASCII text, one shared object per
        distinct range (`_shared_range`: the ranges of a workspace's keys and values repeat from file to file)."""
        if self._ascii:
            return _shared_range(start_line, start_col, end_line, end_col)
        return Range(self.position_of_char(start_line, start_col), self.position_of_char(end_line, end_col))

    def position_of_char(self, line: int, char_col: int) -> Position:
        """A (line, column counted in characters) pair, as PyYAML and Jinja give them, as an LSP position."""
        if self._ascii or line >= len(self._starts):
            return Position(line, char_col)
        start = self._starts[line]
        return Position(line, _utf16_len(self.text[start : start + char_col]))

    def offset(self, pos: Position) -> int:
        """The character offset of an LSP position, clamped into the text."""
        if pos.line >= len(self._starts):
            return len(self.text)
        start = self._starts[max(pos.line, 0)]
        line_end = self._line_end(pos.line)
        if self._ascii:
            return min(start + max(pos.character, 0), line_end)
        units = 0
        i = start
        while i < line_end and units < pos.character:
            units += 2 if ord(self.text[i]) > 0xFFFF else 1
            i += 1
        return i

    def range(self, start: int, end: int) -> Range:
        return Range(self.position(start), self.position(end))

    def line_range(self, line: int) -> Range:
        """The range of a line's text without its leading and trailing blanks."""
        text = self.line_text(line)
        stripped = text.lstrip()
        first = len(text) - len(stripped)
        base = self.line_start(line)
        return self.range(base + first, base + len(text.rstrip()))
