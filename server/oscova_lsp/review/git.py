"""What `review` asks git: the repository, the base commit, the tree at it, its blobs, the files it tracks.

Every call goes through the process gateway's `git` (`oscova_runtime.processes`): the repository's own settings
are inert (no hook, filter, textconv, file-system monitor or external diff program runs; no system or global
configuration), no transport may be used (a partial clone's missing blob is not fetched, it is missing), and
only commands that read objects, refs and the index run: nothing is checked out and the index is never
written. Which files changed since the base is answered by comparing the base's blobs with the work tree's
files read through the file gateway (`changed_files`), not by `git diff`, which would refresh the index. A
failure a user can act on (not a repository, an unknown REF, a shallow clone without the base) is a
`ReviewError` with a sentence; the command line exits 2 with it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from oscova_runtime import paths
from oscova_runtime.processes import Finished, GitRepository, ProcessFailed, git, git_repository

DEFAULT_BRANCHES = ("refs/remotes/origin/HEAD", "refs/heads/main", "refs/heads/master", "refs/remotes/origin/main",
                    "refs/remotes/origin/master")
"""Where the default branch is looked for, in order: what the clone says (origin/HEAD), else main, else master."""
BLOB_BATCH_BYTES = 64 * 1024 * 1024
"""The most blob content one `cat-file` is asked for (a larger copy asks again)."""


class ReviewError(Exception):
    """A review that cannot be made (exit 2); the message is one sentence for the user."""


@dataclass(frozen=True, slots=True)
class Base:
    commit: str
    """The full commit id the review compares with."""
    ref: str
    """The ref it comes from: the `--base` given, the default branch, or `HEAD`."""
    label: str
    """How the commit was chosen, for the report: `--base main`, `the merge base with origin/main`, `HEAD`."""


@dataclass(frozen=True, slots=True)
class TreeEntry:
    path: str
    """Relative to the repository's top, `/`-separated, as git stores it."""
    mode: str
    kind: str
    """`blob` or `commit` (a submodule)."""
    object: str
    size: int | None


_repositories: dict[str, GitRepository] = {}


def _repository(top: str) -> GitRepository:
    found = _repositories.get(top)
    if found is None:
        try:
            found = git_repository(top)
        except ProcessFailed as refused:
            raise ReviewError(str(refused)) from None
        if found is None:
            raise ReviewError(f"{top} is not inside a git repository: review compares the work tree with a commit, "
                              "so it needs one")
        _repositories[top] = found
    return found


def _run(top: str, args: Sequence[str], stdin: bytes | None = None) -> Finished:
    try:
        return git(_repository(top), args, input=stdin)
    except ProcessFailed as failed:
        raise ReviewError(f"{failed}: review reads the base of the change with git") from None


def _out(top: str, *args: str) -> str | None:
    """The command's output without its last newline, or None when it failed."""
    done = _run(top, args)
    return done.stdout.decode("utf-8", "surrogateescape").rstrip("\n") if done.returncode == 0 else None


def repository_top(folder: str) -> str:
    """The top folder of the work tree holding `folder`; ReviewError outside a git work tree, or when its `.git`
    sends git outside that folder."""
    try:
        found = git_repository(folder)
    except ProcessFailed as refused:
        raise ReviewError(str(refused)) from None
    done = git(found, ["rev-parse", "--is-inside-work-tree"]) if found is not None else None
    if found is None or done is None or done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines() if done is not None else []
        detail = f" ({why[-1].removeprefix('fatal: ')})" if why and "not a git repository" not in why[-1] else ""
        raise ReviewError(f"{folder} is not inside a git repository{detail}: review compares the work tree with a "
                          "commit, so it needs one")
    _repositories[found.top] = found
    return found.top


def _shallow(top: str) -> bool:
    return _out(top, "rev-parse", "--is-shallow-repository") == "true"


