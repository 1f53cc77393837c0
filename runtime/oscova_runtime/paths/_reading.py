"""The file gateway's reads: whole files, heads and lines, bounded, of regular files inside a boundary only."""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator

from ._boundary import (
    _READ_FLAGS,
    MAX_TEXT_BYTES,
    Boundary,
    FileRefused,
    _boundary,
    _cannot,
    _check_opened,
    _check_private,
    _not_regular,
    _resolve,
    too_large,
)


def _open_to_read(path: str, root: str | Boundary | None) -> tuple[int, os.stat_result]:
    boundary = _boundary(root)
    real = _resolve(path, boundary)
    try:
        why = _not_regular(os.lstat(real).st_mode)
        if why:
            raise FileRefused(why)
        fd = os.open(real, _READ_FLAGS)
    except OSError as error:
        raise _cannot("read", error) from None
    return fd, _check_opened(fd, real, boundary, "read")


def open_regular(path: str, *, root: str | Boundary | None = None) -> int:
    """A read-only descriptor of the regular file at `path` (inside `root`), or FileRefused (a FIFO, a device,
    a socket, a `/proc` entry, a link leading out). The real path is opened with `O_NOFOLLOW` and
    `O_NONBLOCK` (a FIFO swapped in after the check opens without waiting, and is refused)."""
    return _open_to_read(path, root)[0]


def _read_upto(path: str, root: str | Boundary | None, count: int, refuse_over: int | None = None,
               private: bool = False) -> tuple[bytes, int]:
    """At most `count` bytes of the regular file at `path` inside `root`, and its size as `fstat` saw it; a
    file whose size is over `refuse_over` is refused without a byte read."""
    fd, info = _open_to_read(path, root)
    try:
        if private:
            _check_private(info, "file")
        if refuse_over is not None and info.st_size > refuse_over:
            raise FileRefused(too_large(info.st_size, refuse_over))
        chunks: list[bytes] = []
        total = 0
        while total < count:
            chunk = os.read(fd, min(1 << 20, count - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks), info.st_size
    except OSError as error:
        raise _cannot("read", error) from None
    finally:
        os.close(fd)


def read_bytes(path: str, *, root: str | Boundary | None = None, limit: int = MAX_TEXT_BYTES,
               private: bool = False) -> bytes:
    """The file's bytes, or FileRefused: outside `root` (after symlinks), not a regular file, or larger than
    `limit` (by its size, or found while reading: at most `limit + 1` bytes are read). `private`: refused too
    unless the user owns it and no one else may write it (a cache file)."""
    data, size = _read_upto(path, root, limit + 1, refuse_over=limit, private=private)
    if len(data) > limit:
        raise FileRefused(too_large(max(len(data), size), limit))
    return data


def read_head(path: str, *, root: str | Boundary | None = None, limit: int) -> tuple[bytes, bool]:
    """The first `limit` bytes of the file and whether more follow, or FileRefused as `read_bytes` (never the size)."""
    data, _ = _read_upto(path, root, limit + 1)
    return data[:limit], len(data) > limit


def read_lines(path: str, *, root: str | Boundary | None = None, limit: int, line_limit: int) -> Iterator[str]:
    """The lines of a UTF-8 text file, without their line ends, read as they are used: FileRefused (at once)
    for a file `open_regular` refuses or larger than `limit` by its size, and (while reading) for a line longer
    than `line_limit` bytes, more than `limit` bytes in all, or a line that is not UTF-8."""
    fd, info = _open_to_read(path, root)
    if info.st_size > limit:
        os.close(fd)
        raise FileRefused(too_large(info.st_size, limit))
    return _lines(fd, limit, line_limit)


def _lines(fd: int, limit: int, line_limit: int) -> Iterator[str]:
    try:
        held: list[bytes] = []  # the start of the line being read
        held_size = total = number = 0
        while True:
            chunk = os.read(fd, 1 << 18)
            if not chunk:
                if held:
                    yield _line_text(b"".join(held), number + 1, line_limit)
                return
            total += len(chunk)
            if total > limit:
                raise FileRefused(too_large(total, limit))
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                held.append(chunk[start:end])
                number += 1
                yield _line_text(b"".join(held), number, line_limit)
                held, held_size, start = [], 0, end + 1
            if start < len(chunk):
                held.append(chunk[start:])
                held_size += len(chunk) - start
                if held_size > line_limit:
                    raise FileRefused(f"line {number + 1} is longer than {line_limit:,} bytes and was not read")
    except OSError as error:
        raise _cannot("read", error) from None
    finally:
        os.close(fd)


def _line_text(data: bytes, number: int, line_limit: int) -> str:
    if len(data) > line_limit:
        raise FileRefused(f"line {number} is longer than {line_limit:,} bytes and was not read")
    try:
        return data.decode("utf-8").removesuffix("\r")
    except UnicodeDecodeError as error:
        raise FileRefused(f"line {number} is not valid UTF-8 (byte {error.start})") from None


_BOMS = (  # UTF-32 first: its little-endian mark begins with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def decode_text(data: bytes) -> str:
    """Text from UTF-8 (with or without a byte-order mark) or UTF-16/32 with one; FileRefused otherwise."""
    encoding, body = "utf-8", data
    for bom, name in _BOMS:
        if data.startswith(bom):
            encoding, body = name, data[len(bom):]
            break
    else:
        if b"\x00" in data:
            raise FileRefused("the file is binary (it contains NUL bytes), not UTF-8 text")
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as error:
        label = "UTF-8" if encoding == "utf-8" else encoding.upper()
        raise FileRefused(f"the file is not valid {label} (byte {error.start + len(data) - len(body)})") from None
    if "\x00" in text:
        raise FileRefused("the file is binary (it contains NUL characters), not text")
    return text


def read_text(path: str, *, root: str | None = None, limit: int = MAX_TEXT_BYTES) -> str:
    """`read_bytes` then `decode_text`."""
    return decode_text(read_bytes(path, root=root, limit=limit))
