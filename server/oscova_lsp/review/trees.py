"""The base of a review, copied into a private scratch folder straight from git objects (no checkout, nothing
written to the work tree); the work tree itself is read where it is, as `check` and `preview` read it.

Files are written through the file gateway (`oscova_runtime.paths`) into the scratch folder only. What is not
copied says why, once, in `notes`: a submodule, a blob git cannot read (a partial clone's missing object is
never fetched: git runs offline), a file over `MAX_COPIED_BYTES`, a symlink leading out of the repository
(never made, so nothing ever reads through it), a name that is not a safe path. State a run reads that git
does not track (`.oscova/` memory, notes, personal context) is the work tree's on both sides (`add_state`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from oscova_runtime.paths import (
    MAX_TEXT_BYTES,
    Boundary,
    FileRefused,
    is_inside,
    make_folders,
    make_link,
    populate_folder,
    read_bytes,
    remove_file,
)

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

    def write(self, copy: Files) -> None:
        """Copies the files, then the links (so no file is ever written through one)."""
        make_folders(self.folder, mode=0o700)
        refused = populate_folder(self.folder, copy.files.items())
        for relative, why in refused.items():
            self.notes.append(f"`{relative}` {self.where()} was not copied: {why}")
        self.contents.update((r, data) for r, data in copy.files.items() if r not in refused)
        made = []
        for relative, link in copy.links.items():
            try:
                make_link(self.local(relative), link.target, root=self.folder)
            except FileRefused as why:
                self.notes.append(f"`{relative}` {self.where()} was not copied: {why}")
                continue
            self.contents[relative] = link
            made.append(relative)
        self._unmake_links_leading_out(made)

    def _unmake_links_leading_out(self, made: list[str]) -> None:
        """A link made before a link it goes through (`a -> z/../..`, `z -> ..`) is checked when made, while `z`
        does not exist yet and `..` after it stays inside; once every link exists, each is checked again and one
        that now leads out is removed (removing one can change another: again, until none does)."""
        leading_out = True
        while leading_out:
            leading_out = False
            for relative in list(made):
                local = self.local(relative)
                if is_inside(local, self.folder):
                    continue
                remove_file(local, root=self.folder)
                made.remove(relative)
                del self.contents[relative]
                self.notes.append(f"`{relative}` {self.where()} was not copied: it is a symlink that leads outside "
                                  "the workspace root through another link, and it was not made")
                leading_out = True

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


@dataclass
class Files:
    """What a copy writes: files by repository-relative path, then links."""

    files: dict[str, bytes] = field(default_factory=dict)
    links: dict[str, Link] = field(default_factory=dict)


def from_commit(top: str, commit: str, label: str, folder: str, prefixes: list[str]) -> tuple[Tree, Files]:
    """The tree of `commit` under `prefixes`, read from git objects, to be copied into `folder`
    (`Tree.write`)."""
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
    found = git.blobs(top, (e.object for e in wanted.values()), {e.object: e.size or 0 for e in wanted.values()})
    copy = Files()
    for relative, entry in wanted.items():
        data = found.get(entry.object)
        if data is None:
            side.notes.append(f"`{relative}` {side.where()} could not be read from git (its object {entry.object[:12]} "
                              "is missing from this clone) and was left out")
        elif entry.mode == "120000":
            copy.links[relative] = Link(data.decode("utf-8", "surrogateescape"))
        else:
            copy.files[relative] = data
    return side, copy


STATE_FOLDER = ".oscova"
NOT_STATE = ("runs", "tests")
"""Below `.oscova/`: run transcripts and agent tests, which no request is rendered from."""


def add_state(top: str, side: Tree, roots: Iterable[str]) -> None:
    """The work tree's untracked files under each root's `.oscova/` (memory, private notes, personal context,
    but not `runs/` or `tests/`), copied into the base where it has none: state a run reads, which a checkout of
    the base would leave in place, so it shows the same on both sides."""
    boundary = Boundary(top)
    copy = Files()
    for root in roots:
        folder = f"{root}/{STATE_FOLDER}" if root else STATE_FOLDER
        if not os.path.isdir(os.path.join(top, *folder.split("/"))):
            continue
        for relative in git.untracked(top, folder):
            inner = relative[len(folder) + 1:].split("/")
            if inner[0] in NOT_STATE or relative in side.contents or not _safe(relative):
                continue
            try:
                copy.files[relative] = read_bytes(os.path.join(top, *relative.split("/")), root=boundary,
                                                  limit=MAX_COPIED_BYTES)
            except FileRefused as refused:
                side.notes.append(f"`{relative}` in the work tree was not copied to the base's side: {refused}")
    side.write(copy)
