"""The file gateway's folder listings, walks and removals: links to folders never followed, nothing past the
boundary."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from ._boundary import Boundary, FileRefused, _cannot, _resolve, describe_os_error


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


@contextlib.contextmanager
def scratch_folder(prefix: str) -> Iterator[str]:
    """A private temporary folder (mode 0700, outside any workspace), removed with what it holds afterwards."""
    import tempfile  # only `test --update` needs one: not loaded at start

    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        yield folder
