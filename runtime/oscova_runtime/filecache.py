"""Small text files read on every invocation (notes, memory, skills), cached by modification time and size.

A `stat` per read keeps results current without a re-read per run. `read_text_async` answers an unchanged file
from the cache after that `stat`, and reads a changed or new file in a worker thread: the event loop never waits
for a file's content, and a cancelled run stops waiting at once (seed: "Honor the supplied cancellation token
in file ... work"), while a run over unchanged files costs no thread hop.
"""

from __future__ import annotations

import asyncio
import codecs
import os
from collections.abc import Callable
from typing import Any

from .paths import MAX_TEXT_BYTES, FileRefused, check_inside, read_head

_cache: dict[tuple[str, str], tuple[int, int, Any]] = {}


MISS = object()
"""What `cached` returns when the file has to be read."""


def _lookup(path: str, parse: Callable[[str], Any] | None, root: str | None) -> tuple[Any, tuple[str, str], Any]:
    """(the file's `stat`, or None when it is missing; its cache key; the cached value, None or `MISS`)."""
    check_inside(path, root)
    key = (path, getattr(parse, "__qualname__", ""))
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None, key, None
    except OSError as error:
        raise FileRefused(f"the file cannot be read: {error.strerror or error}") from None
    hit = _cache.get(key)
    fresh = hit is not None and hit[0] == info.st_mtime_ns and hit[1] == info.st_size
    return info, key, hit[2] if fresh and hit is not None else MISS


def cached(path: str, parse: Callable[[str], Any] | None = None, *, root: str | None = None) -> Any:
    """What `read_text` would return, when one `stat` shows it is cached (None: the file is missing), else `MISS`.
    FileRefused as `read_text` (outside `root`, a `stat` that fails)."""
    return _lookup(path, parse, root)[2]


def read_text(path: str, parse: Callable[[str], Any] | None = None, *, limit: int | None = None,
              root: str | None = None) -> Any:
    """The file's text (at most `limit` characters; or `parse(text)`), None when it is missing, or FileRefused:
    outside `root` (after symlinks), not a regular file (a FIFO or device is refused, not waited on), not UTF-8."""
    info, key, value = _lookup(path, parse, root)
    if info is None or value is not MISS:
        return value
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


async def read_text_async(path: str, parse: Callable[[str], Any] | None = None, *, limit: int | None = None,
                          root: str | None = None) -> Any:
    """`read_text`, with the content read in a worker thread unless the cache answers (see the module)."""
    value = cached(path, parse, root=root)
    if value is not MISS:
        return value
    return await asyncio.to_thread(read_text, path, parse, limit=limit, root=root)
