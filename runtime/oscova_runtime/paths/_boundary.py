"""The file gateway's boundary: what is inside a folder (`is_inside`, `Boundary`), why a file is refused
(`FileRefused`), a path resolved and an opened file checked again, and the private folders of the cache."""

from __future__ import annotations

import errno
import os
import stat

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


def _check_private(info: os.stat_result, what: str) -> None:
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        raise NotPrivate(f"the {what} is not owned by you (its owner is user {info.st_uid})")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise NotPrivate(f"other users can write to the {what} (mode {stat.S_IMODE(info.st_mode):04o})")


def refusal_note(name: str, refused: FileRefused) -> str:
    """What stands where a refused file's text would have gone (a prompt, a preview): `[NAME: the reason]`."""
    return f"[{name}: {refused}]"
