"""The one file gateway: every file the product reads or writes inside a workspace, in its `.oscova/` folder
and in the user's cache goes through this module, and so does every listing of their folders
(`tests/test_architecture.py` fails on any other open, write, rename, removal or listing in production code).

The rules, everywhere: regular files only (a FIFO, a device, a socket or a `/proc` entry is refused before it
can hang a reader or fill its memory); reads bounded (a file over its limit is refused by its size, not read
whole; line readers are bounded per line too); nothing read, written, listed or removed past the boundary
folder given as `root` (its real path: `..` and symlinks included); files opened with `O_NOFOLLOW` on their
real path and the folder checked again once open, so a link swapped in meanwhile is refused too; whole files
written under a temporary name created exclusively beside them and renamed into place.

- `is_inside(path, folder)`: compares real paths (or, with `real=False`, the paths as written); `Boundary`
  answers it for the many paths of one pass.
- Reading: `identity` (a file's size, times and inode, for a cache that compares them instead of reading),
  `read_bytes` / `read_text` (a whole file, at most `limit`), `read_head` (the first bytes of a file
  that may be cut short), `read_lines` (a text file streamed line by line: transcripts and cases),
  `open_regular` (a descriptor, for `filecache`).
- Writing: `write_file` (a whole file, atomically, optionally only when none exists), `copy_file`,
  `write_text` (in place or appended: tools, memory, personal context), `populate_folder` and `make_link`
  (a scratch copy of a tree), `append_to_output`,
  `LineLog` (lines appended as a run goes: a full disk cuts it at a line end, never inside a line, and leaves
  room for a last line saying why), `open_for_writing`.
- Folders: `make_folders`, `scan_folder`, `walk` (links to folders are never followed), `remove_file`,
  `remove_folder`, `private_folder` (the cache's: created 0700, refused unless the user alone can write it),
  `scratch_folder` (a private temporary folder).
- `decode_text`: UTF-8 with or without a byte-order mark, UTF-16 and UTF-32 with one.

A file outside every workspace that the environment names for output has a function of its own, named for
it: `append_to_output` (GitHub's `$GITHUB_STEP_SUMMARY`, which `review --format github` writes); every other
write has a root. `make_link` makes the symlinks of a tree that `review` copies into a scratch folder, never
one leading out of it.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterable, Iterator

MAX_TEXT_BYTES = 1_000_000
"""The largest workspace text file read (definitions, templates, host configuration)."""

OUTSIDE_ROOT = "outside the workspace root; only files inside it are read"


class FileRefused(Exception):
    """A file that is not read (or written); the message says why in a sentence fragment ("it is a FIFO, not a
    regular file, and was not read"). `cause`: for a failed operation, just why it failed ("the disk was full")."""

    def __init__(self, message: str, *, cause: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause or message


class NotPrivate(FileRefused):
    """A folder or file that others could have written (not the user's own, or writable by group or others):
    refused where what it holds is believed as it is (the cache)."""


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
        self._held: dict[str, bool] = {}

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
        return self.holds(self.real(path))

    def holds_folder(self, folder: str) -> bool:
        """Whether the folder `folder` (absolute, as written) is, after symlinks, the root or below it, and not
        in a view of the running system (`/proc`); remembered for the pass."""
        found = self._held.get(folder)
        if found is None:
            real = self.real(folder + os.sep)
            found = self._held[folder] = self.holds(real) and not any(
                real == v or real.startswith(v + os.sep) for v in _SYSTEM_VIEWS)
        return found

    def holds(self, real: str) -> bool:
        """Whether the real path `real` (already resolved) is the root or below it."""
        return real == self.real_root or real.startswith(self._prefix)


def resolve_in_root(root: str, base: str, target: str) -> str | None:
    """`target` joined to `base` (absolute targets taken as they are), or None when its real path leaves
    `root`. The returned path is the lexical one, as the workspace indexes files by it."""
    path = os.path.normpath(os.path.join(base, target))
    return path if is_inside(path, root) else None


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))
_SYSTEM_VIEWS = ("/proc", "/sys")
"""Folders whose "files" are views of the running system (`/proc/self/fd/0` is the reader's own stdin)."""
_OS_ERRORS = {errno.ENOSPC: "the disk was full", errno.EDQUOT: "the disk quota was exceeded",
              errno.EROFS: "the file system is read-only", errno.EFBIG: "the file grew past the largest size allowed",
              errno.EIO: "an input/output error occurred", errno.EACCES: "permission was denied",
              errno.EPERM: "the operation is not permitted", errno.ENOENT: "there is no such file or folder",
              errno.ELOOP: "a symlink was swapped in while it was opened"}
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | _NOFOLLOW | getattr(os, "O_NOCTTY", 0) \
    | getattr(os, "O_CLOEXEC", 0)


