"""Where a workspace path may lead, and how a file there is read: one boundary for the checker, the editor
features, preview and runs.

- `is_inside(path, folder)`: compares real paths, so neither `..` nor a symlink leaves the folder (or, with
  `real=False`, the paths as written).
- `read_bytes` / `read_text`: only regular files inside the root, at most `limit` bytes read (a symlink to
  `/dev/zero`, `/dev/stdin` or a FIFO is refused before it can hang a reader or fill its memory).
- `decode_text`: UTF-8 with or without a byte-order mark, UTF-16 and UTF-32 with one.
"""

from __future__ import annotations

import codecs
import os
import stat

MAX_TEXT_BYTES = 1_000_000
"""The largest workspace text file read (definitions, templates, host configuration)."""

OUTSIDE_ROOT = "outside the workspace root; only files inside it are read"


class FileRefused(Exception):
    """A file that is not read; the message says why in a sentence fragment ("it is a FIFO, not a file")."""


def is_inside(path: str | os.PathLike[str], folder: str | os.PathLike[str], *, real: bool = True) -> bool:
    """True when `path` is `folder` or lies under it: the one "is this path inside that folder" test.

    `real=True` compares real paths (symlinks resolved): the check for anything read, rendered or granted.
    `real=False` compares the absolute paths as written, without touching the disk: for paths that are
    already keys of the index (a filter over thousands of files, a path shown relative to a folder).
    """
    normal = os.path.realpath if real else os.path.abspath
    inner, outer = normal(path), normal(folder)
    return inner == outer or inner.startswith(outer.rstrip(os.sep) + os.sep)


def resolve_in_root(root: str, base: str, target: str) -> str | None:
    """`target` joined to `base` (absolute targets taken as they are), or None when its real path leaves
    `root`. The returned path is the lexical one, as the workspace indexes files by it."""
    path = os.path.normpath(os.path.join(base, target))
    return path if is_inside(path, root) else None


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"it is {kind}, not a regular file, and was not read"


def too_large(size: int, limit: int, unit: str = "bytes") -> str:
    return f"the file is larger than {limit // 1_000_000 or 1} MB ({size:,} {unit}, the limit is {limit:,}) " \
           "and was skipped"


def open_regular(path: str) -> int:
    """A read-only descriptor of the regular file at `path`, or FileRefused (a FIFO, a device, a socket...)."""
    try:
        why = _not_regular(os.stat(path).st_mode)
        if why:
            raise FileRefused(why)
        # O_NONBLOCK: a FIFO swapped in after the stat opens without waiting for a writer, and fstat refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise FileRefused(f"the file cannot be read: {error.strerror or error}") from None
    why = _not_regular(os.fstat(fd).st_mode)
    if why:
        os.close(fd)
        raise FileRefused(why)
    return fd


def read_bytes(path: str, *, root: str | None = None, limit: int = MAX_TEXT_BYTES) -> bytes:
    """The file's bytes, or FileRefused: outside `root` (after symlinks), not a regular file, or larger than
    `limit` (found while reading: at most `limit + 1` bytes are read)."""
    if root is not None and not is_inside(path, root):
        raise FileRefused(f"it is {OUTSIDE_ROOT}" if not os.path.islink(path)
                          else f"it is a symlink that leads {OUTSIDE_ROOT}")
    fd = open_regular(path)
    try:
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            size = max(total, os.fstat(fd).st_size)
            raise FileRefused(too_large(size, limit))
        return b"".join(chunks)
    except OSError as error:
        raise FileRefused(f"the file cannot be read: {error.strerror or error}") from None
    finally:
        os.close(fd)


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
