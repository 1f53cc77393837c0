"""Small text files read on every invocation (notes, memory, skills), cached by modification time and size.

A `stat` per read keeps results current without a thread hop or a re-read per run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .paths import MAX_TEXT_BYTES, FileRefused, open_regular

_cache: dict[tuple[str, str], tuple[int, int, Any]] = {}


def read_text(path: str, parse: Callable[[str], Any] | None = None, *, limit: int | None = None) -> Any:
    """The file's text (or `parse(text)`), or None when it is missing or unreadable."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    key = (path, getattr(parse, "__qualname__", ""))
    hit = _cache.get(key)
    if hit is not None and hit[0] == info.st_mtime_ns and hit[1] == info.st_size:
        return hit[2]
    try:  # a regular file only (a FIFO or device is refused, not waited on), and never more than the limit
        with os.fdopen(open_regular(path), encoding="utf-8") as handle:
            text = handle.read(limit if limit is not None else MAX_TEXT_BYTES)
    except (OSError, UnicodeDecodeError, FileRefused):
        return None
    value = parse(text) if parse is not None else text
    if len(_cache) > 4096:
        _cache.clear()
    _cache[key] = (info.st_mtime_ns, info.st_size, value)
    return value