def describe_os_error(error: OSError) -> str:
    """Why a file operation failed, in words ("the disk was full")."""
    return _OS_ERRORS.get(error.errno or 0) or str(error.strerror or error)


def _cannot(done: str, error: OSError) -> FileRefused:
    return FileRefused(f"the file cannot be {done}: {describe_os_error(error)}", cause=describe_os_error(error))


def _not_regular(mode: int, done: str = "read") -> str | None:
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return f"it is {kind}, not a regular file, and was not {done}"


def too_large(size: int, limit: int, unit: str = "bytes") -> str:
    return f"the file is larger than {limit // 1_000_000 or 1} MB ({size:,} {unit}, the limit is {limit:,}) " \
           "and was skipped"


def _boundary(root: str | Boundary | None) -> Boundary | None:
    return root if isinstance(root, Boundary) or root is None else Boundary(root)


def _resolve(path: str, root: str | Boundary | None, done: str = "read") -> str:
    """The real path of `path`, or FileRefused: a NUL byte in it, outside `root` (after symlinks), or in a
    view of the running system (`/proc`, `/sys`)."""
    if "\x00" in os.fspath(path):
        raise FileRefused("the path contains a NUL byte, which no file name can hold")
    boundary = _boundary(root)
    try:
        real = boundary.real(path) if boundary is not None else os.path.realpath(path)
    except OSError as error:  # a folder on the way removed or swapped while it was resolved
        raise _cannot(done, error) from None
    if boundary is not None and not boundary.holds(real):
        where = OUTSIDE_ROOT if done == "read" else f"outside the workspace root; only files inside it are {done}"
        raise FileRefused(f"it is {where}" if not os.path.islink(path) else f"it is a symlink that leads {where}")
    view = next((v for v in _SYSTEM_VIEWS if real == v or real.startswith(v + os.sep)), None)
    if view is not None:
        raise FileRefused(f"it is in {view}, a view of the running system, not a file, and was not {done}")
    return real


Identity = tuple[int, int, int, int, int]
"""A file's or folder's identity as a cache compares it: (size, mtime_ns, ctime_ns, inode, device)."""


def identity(path: str, *, root: Boundary) -> Identity | None:
    """The identity of the regular file or folder at `path` itself (`lstat`: a link is not followed), or None:
    missing, a link, anything else, in a folder whose real path leaves `root`, or in `/proc`. What a cache
    compares to know a file unchanged without reading it, as git's index does (whether the identity is too
    recent to be believed, git's "racy" rule, is the caller's)."""
    if "\x00" in path:
        return None
    plain = path.startswith(os.sep) and f"{os.sep}..{os.sep}" not in f"{path}{os.sep}"  # absolute, no `..`
    absolute = path if plain else os.path.abspath(path)
    try:
        if absolute != root.root and not root.holds_folder(absolute.rpartition(os.sep)[0] or os.sep):
            return None
        info = os.lstat(absolute)
    except OSError:
        return None
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        return None
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev


def check_inside(path: str, root: str | Boundary | None, done: str = "read") -> None:
    """FileRefused when `path` (after symlinks) leaves `root` (None: no boundary) or is a `/proc` entry."""
    _resolve(path, root, done)


