"""Where a workspace path may lead, and how a file there is read: one boundary for the checker, the editor
features, preview and runs.

- `is_inside(path, folder)`: compares real paths, so neither `..` nor a symlink leaves the folder (or, with
  `real=False`, the paths as written).
- `read_bytes` / `read_text`: only regular files inside the root, at most `limit` bytes read (a symlink to
  `/dev/zero`, `/dev/stdin` or a FIFO is refused before it can hang a reader or fill its memory).
- `read_head`: the first `limit` bytes of such a file (a document or tool read that may be cut short).
- `write_text`: writes or appends to a regular file inside the root, never through a link leading out, and
  never waits on a FIFO.
- `decode_text`: UTF-8 with or without a byte-order mark, UTF-16 and UTF-32 with one.
"""

from __future__ import annotations

import codecs
import errno
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


class Boundary:
    """`is_inside(path, root)` for the many paths of one pass over a workspace (a check, a load): the root's
    real path and each folder's are resolved once, and a path costs one `lstat` (a symlink is still resolved
    in full). Folders are remembered for the pass only: a boundary is made for a pass and then dropped, so
    a folder later swapped for a link is seen by the next pass."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.path.abspath(root)
        self.real_root = os.path.realpath(self.root)
        self._prefix = self.real_root.rstrip(os.sep) + os.sep
        self._folders: dict[str, str] = {}

    def real(self, path: str | os.PathLike[str]) -> str:
        """`os.path.realpath(path)`, with the folder part remembered."""
        absolute = os.fspath(path)
        if not os.path.isabs(absolute):
            absolute = os.path.join(os.getcwd(), absolute)
        if ".." in absolute.split(os.sep):  # `..` after a link goes up from where the link leads: resolve it all
            return os.path.realpath(absolute)
        folder, name = os.path.split(absolute)
        real_folder = self._folders.get(folder)
        if real_folder is None:
            real_folder = self._folders[folder] = os.path.realpath(folder)
        if not name:
            return real_folder
        try:
            if stat.S_ISLNK(os.lstat(absolute).st_mode):
                return os.path.realpath(absolute)
        except OSError:  # missing: realpath keeps the name as written
            pass
        return os.path.join(real_folder, name)

    def contains(self, path: str | os.PathLike[str]) -> bool:
        real = self.real(path)
        return real == self.real_root or real.startswith(self._prefix)


def resolve_in_root(root: str, base: str, target: str) -> str | None:
    """`target` joined to `base` (absolute targets taken as they are), or None when its real path leaves
    `root`. The returned path is the lexical one, as the workspace indexes files by it."""
    path = os.path.normpath(os.path.join(base, target))
    return path if is_inside(path, root) else None


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def _not_regular(mode: int, done: str = "read") -> str | None:
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"it is {kind}, not a regular file, and was not {done}"


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


def check_inside(path: str, root: str | Boundary | None, done: str = "read") -> None:
    """FileRefused when `path` (after symlinks) leaves `root` (None: no boundary)."""
    if root is None:
        return
    if not (root.contains(path) if isinstance(root, Boundary) else is_inside(path, root)):
        where = OUTSIDE_ROOT if done == "read" else f"outside the workspace root; only files inside it are {done}"
        raise FileRefused(f"it is {where}" if not os.path.islink(path) else f"it is a symlink that leads {where}")


def _read_upto(path: str, root: str | Boundary | None, count: int) -> tuple[bytes, int]:
    """At most `count` bytes of the regular file at `path` inside `root`, and its size as `fstat` saw it."""
    check_inside(path, root)
    fd = open_regular(path)
    try:
        chunks: list[bytes] = []
        total = 0
        while total < count:
            chunk = os.read(fd, min(1 << 20, count - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks), os.fstat(fd).st_size
    except OSError as error:
        raise FileRefused(f"the file cannot be read: {error.strerror or error}") from None
    finally:
        os.close(fd)


def read_bytes(path: str, *, root: str | Boundary | None = None, limit: int = MAX_TEXT_BYTES) -> bytes:
    """The file's bytes, or FileRefused: outside `root` (after symlinks), not a regular file, or larger than
    `limit` (found while reading: at most `limit + 1` bytes are read)."""
    data, size = _read_upto(path, root, limit + 1)
    if len(data) > limit:
        raise FileRefused(too_large(max(len(data), size), limit))
    return data


def read_head(path: str, *, root: str | None = None, limit: int) -> tuple[bytes, bool]:
    """The first `limit` bytes of the file and whether more follow, or FileRefused as `read_bytes` (never the size)."""
    data, _ = _read_upto(path, root, limit + 1)
    return data[:limit], len(data) > limit


def write_text(path: str, text: str, *, root: str | None = None, append: bool = False) -> None:
    """Writes (or appends) UTF-8 text to the regular file at `path`, creating it and its folders, or FileRefused
    (see `open_for_writing`)."""
    with os.fdopen(open_for_writing(path, root=root, append=append), "a" if append else "w",
                   encoding="utf-8") as handle:
        if not append:
            handle.truncate(0)
        handle.write(text)


def open_for_writing(path: str, *, root: str | None = None, append: bool = False) -> int:
    """A write descriptor of the regular file at `path`, created with its folders, or FileRefused: the file or a
    folder on its way leads outside `root` (checked before any folder is made), or it is a FIFO, a device or a
    socket (opened without waiting, and refused before anything is written)."""
    check_inside(path, root, "written")
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        check_inside(path, root, "written")  # a folder swapped for a link while it was made
        flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags | (os.O_APPEND if append else 0), 0o666)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a FIFO nobody reads (or a socket): opening it to write fails, not waits
            raise FileRefused(_not_regular(_mode(path), "written") or "it is not a regular file") from None
        raise FileRefused(f"the file cannot be written: {error.strerror or error}") from None
    why = _not_regular(os.fstat(fd).st_mode, "written")
    if why:
        os.close(fd)
        raise FileRefused(why)
    return fd


def _mode(path: str) -> int:
    try:
        return os.stat(path).st_mode
    except OSError:
        return 0


def refusal_note(name: str, refused: FileRefused) -> str:
    """What stands where a refused file's text would have gone (a prompt, a preview): `[NAME: the reason]`."""
    return f"[{name}: {refused}]"


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
