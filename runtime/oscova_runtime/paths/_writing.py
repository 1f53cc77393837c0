"""The file gateway's writes: whole files under an exclusive temporary name renamed into place, appends,
scratch copies of a tree, and `LineLog`, a transcript's lines."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Iterable

from ._boundary import (
    _NOFOLLOW,
    _WRITE_FLAGS,
    Boundary,
    FileRefused,
    _boundary,
    _cannot,
    _check_opened,
    _check_private,
    _not_regular,
    _resolve,
    is_inside,
)
from ._reading import read_bytes


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