def _check_opened(fd: int, real: str, boundary: Boundary | None, done: str) -> os.stat_result:
    """`fstat(fd)`, or FileRefused (and `fd` closed) unless `fd` is a regular file still inside `boundary`: the
    real path of the opened file (`/proc/self/fd`), or else of its folder again, so a folder swapped for a
    link between the check and the open is caught."""
    info = None
    try:
        info = os.fstat(fd)
        why = _not_regular(info.st_mode, done)
        if why is None and boundary is not None:
            try:
                opened = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:  # no /proc (macOS): the folder's real path again
                opened = os.path.join(os.path.realpath(os.path.dirname(real)), os.path.basename(real))
            if opened != real and not boundary.holds(opened):
                why = f"it was moved outside the workspace root while it was opened, and was not {done}"
    except OSError as error:
        why = str(_cannot(done, error))
    if why is not None or info is None:
        os.close(fd)
        raise FileRefused(why or "it cannot be read")
    return info


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


# ------------------------------------------------------------------------------------------ writing


def make_folders(folder: str, *, root: str | Boundary | None = None, mode: int = 0o777) -> None:
    """Makes `folder` and its missing parents (each with `mode`, less the umask), or FileRefused: it leads
    outside `root` (checked before any folder is made, and again after: a folder swapped for a link meanwhile),
    or it cannot be made."""
    _resolve(folder, root, "written")
    missing = []
    place = os.path.abspath(folder)
    while not os.path.lexists(place):
        missing.append(place)
        place = os.path.dirname(place)
    try:
        for path in reversed(missing):
            try:
                os.mkdir(path, mode)
            except FileExistsError:
                pass
    except OSError as error:
        raise _cannot("written", error) from None
    _resolve(folder, root, "written")
    if not os.path.isdir(folder):
        raise FileRefused("it is not a folder, and nothing was written in it")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_file(path: str, data: bytes, *, root: str | Boundary | None = None, exclusive: bool = False,
               private: bool = False) -> None:
    """Writes a whole file: its folders made, then a temporary file created exclusively beside it
    (`O_CREAT | O_EXCL | O_NOFOLLOW`), written and renamed into place, so a reader sees the old file or the new
    one and nothing is written through a link. FileRefused when the folder (after symlinks) leads outside
    `root` or the file cannot be written. `exclusive`: refused when a file exists there (a hard link, which
    never replaces). The new file keeps an existing file's permissions, else 0666 less the umask; `private`:
    0600 (a cache file)."""
    folder, name = os.path.split(os.path.abspath(path))
    make_folders(folder, root=root)
    real_folder = _resolve(folder, root, "written")
    target = os.path.join(real_folder, name)
    mode = 0o600 if private else _kept_mode(target)
    temporary = os.path.join(real_folder, f".{name}.{os.urandom(4).hex()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                     0o600 if private else 0o666)
    except OSError as error:
        raise _cannot("written", error) from None
    try:
        try:
            _write_all(fd, data)
            if mode is not None:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        if os.path.realpath(real_folder) != real_folder:
            raise FileRefused("its folder was swapped for a link while it was written, and it was not written")
        _put_in_place(temporary, target, exclusive)
    except OSError as error:
        raise _cannot("written", error) from None
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


def _kept_mode(target: str) -> int | None:
    try:
        info = os.lstat(target)
    except OSError:
        return None
    return stat.S_IMODE(info.st_mode) if stat.S_ISREG(info.st_mode) else None


def _put_in_place(temporary: str, target: str, exclusive: bool) -> None:
    if not exclusive:
        os.replace(temporary, target)
        return
    try:
        os.link(temporary, target)  # fails when anything is there, a dangling link included
    except FileExistsError:
        raise FileRefused("a file of that name exists, and it was not replaced") from None
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        if os.path.lexists(target):  # a file system without hard links
            raise FileRefused("a file of that name exists, and it was not replaced") from None
        os.replace(temporary, target)


def copy_file(source: str, target: str, *, source_root: str | Boundary | None, root: str | Boundary | None,
              limit: int, exclusive: bool = False) -> None:
    """`read_bytes(source)` inside `source_root`, then `write_file(target)` inside `root`."""
    write_file(target, read_bytes(source, root=source_root, limit=limit), root=root, exclusive=exclusive)


def make_link(path: str, target: str, *, root: str | Boundary) -> None:
    """Creates the symlink `path` -> `target` (a relative target, as git stores one), its folder made inside
    `root`; FileRefused when the link would lead outside `root` (as written, or once made: a link on the way,
    `..` after one), when something is there already, or when it cannot be made. A link refused once made is
    removed again, so none is left leading out."""
    boundary = _boundary(root)
    folder, name = os.path.split(os.path.abspath(path))
    make_folders(folder, root=boundary)
    real_folder = _resolve(folder, boundary, "written")
    if "\x00" in target or os.path.isabs(target) or (
            boundary is not None and not is_inside(os.path.join(folder, target), boundary.root, real=False)):
        raise FileRefused("it is a symlink that leads outside the workspace root, and it was not made")
    link = os.path.join(real_folder, name)
    try:
        os.symlink(target, link)
    except FileExistsError:
        raise FileRefused("a file of that name exists, and it was not replaced") from None
    except OSError as error:
        raise _cannot("made", error) from None
    if boundary is not None and not is_inside(link, boundary.real_root):
        os.unlink(link)
        raise FileRefused("it is a symlink that leads outside the workspace root, and it was not made")


def populate_folder(folder: str, files: Iterable[tuple[str, bytes]]) -> dict[str, str]:
    """Writes new files into `folder`, a private folder this process made for itself (a scratch copy of a
    tree), each by its `/`-separated relative path, with the folders on its way. Every folder is opened with
    `O_NOFOLLOW` and each file created with `O_EXCL | O_NOFOLLOW` relative to its folder's descriptor, so no
    name is resolved through a link and nothing lands outside `folder`; one check per folder, not per file.
    Returns the paths not written, each with why (a name that is not a plain relative path, a file where a
    folder goes, a full disk)."""
    refused: dict[str, str] = {}
    descriptors: dict[tuple[str, ...], int] = {(): os.open(folder, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)}
    try:
        for relative, data in files:
            parts = tuple(relative.split("/"))
            if any(part in ("", ".", "..") or "\x00" in part for part in parts):
                refused[relative] = "its name is not a plain relative path, and it was not written"
                continue
            try:
                fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                             0o600, dir_fd=_folder_descriptor(descriptors, parts[:-1]))
                try:
                    _write_all(fd, data)
                finally:
                    os.close(fd)
            except OSError as error:
                refused[relative] = str(_cannot("written", error))
    finally:
        for fd in descriptors.values():
            os.close(fd)
    return refused


