"""The workspace on disk, before anything is parsed: which files the analysis reads (their kinds), where the
workspace roots are, a file's text through the file gateway, and the questions the checks ask the disk.

It imports no parser and no pydantic model, so the warm start (`warm_start.check_by_stat`, the language server's
first milliseconds) runs on it alone; `files` and `workspace` build on it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from enum import Enum

from oscova_runtime.grants import home_folder
from oscova_runtime.paths import (
    MAX_TEXT_BYTES,
    Boundary,
    FileRefused,
    decode_text,
    is_inside,
    read_bytes,
    too_large,
    walk,
)

SCAN_DELAY_ENV = "OSCOVA_LSP_TEST_SCAN_DELAY"
"""Test only: seconds `AnalysisHost.load` sleeps before reading a root, so tests can send requests while the
initial scan surely still runs (tests/server/test_startup_race.py). Unset in real use."""
SCAN_GATE_ENV = "OSCOVA_LSP_TEST_SCAN_GATE"
"""Test only: a file path; `AnalysisHost.load` waits (at most 120 s) until that file exists before reading a
root, so a test decides when "before the workspace is read" ends, however loaded the machine is."""

NEVER_SCANNED = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".oscova"})

DEFINITION_SUFFIXES = (".agent.yaml", ".agent.yml")
TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2")
EVAL_SUFFIXES = (".eval.yaml", ".eval.yml")
HOST_FILENAMES = ("oscova.toml", "pyproject.toml")


class FileKind(Enum):
    DEFINITION = "definition"
    TEMPLATE = "template"
    HOST = "host"
    EVAL = "eval"


def file_kind(path: str) -> FileKind | None:
    name = os.path.basename(path)
    if name.endswith(DEFINITION_SUFFIXES):
        return FileKind.DEFINITION
    if name.endswith(TEMPLATE_SUFFIXES):
        return FileKind.TEMPLATE
    if name in HOST_FILENAMES:
        return FileKind.HOST
    if name.endswith(EVAL_SUFFIXES):
        return FileKind.EVAL
    return None


def decode(data: bytes) -> tuple[str | None, str | None]:
    """(text, None) or (None, why it cannot be read): UTF-8 with or without a BOM, UTF-16/32 with one."""
    if len(data) > MAX_TEXT_BYTES:
        return None, too_large(len(data), MAX_TEXT_BYTES)
    try:
        return decode_text(data), None
    except FileRefused as refused:
        return None, str(refused)


def read_text(path: str, root: str | Boundary | None = None) -> tuple[str | None, str | None]:
    """(text, None) or (None, why it was not read): a regular file, inside `root` when given (after symlinks),
    read up to the size limit and no further."""
    try:
        data = read_bytes(path, root=root)
    except FileRefused as refused:
        return None, str(refused)
    return decode(data)


_TOOL_OSCOVA = re.compile(r"^\s*\[\s*tool\s*\.\s*oscova\s*[\].]", re.MULTILINE)


def declares_oscova(text: str) -> bool:
    """Whether a pyproject.toml's text has the `[tool.oscova]` table or one of its sub-tables
    (`[tool.oscova.models.default]`), as a header line: not in a comment, not `[tool.oscovax]`."""
    return _TOOL_OSCOVA.search(text) is not None


def host_config_path(folder: str) -> str | None:
    """`oscova.toml`, else a `pyproject.toml` with `[tool.oscova]`, in `folder`; None when it holds neither."""
    candidate = os.path.join(folder, "oscova.toml")
    if os.path.isfile(candidate):
        return candidate
    pyproject = os.path.join(folder, "pyproject.toml")
    if os.path.isfile(pyproject):
        text, _ = read_text(pyproject, folder)  # through the read limits: a FIFO, a device or a link out is not read
        if text is not None and declares_oscova(text):
            return pyproject
    return None


def find_root(start: str) -> str | None:
    """The nearest folder at or above `start` holding `oscova.toml` or a `pyproject.toml` with `[tool.oscova]`."""
    current = os.path.abspath(start)
    if os.path.isfile(current):
        current = os.path.dirname(current)
    while True:
        if host_config_path(current) is not None:
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


class Roots:
    """Which workspace root holds a path: the nearest `oscova.toml` (or `[tool.oscova]` pyproject) above it,
    else the innermost editor folder holding it, else its own folder. Lookups are cached per folder."""

    def __init__(self, folders: Iterable[str]) -> None:
        self.folders: tuple[str, ...] = tuple(os.path.abspath(f) for f in folders)
        self._cache: dict[str, str | None] = {}

    def root_of(self, path: str) -> str:
        return self.root_of_folder(os.path.dirname(path))

    def root_of_folder(self, folder: str) -> str:
        if folder not in self._cache:
            self._cache[folder] = find_root(folder)
        found = self._cache[folder]
        if found is not None:
            return found
        inside = [f for f in self.folders if is_inside(folder, f)]
        return max(inside, key=len) if inside else folder


DiskAnswer = bool | str
DISK_QUESTIONS: dict[str, type] = {"inside": bool, "file": bool, "real": str, "home": str}
"""Every question the checks ask the disk (`ask_disk`), with the type of its answer: whether a path is inside
the root after symlinks, whether a file is there, a path's real path, the home folder's real path."""


def ask_disk(kind: str, path: str, root: str, boundary: Boundary | None = None) -> DiskAnswer:
    """The one place the checks' disk questions are answered: `Workspace` records each while the checks run
    (`Workspace.probes`), and the results cache asks them again before it reuses stored results."""
    if kind == "inside":
        return boundary.contains(path) if boundary is not None else is_inside(path, root)
    if kind == "file":
        return os.path.isfile(path)
    if kind == "real":
        return os.path.realpath(path)
    if kind == "home":
        return home_folder()
    raise ValueError(f"not a disk question: {kind}")


def more_files_than(root: str, limit: int) -> bool:
    """Whether `root` holds more than `limit` definitions, templates and evaluations, counted as the discovery
    walks (never-scanned folders and nested workspaces left out; `[host] exclude` is not read, so the count may
    be higher) and stopping past `limit`: it decides only how early a root is read."""
    count = 0
    try:
        for dirpath, dirnames, filenames in walk(root, root=root):
            dirnames[:] = [d for d in dirnames if d not in NEVER_SCANNED
                           and host_config_path(os.path.join(dirpath, d)) is None]
            count += sum(1 for name in filenames if file_kind(name) not in (None, FileKind.HOST))
            if count > limit:
                return True
    except FileRefused:
        return False
    return False
