"""Where the cache lives, and how one of its files is read and written: every rule about trusting a file
there is here, once, whatever the file holds (`cache` for the facts, `stored_results` for a check's results).

Where: in the user's cache directory (`$OSCOVA_LSP_CACHE_DIR`, else the platform's, from `platformdirs`: on Linux
`$XDG_CACHE_HOME/oscova-lsp`, else `~/.cache/oscova-lsp`), one folder per workspace root, named by a hash of the root's real path, both created
with mode 0700. Never in the workspace: a cloned repository could ship entries whose facts say "no syntax
error" for a broken template and so hide its problems; the user's own cache directory is written by the
user's own runs only. So it must be the user's alone: a cache directory or folder another user owns, or that
its group or others can write, is not used at all (the check runs without the cache, and says so once), and
a cache file another user owns or others can write is not believed. Every read and write goes through the
file gateway (`oscova_runtime.paths`): a FIFO, a device or a link in place of a cache file is ignored, never
waited on or read whole.

Format: JSON (never pickle or marshal: reading the cache must not be able to run code). The first line is a
header naming the format, the engine key and the blake2b digest of the second line; in `facts.json` the
second maps each file's path (relative to the root) to [digest of its text, its facts]; in `results.json` it
holds the `world` digest, the disk questions with their answers, the notices and every file's diagnostics. A file whose header, engine key,
root or digest does not match (corrupt, truncated, written by another version) is ignored as a whole; an
entry of the wrong shape is ignored alone; either way those files are parsed again and the file rewritten.
Writes go to a temporary file renamed over the old one (`paths.write_file`), so a reader, say another `check`
at the same time, sees the old cache or the new one, never half of one. At most `MAX_WORKSPACES` workspace
folders are kept (the least recently written go first).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterator
from typing import Any

from oscova_runtime.paths import (
    FileRefused,
    NotPrivate,
    private_folder,
    read_bytes,
    remove_file,
    remove_folder,
    scan_folder,
    write_file,
)

ENV_DIR = "OSCOVA_LSP_CACHE_DIR"
ENV_OFF = "OSCOVA_LSP_NO_CACHE"
MAX_WORKSPACES = 64
STALE_TEMPORARY_SECONDS = 3600
"""A temporary file this old was left by a run that died while writing: removed."""
MAX_CACHE_BYTES = 1_000_000_000
"""The largest cache file read (the facts of 10,000 files take a few tens of MB)."""
_MAGIC = "oscova-lsp facts"
FACTS_FILE = "facts.json"
RESULTS_FILE = "results.json"

log = logging.getLogger(__name__)
_told: set[str] = set()
"""The cache folders whose refusal was said already (once a process)."""


def cache_disabled() -> bool:
    """`OSCOVA_LSP_NO_CACHE` set to anything but empty, 0, false or no."""
    return os.environ.get(ENV_OFF, "").strip().lower() not in ("", "0", "false", "no")


def cache_home() -> str:
    """The folder holding every workspace's cache."""
    explicit = os.environ.get(ENV_DIR)
    if explicit:
        return os.path.abspath(explicit)
    import platformdirs  # the platform's own place: XDG on Linux, ~/Library/Caches on macOS, %LOCALAPPDATA% on Windows

    return platformdirs.user_cache_dir("oscova-lsp", appauthor=False)


def cache_folder(root: str) -> str:
    """The cache folder of the workspace at `root`."""
    real = os.path.realpath(root)
    return os.path.join(cache_home(), hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:24])


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Decoding and encoding facts make many small objects and no cycles: with a large workspace in memory,
    the collector would only walk it again and again."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def usable_folder(folder: str) -> bool:
    """Makes the cache home and `folder` (mode 0700); whether both are the user's alone (`paths.private_folder`).
    A folder someone else could have written is not used at all, and the user is told once."""
    for place, follow in ((os.path.dirname(folder), True), (folder, False)):  # the home may be a link the user made
        try:
            private_folder(place, follow=follow)
        except NotPrivate as refused:
            if place not in _told:
                _told.add(place)
                log.warning("The cache folder %s is not used: %s; every check runs without the cache until it is "
                            "the user's alone (`chmod 700 %s`)", place, refused, place)
            return False
        except FileRefused:  # cannot be made (a read-only home): no cache, as with none configured
            return False
    return True


def read_entries(path: str, engine: str, root: str) -> dict[str, Any] | None:
    """The entries of a valid cache file, or None (missing, corrupt, truncated, foreign, not a regular file
    inside its folder, or not the user's own: another owner, or writable by others)."""
    try:
        data = read_bytes(path, root=os.path.dirname(path), limit=MAX_CACHE_BYTES, private=True)
    except FileRefused:
        return None
    header_line, newline, body = data.partition(b"\n")
    if not newline:
        return None
    try:
        header = json.loads(header_line)
        if not (isinstance(header, dict) and header.get("format") == _MAGIC and header.get("engine") == engine
                and header.get("root") == root and header.get("digest") == _body_digest(body)):
            return None
        entries = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser's limit
        return None
    return entries if isinstance(entries, dict) else None


def _body_digest(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def write_entries(folder: str, name: str, engine: str, root: str, entries: dict[str, Any]) -> bool:
    body = json.dumps(entries, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    header = json.dumps({"format": _MAGIC, "engine": engine, "root": root, "digest": _body_digest(body)},
                        ensure_ascii=False).encode("utf-8", "surrogatepass")
    if not usable_folder(folder):
        return False
    _ignore_in_git(folder)
    try:  # a temporary file (mode 0600) renamed into place: a reader sees the old cache or the new one
        write_file(os.path.join(folder, name), header + b"\n" + body, root=folder, private=True)
    except FileRefused:
        return False
    _prune(os.path.dirname(folder), folder)
    return True


def _ignore_in_git(folder: str) -> None:
    """A cache home placed inside a repository (`OSCOVA_LSP_CACHE_DIR=.cache`) stays out of its commits."""
    home = os.path.dirname(folder)
    marker = os.path.join(home, ".gitignore")
    if not os.path.lexists(marker):
        with contextlib.suppress(FileRefused):
            write_file(marker, b"# Written by oscova-lsp: its facts cache is never committed.\n*\n", root=home,
                       exclusive=True)


def _prune(home: str, current: str) -> None:
    """Keeps the `MAX_WORKSPACES` most recently written workspace folders; removes dead temporary files."""
    now = time.time()
    folders: list[tuple[float, str]] = []
    try:
        entries = scan_folder(home, root=home)
    except FileRefused:
        return
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        try:
            for leftover in scan_folder(entry.path, root=entry.path):
                if leftover.name.endswith(".tmp") and now - leftover.stat(follow_symlinks=False).st_mtime \
                        > STALE_TEMPORARY_SECONDS:
                    remove_file(leftover.path, root=entry.path)
            folders.append((os.stat(os.path.join(entry.path, FACTS_FILE)).st_mtime, entry.path))
        except (OSError, FileRefused):
            continue
    folders.sort(reverse=True)
    for _, folder in folders[MAX_WORKSPACES:]:
        if folder == current:
            continue
        with contextlib.suppress(FileRefused):
            for name in (FACTS_FILE, RESULTS_FILE):
                remove_file(os.path.join(folder, name), root=folder)
            remove_folder(folder, root=home)