def _folder_descriptor(descriptors: dict[tuple[str, ...], int], parts: tuple[str, ...]) -> int:
    """The descriptor of the folder `parts` below the first one, made (and opened without following a link)
    folder by folder where missing."""
    found = descriptors.get(parts)
    if found is not None:
        return found
    parent = _folder_descriptor(descriptors, parts[:-1])
    try:
        os.mkdir(parts[-1], 0o700, dir_fd=parent)
    except FileExistsError:
        pass
    fd = descriptors[parts] = os.open(parts[-1], os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=parent)
    return fd


def append_to_output(path: str, text: str) -> None:
    """Appends UTF-8 text to a file outside every workspace that the environment names for output (GitHub's
    `$GITHUB_STEP_SUMMARY`): created when missing, a regular file only, and the file itself never a link."""
    if os.path.islink(path):  # the name given is the file meant: a link there could point anywhere
        raise FileRefused("it is a symlink, and an output file is never written through one")
    write_text(path, text, root=None, append=True)


def write_text(path: str, text: str, *, root: str | None = None, append: bool = False) -> None:
    """Writes (or appends) UTF-8 text to the regular file at `path` in place, creating it and its folders, or
    FileRefused (see `open_for_writing`)."""
    fd = open_for_writing(path, root=root, append=append)
    try:
        if not append:
            os.ftruncate(fd, 0)
        _write_all(fd, text.encode("utf-8", "surrogatepass"))
    except OSError as error:
        raise _cannot("written", error) from None
    finally:
        os.close(fd)


