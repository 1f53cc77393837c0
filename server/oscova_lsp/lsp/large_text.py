"""Open documents too large to analyse, kept apart from pygls's documents (see `documents.OpenDocuments`)."""

from __future__ import annotations


class LargeText:
    """The text of an open document too large to analyse (skipped with a notice: docs/editors.md), kept in blocks so
    that an edit costs a block or two, not a join and split of the whole document (pygls's own document does
    that on every keystroke: 180–310 ms for 50 MB). Positions are LSP's: lines and UTF-16 code units."""

    BLOCK = 1 << 16

    def __init__(self, text: str, language_id: str = "") -> None:
        self.language_id = language_id
        self._blocks: list[str] = []
        self._newlines: list[int] = []
        self._set_blocks(0, 0, text)

    def __len__(self) -> int:
        return sum(len(b) for b in self._blocks)

    def text(self) -> str:
        return "".join(self._blocks)

    def replace(self, start: tuple[int, int] | None, end: tuple[int, int] | None, text: str) -> None:
        """Applies one content change: a range (line, UTF-16 character) to replace, or None for all of it."""
        if start is None or end is None:
            self._blocks, self._newlines = [], []
            self._set_blocks(0, 0, text)
            return
        first, at = self._locate(*start)
        last, upto = self._locate(*end)
        if (last, upto) < (first, at):
            (first, at), (last, upto) = (last, upto), (first, at)
        merged = self._blocks[first][:at] + text + self._blocks[last][upto:]
        self._set_blocks(first, last + 1, merged)

    def _set_blocks(self, first: int, stop: int, text: str) -> None:
        # Pieces of one to two blocks: a block is split only once it doubled, so edits never fragment the text.
        count = max(1, len(text) // self.BLOCK)
        size = -(-len(text) // count)
        pieces = [text[i:i + size] for i in range(0, len(text), size)] if text else []
        if not pieces and not self._blocks[:first] + self._blocks[stop:]:
            pieces = [""]
        self._blocks[first:stop] = pieces
        self._newlines[first:stop] = [p.count("\n") for p in pieces]

    def _locate(self, line: int, character: int) -> tuple[int, int]:
        """(block, index in it) of a position; past the end of a line or of the text, its end."""
        index, offset = 0, 0
        if line > 0:  # the block holding the line-th newline, and the index just after it
            remaining = line
            for index, count in enumerate(self._newlines):
                if remaining <= count:
                    block = self._blocks[index]
                    offset = -1
                    for _ in range(remaining):
                        offset = block.index("\n", offset + 1)
                    offset += 1
                    break
                remaining -= count
            else:
                return len(self._blocks) - 1, len(self._blocks[-1])
        units = 0
        while index < len(self._blocks):  # walk the line to the character (a line may cross blocks)
            block = self._blocks[index]
            stop = block.find("\n", offset)
            stop = len(block) if stop == -1 else stop
            segment = block[offset:stop]
            if len(segment) + units >= character and _bmp_only(segment[:character - units]):
                return index, offset + character - units
            for char in segment:
                width = 2 if ord(char) > 0xFFFF else 1
                if units + width > character:
                    return index, offset
                units += width
                offset += 1
            if stop < len(block) or index == len(self._blocks) - 1:
                return index, offset
            index, offset = index + 1, 0
        return len(self._blocks) - 1, len(self._blocks[-1])


def _bmp_only(text: str) -> bool:
    return not text or max(text) <= "\uffff"
