"""What `review` asks git: the repository, the base commit, the tree at it, its blobs, the work tree's files.

Every call runs the real `git` with settings that keep it offline and read-only: no transport may be used
(`GIT_ALLOW_PROTOCOL=none`, `protocol.allow=never`: a partial clone's missing blob is not fetched, it is
missing), no file-system monitor hook runs, no optional lock is taken, and nothing is checked out. A failure
a user can act on (not a repository, an unknown REF, a shallow clone without the base) is a `ReviewError`
with a sentence; the command line exits 2 with it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

GIT_TIMEOUT = 300
"""Seconds any one git command may take (a listing of a very large repository included)."""
_SETTINGS = ("-c", "core.fsmonitor=false", "-c", "protocol.allow=never", "-c", "core.quotePath=false",
             "--literal-pathspecs", "--no-replace-objects")
_ENVIRONMENT = {"GIT_TERMINAL_PROMPT": "0", "GIT_ALLOW_PROTOCOL": "none", "GIT_OPTIONAL_LOCKS": "0",
                "GIT_NO_LAZY_FETCH": "1", "LC_ALL": "C"}
DEFAULT_BRANCHES = ("refs/remotes/origin/HEAD", "refs/heads/main", "refs/heads/master", "refs/remotes/origin/main",
                    "refs/remotes/origin/master")
"""Where the default branch is looked for, in order: what the clone says (origin/HEAD), else main, else master."""


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


def _run(top: str, args: Sequence[str], stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, **_ENVIRONMENT}
    try:
        return subprocess.run(["git", *_SETTINGS, *args], cwd=top, input=stdin, capture_output=True, env=env,
                              timeout=GIT_TIMEOUT, check=False)
    except FileNotFoundError:
        raise ReviewError("git is not installed (or not on PATH): review reads the base of the change with git") \
            from None
    except subprocess.TimeoutExpired:
        raise ReviewError(f"git {args[0]} did not finish within {GIT_TIMEOUT} s") from None


def _out(top: str, *args: str) -> str | None:
    """The command's output without its last newline, or None when it failed."""
    done = _run(top, args)
    return done.stdout.decode("utf-8", "surrogateescape").rstrip("\n") if done.returncode == 0 else None


def repository_top(folder: str) -> str:
    """The top folder of the work tree holding `folder`; ReviewError outside a git work tree."""
    done = _run(folder, ["rev-parse", "--show-toplevel"])
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = f" ({why[-1].removeprefix('fatal: ')})" if why and "not a git repository" not in why[-1] else ""
        raise ReviewError(f"{folder} is not inside a git repository{detail}: review compares the work tree with a "
                          "commit, so it needs one")
    return os.path.realpath(done.stdout.decode("utf-8", "surrogateescape").rstrip("\n"))


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


def blobs(top: str, objects: Iterable[str]) -> dict[str, bytes | None]:
    """The content of each blob (None: git cannot read it, e.g. its object is missing), with one `cat-file`."""
    wanted = list(dict.fromkeys(objects))
    if not wanted:
        return {}
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


def changed_files(top: str, commit: str) -> list[str]:
    """The paths whose content in the work tree differs from `commit`'s: tracked files changed, added or
    deleted since (git compares by content where the index's file times cannot tell), and untracked files no
    ignore rule covers."""
    tracked = _paths(top, ["diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", commit],
                     "the changes since the base")
    return tracked + _paths(top, ["ls-files", "-z", "-o", "--exclude-standard"], "the untracked files")


def untracked(top: str, folder: str) -> list[str]:
    """The files below `folder` (repository-relative) that git does not track, ignored ones included."""
    return _paths(top, ["ls-files", "-z", "-o", "--", folder], f"the untracked files of {folder}")