def open_for_writing(path: str, *, root: str | Boundary | None = None, append: bool = False) -> int:
    """A write descriptor of the regular file at `path`, created with its folders, or FileRefused: the file or a
    folder on its way leads outside `root` (checked before any folder is made), or it is a FIFO, a device or a
    socket (opened without waiting, and refused before anything is written)."""
    boundary = _boundary(root)
    make_folders(os.path.dirname(os.path.abspath(path)), root=boundary)
    real = _resolve(path, boundary, "written")
    try:
        fd = os.open(real, _WRITE_FLAGS | (os.O_APPEND if append else 0), 0o666)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a FIFO nobody reads (or a socket): opening it to write fails, not waits
            raise FileRefused(_not_regular(_mode(real), "written") or "it is not a regular file") from None
        raise _cannot("written", error) from None
    _check_opened(fd, real, boundary, "written")
    return fd


def _mode(path: str) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


RESERVE_SUFFIX = ".reserve"


def _remove_abandoned_reserves(folder: str, keep: str | None) -> None:
    """Removes the reserves of `LineLog`s whose process ended without closing them (killed, crashed): a live log
    holds a lock on its reserve, so a reserve that can be locked is nobody's. Links and other kinds of file are
    left alone."""
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(".") and e.name.endswith(RESERVE_SUFFIX)]
    except OSError:
        return
    for entry in entries:
        if entry.path == keep or not entry.is_file(follow_symlinks=False):
            continue
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)
        except OSError:
            continue
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: a live log holds it
                os.unlink(entry.path)
        except OSError:
            pass
        finally:
            os.close(fd)


LINE_LOG_RESERVE = 8192
"""Bytes a `LineLog` sets aside at its start (a file beside it) and gives back when a write fails: room for a
last line saying why, on a disk that filled up (one block of most file systems, and a tmpfs page, twice)."""


