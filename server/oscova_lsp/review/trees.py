"""The two sides of a review, each copied into a private scratch folder: the tree of a commit, read straight
from git objects, and the work tree as git sees it (tracked files and untracked ones no ignore rule covers).

Both sides are copied by the same rules, so what differs between them is the change and nothing else (a
memory file the work tree holds but git ignores is on neither side). Files are written through the file
gateway (`oscova_runtime.paths`) into the scratch folder only; nothing is written to the work tree. What is
not copied says why, once, in `notes`: a submodule, a blob git cannot read (a partial clone's missing
object is never fetched), a file over `MAX_COPIED_BYTES`, a symlink leading out of the repository (never
made, so nothing ever reads through it), a name that is not a safe path, a FIFO or a device in the work
tree.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

from oscova_runtime.paths import MAX_TEXT_BYTES, FileRefused, make_link, read_bytes, write_file

from . import git

MAX_COPIED_BYTES = MAX_TEXT_BYTES
"""The largest file copied: no template, definition or file a provider reads into a prompt is larger."""


@dataclass(frozen=True, slots=True)
class Link:
    """A symlink, by its target as written."""

    target: str


Content = bytes | Link


@dataclass
class Tree:
    """One side, copied: `folder` stands for the repository's top folder."""

    folder: str
    label: str
    """How the report names this side: `abc1234` or `the work tree`."""
    contents: dict[str, Content] = field(default_factory=dict)
    """Each copied file by its path relative to the repository's top (`/`-separated)."""
    notes: list[str] = field(default_factory=list)

    def local(self, relative: str) -> str:
        """The copy's path of a repository-relative path."""
        return os.path.join(self.folder, *[p for p in relative.split("/") if p])

    def relative(self, path: str) -> str:
        """The repository-relative path of a path in the copy."""
        return os.path.relpath(path, self.folder).replace(os.sep, "/")

    def write(self, relative: str, content: Content) -> None:
        try:
            if isinstance(content, Link):
                make_link(self.local(relative), content.target, root=self.folder)
            else:
                write_file(self.local(relative), content, root=self.folder)
        except FileRefused as refused:
            self.notes.append(f"`{relative}` {self.where()} was not copied: {refused}")
            return
        self.contents[relative] = content

    def where(self) -> str:
        return "in the work tree" if self.label == WORK_TREE else f"at {self.label}"


WORK_TREE = "the work tree"


def in_scope(relative: str, prefixes: Iterable[str]) -> bool:
    return any(not p or relative == p or relative.startswith(p + "/") for p in prefixes)


def _safe(relative: str) -> bool:
    parts = relative.split("/")
    return "\x00" not in relative and all(p not in ("", ".", "..", ".git") for p in parts)


def _too_large(size: int) -> str:
    return f"is {size:,} bytes, over the {MAX_COPIED_BYTES:,} a review reads, and was not copied"


def from_commit(top: str, commit: str, label: str, folder: str, prefixes: list[str]) -> Tree:
    """The tree of `commit` under `prefixes`, copied from git objects into `folder`."""
    side = Tree(folder, label)
    wanted: dict[str, git.TreeEntry] = {}
    for entry in git.tree(top, commit):
        if not in_scope(entry.path, prefixes):
            continue
        if not _safe(entry.path):
            side.notes.append(f"{entry.path!r} {side.where()} was not copied: its name is not a safe path")
        elif entry.kind == "commit":
            side.notes.append(f"`{entry.path}` {side.where()} is a submodule: its files are not reviewed")
        elif entry.kind != "blob":
            side.notes.append(f"`{entry.path}` {side.where()} is a git {entry.kind}, not a file, and was not copied")
        elif entry.size is not None and entry.size > MAX_COPIED_BYTES:
            side.notes.append(f"`{entry.path}` {side.where()} {_too_large(entry.size)}")
        else:
            wanted[entry.path] = entry
    found = git.blobs(top, (e.object for e in wanted.values()))
    links = []
    for relative, entry in wanted.items():
        data = found.get(entry.object)
        if data is None:
            side.notes.append(f"`{relative}` {side.where()} could not be read from git (its object {entry.object[:12]} "
                              "is missing from this clone) and was left out")
        elif entry.mode == "120000":
            links.append((relative, Link(data.decode("utf-8", "surrogateescape"))))
        else:
            side.write(relative, data)
    for relative, link in links:  # after every file: no file is ever written through a link
        side.write(relative, link)
    return side


def from_work_tree(top: str, folder: str, prefixes: list[str]) -> Tree:
    """The work tree under `prefixes`, as git sees it, copied into `folder`."""
    side = Tree(folder, WORK_TREE)
    links = []
    for relative in git.work_tree_files(top):
        relative = relative.rstrip("/")  # an untracked repository inside is listed as a folder
        if not in_scope(relative, prefixes):
            continue
        if not _safe(relative):
            side.notes.append(f"{relative!r} {side.where()} was not copied: its name is not a safe path")
            continue
        path = os.path.join(top, *relative.split("/"))
        try:
            mode = os.lstat(path).st_mode
        except OSError:  # deleted in the work tree, not yet in the index
            continue
        if stat.S_ISLNK(mode):
            links.append((relative, Link(os.readlink(path))))
        elif stat.S_ISDIR(mode):
            side.notes.append(f"`{relative}` {side.where()} is a submodule or a repository of its own: its files "
                              "are not reviewed")
        else:
            try:
                side.write(relative, read_bytes(path, root=top, limit=MAX_COPIED_BYTES))
            except FileRefused as refused:
                side.notes.append(f"`{relative}` {side.where()} was not copied: {refused}")
    for relative, link in links:
        side.write(relative, link)
    return side


def changed_paths(base: Tree, head: Tree) -> set[str]:
    """The repository-relative paths whose content (or link target) differs, or that one side lacks."""
    return {p for p in base.contents.keys() | head.contents.keys() if base.contents.get(p) != head.contents.get(p)}