def _commit(top: str, ref: str) -> str | None:
    return _out(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")


def _short(ref: str) -> str:
    return ref.removeprefix("refs/heads/").removeprefix("refs/remotes/")


def default_branch(top: str) -> str | None:
    """The default branch's ref: origin/HEAD where the clone names it, else main, else master."""
    for ref in DEFAULT_BRANCHES:
        if _commit(top, ref) is not None:
            if ref.endswith("/HEAD"):  # name the branch it points to
                target = _out(top, "symbolic-ref", "--quiet", ref)
                return target or ref
            return ref
    return None


def resolve_base(top: str, given: str | None) -> Base:
    """The commit to compare with: `given`, else the merge base of HEAD with the default branch, else HEAD."""
    if given is not None:
        if not given.strip() or given.startswith("-"):
            raise ReviewError(f"--base takes a commit, branch or tag, not {given!r}")
        commit = _commit(top, given)
        if commit is None:
            hint = ("; this clone is shallow, so it may be in the history the clone left out: fetch it "
                    "(`git fetch --unshallow`, or `fetch-depth: 0` with actions/checkout)") if _shallow(top) else ""
            raise ReviewError(f"the base {given!r} is not a commit, branch or tag of this repository{hint}")
        return Base(commit, given, f"--base {given}")
    head = _commit(top, "HEAD")
    if head is None:
        raise ReviewError("the repository has no commit yet: commit something, or pass --base REF")
    branch = default_branch(top)
    if branch is None:
        return Base(head, "HEAD", "HEAD (no default branch: neither origin/HEAD, main nor master exists)")
    base = _out(top, "merge-base", "HEAD", branch)
    if base:
        return Base(base, _short(branch), f"the merge base with {_short(branch)}")
    if _shallow(top):
        raise ReviewError(f"this clone is shallow and does not hold the merge base of HEAD and {_short(branch)}: fetch "
                          "the history (`git fetch --unshallow`, or `fetch-depth: 0` with actions/checkout), or pass "
                          "--base REF")
    raise ReviewError(f"HEAD and {_short(branch)} have no commit in common: pass --base REF")


def tree(top: str, commit: str) -> list[TreeEntry]:
    """Every entry of the commit's tree (files, symlinks, submodules), recursively."""
    done = _run(top, ["ls-tree", "-r", "-z", "-l", "--full-tree", commit])
    if done.returncode != 0:
        raise ReviewError(f"git could not list the tree of {commit[:12]}: "
                          f"{done.stderr.decode('utf-8', 'replace').strip() or 'no reason given'}")
    entries = []
    for record in done.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, kind, obj, size = meta.decode("ascii", "replace").split(maxsplit=3)
        entries.append(TreeEntry(name.decode("utf-8", "surrogateescape"), mode, kind, obj,
                                 int(size) if size.strip().isdigit() else None))
    return entries


def blobs(top: str, objects: Iterable[str], sizes: dict[str, int] | None = None) -> dict[str, bytes | None]:
    """The content of each blob (None: git cannot read it, e.g. its object is missing), with one `cat-file` per
    `BLOB_BATCH_BYTES` of content (`sizes`: each object's size where known)."""
    wanted = list(dict.fromkeys(objects))
    found: dict[str, bytes | None] = dict.fromkeys(wanted)
    batch: list[str] = []
    total = 0
    for obj in wanted:
        batch.append(obj)
        total += (sizes or {}).get(obj, 0)
        if total >= BLOB_BATCH_BYTES:
            found.update(_blob_batch(top, batch))
            batch, total = [], 0
    if batch:
        found.update(_blob_batch(top, batch))
    return found


def _blob_batch(top: str, wanted: list[str]) -> dict[str, bytes | None]:
    done = _run(top, ["cat-file", "--batch"], stdin="".join(f"{o}\n" for o in wanted).encode("ascii"))
    found: dict[str, bytes | None] = dict.fromkeys(wanted)
    data, at = done.stdout, 0
    for obj in wanted:
        end = data.find(b"\n", at)
        if end < 0:
            break
        header = data[at:end].split()
        at = end + 1
        if len(header) == 3 and header[2].isdigit():
            size = int(header[2])
            found[obj] = data[at:at + size] if header[1] == b"blob" else None
            at += size + 1
    return found


def _paths(top: str, args: list[str], what: str) -> list[str]:
    done = _run(top, args)
    if done.returncode != 0:
        raise ReviewError(f"git could not list {what}: {done.stderr.decode('utf-8', 'replace').strip()}")
    return list(dict.fromkeys(p.decode("utf-8", "surrogateescape") for p in done.stdout.split(b"\0") if p))


def changed_files(top: str, commit: str, prefixes: Sequence[str] = ("",)) -> list[str]:
    """The paths under `prefixes` whose content in the work tree differs from `commit`'s: files of the commit
    changed or deleted since (compared by size, then by their git object id, read through the file gateway),
    files the index tracks that the commit lacks, and untracked files no ignore rule covers. Nothing is
    written: `git diff` would refresh the index (and fire the repository's hooks)."""
    scope = [p for p in prefixes if p] if all(prefixes) else []
    boundary = paths.Boundary(top)
    base = {e.path: e for e in tree(top, commit) if e.kind == "blob"}
    changed = [path for path, entry in base.items() if _in(path, scope) and _differs(top, boundary, entry)]
    tracked = _paths(top, ["ls-files", "-z", "--cached", "--", *scope], "the tracked files")
    untracked = _paths(top, ["ls-files", "-z", "-o", "--exclude-standard", "--", *scope], "the untracked files")
    return list(dict.fromkeys([*changed, *(p for p in tracked if p not in base), *untracked]))


def _in(path: str, scope: Sequence[str]) -> bool:
    return not scope or any(path == p or path.startswith(p + "/") for p in scope)


def _differs(top: str, boundary: paths.Boundary, entry: TreeEntry) -> bool:
    """Whether the work tree's file at `entry.path` is not the blob `entry` (a link compares by its target)."""
    local = os.path.join(top, *entry.path.split("/"))
    try:
        info = os.lstat(local)
    except OSError:
        return True  # deleted (or unreadable): a change
    if entry.mode == "120000":
        if not stat.S_ISLNK(info.st_mode):
            return True
        content = os.fsencode(os.readlink(local))
    elif stat.S_ISREG(info.st_mode) and info.st_size == entry.size:
        try:
            content = paths.read_bytes(local, root=boundary, limit=info.st_size)
        except paths.FileRefused:
            return True
    else:
        return True
    return _object_id(content, len(entry.object)) != entry.object


def _object_id(content: bytes, length: int) -> str:
    """The id git gives a blob of `content`, in the repository's hash (SHA-1, or SHA-256 for 64-digit ids)."""
    digest = hashlib.sha256() if length == 64 else hashlib.sha1(usedforsecurity=False)
    digest.update(b"blob %d\0" % len(content))
    digest.update(content)
    return digest.hexdigest()


def untracked(top: str, folder: str) -> list[str]:
    """The files below `folder` (repository-relative) that git does not track, ignored ones included."""
    return _paths(top, ["ls-files", "-z", "-o", "--", folder], f"the untracked files of {folder}")