class LineLog:
    """A file of whole lines appended as something runs (a run's transcript). When a write fails (a full disk,
    a quota, a read-only file system), the file is cut back to its last whole line, so it never ends inside a
    line; `end` then gives back the space set aside at the start and writes one last line (why it stopped).
    Raises FileRefused when the file cannot be opened (see `open_for_writing`)."""

    def __init__(self, path: str, *, root: str | Boundary | None = None, reserve: int = LINE_LOG_RESERVE) -> None:
        self.path = path
        self._fd = open_for_writing(path, root=root, append=True)
        self.size = os.fstat(self._fd).st_size
        """The end of the last whole line written."""
        self.lines = 0
        self.failure: OSError | None = None
        """The error that stopped the writes, if one did."""
        folder, name = os.path.split(os.path.realpath(path))
        self._reserve: str | None = os.path.join(folder, f".{name}{RESERVE_SUFFIX}")
        self._reserve_fd = -1
        try:
            # Held open and locked while the log runs, so that a log opened later in the folder can tell the
            # reserve of a live run from one a killed process left behind (`_remove_abandoned_reserves`).
            self._reserve_fd = os.open(self._reserve, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
            fcntl.flock(self._reserve_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _write_all(self._reserve_fd, bytes(reserve))
        except OSError:  # no room even for that: the log still runs, without the last word
            self._give_back()
        _remove_abandoned_reserves(folder, keep=self._reserve)

    def append(self, data: bytes, lines: int = 1) -> bool:
        """Appends `data` (whole lines: `lines` of them); False, and nothing of it kept, once a write failed."""
        if self.failure is not None or self._fd < 0:
            return False
        try:
            _write_all(self._fd, data)
        except OSError as error:
            self.failure = error
            self._cut()
            return False
        self.size += len(data)
        self.lines += lines
        return True

    def end(self, line: bytes) -> bool:
        """After a failure: gives back the reserve and appends `line` (one whole line); whether it was written."""
        self._give_back()
        if self._fd < 0:
            return False
        try:
            _write_all(self._fd, line)
        except OSError:
            self._cut()
            return False
        self.size += len(line)
        self.lines += 1
        return True

    def _cut(self) -> None:
        try:
            os.ftruncate(self._fd, self.size)
        except OSError:
            pass

    def _give_back(self) -> None:
        if self._reserve is not None:
            try:
                os.unlink(self._reserve)
            except OSError:
                pass
            self._reserve = None
        if self._reserve_fd >= 0:
            os.close(self._reserve_fd)  # the space comes back here (an unlinked file lives while it is open)
            self._reserve_fd = -1

    def close(self) -> None:
        self._give_back()
        if self._fd >= 0:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = -1


# ------------------------------------------------------------------------------------------ folders


def scan_folder(folder: str, *, root: str | Boundary | None = None) -> list[os.DirEntry[str]]:
    """The entries of `folder`, sorted by name (`DirEntry.path` is under `folder` as written), or FileRefused:
    the folder (after symlinks) leads outside `root`, or it cannot be listed (missing, not a folder)."""
    _resolve(folder, root, "listed")
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda entry: entry.name)
    except OSError as error:
        raise FileRefused(f"the folder cannot be listed: {describe_os_error(error)}") from None


def walk(top: str, *, root: str | Boundary | None = None) -> Iterator[tuple[str, list[str], list[str]]]:
    """`os.walk(top)` without following links to folders (a linked folder is listed among the files' siblings,
    never descended into), or FileRefused at once when `top` (after symlinks) leads outside `root`. Prune
    `dirnames` in place as with `os.walk`."""
    _resolve(top, root, "listed")
    return os.walk(top, followlinks=False)


def remove_file(path: str, *, root: str | Boundary | None = None) -> bool:
    """Removes the file (or link: never what it leads to) at `path`, its folder inside `root` after symlinks;
    False when there was none, FileRefused when it cannot be removed."""
    folder, name = os.path.split(os.path.abspath(path))
    real = os.path.join(_resolve(folder, root, "removed"), name)
    try:
        os.unlink(real)
    except FileNotFoundError:
        return False
    except OSError as error:
        raise _cannot("removed", error) from None
    return True


def remove_folder(path: str, *, root: str | Boundary | None = None) -> bool:
    """Removes the empty folder at `path` inside `root`; False when it is not there or not empty."""
    try:
        os.rmdir(_resolve(path, root, "removed"))
    except OSError:
        return False
    return True


def private_folder(path: str, *, follow: bool = True) -> None:
    """Makes `path` (and its missing parents) with mode 0700, then `NotPrivate` unless only the user can write
    in it: owned by the user, writable by neither its group nor others; FileRefused when it is not a folder
    (`follow=False`: a link to one is not either) or cannot be made. For folders whose files are believed as
    they are (the cache)."""
    make_folders(path, mode=0o700)
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except OSError as error:
        raise _cannot("used", error) from None
    if not stat.S_ISDIR(info.st_mode):
        raise FileRefused("it is a symlink, not a folder" if stat.S_ISLNK(info.st_mode) else "it is not a folder")
    _check_private(info, "folder")


def _check_private(info: os.stat_result, what: str) -> None:
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        raise NotPrivate(f"the {what} is not owned by you (its owner is user {info.st_uid})")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise NotPrivate(f"other users can write to the {what} (mode {stat.S_IMODE(info.st_mode):04o})")


@contextlib.contextmanager
def scratch_folder(prefix: str) -> Iterator[str]:
    """A private temporary folder (mode 0700, outside any workspace), removed with what it holds afterwards."""
    import tempfile  # only `test --update` needs one: not loaded at start

    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield folder


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
