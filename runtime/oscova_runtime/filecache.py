"""Small text files read on every invocation (notes, memory, skills), cached by modification time and size.

A `stat` per read keeps results current without a thread hop or a re-read per run.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from typing import Any

from .paths import MAX_TEXT_BYTES, FileRefused, check_inside, read_head

_cache: dict[tuple[str, str], tuple[int, int, Any]] = {}


def read_text(path: str, parse: Callable[[str], Any] | None = None, *, limit: int | None = None,
              root: str | None = None) -> Any:
    """The file's text (at most `limit` characters; or `parse(text)`), None when it is missing, or FileRefused:
    outside `root` (after symlinks), not a regular file (a FIFO or device is refused, not waited on), not UTF-8."""
    check_inside(path, root)
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise FileRefused(f"the file cannot be read: {error.strerror or error}") from None
    key = (path, getattr(parse, "__qualname__", ""))
    hit = _cache.get(key)
    if hit is not None and hit[0] == info.st_mtime_ns and hit[1] == info.st_size:
        return hit[2]
    chars = limit if limit is not None else MAX_TEXT_BYTES
    data, more = read_head(path, root=root, limit=chars * 4)  # a character is at most four bytes
    try:  # a character cut at the end of what was read is left out, not an error
        text = codecs.getincrementaldecoder("utf-8")().decode(data, final=not more)[:chars]
    except UnicodeDecodeError as error:
        raise FileRefused(f"the file is not valid UTF-8 (byte {error.start})") from None
    value = parse(text) if parse is not None else text
    if len(_cache) > 4096:
        _cache.clear()
    _cache[key] = (info.st_mtime_ns, info.st_size, value)
    return value
