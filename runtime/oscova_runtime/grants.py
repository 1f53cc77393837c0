"""Workspace grants of tool paths: real paths against the allowed directories (no `..` or symlink escape).

The function middleware that applies them to each tool call (`WorkspaceValidation`) lives with the tool loop
in `function_invocation`; this module sits below `tools` and imports nothing of the loop.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Callable, Iterator, Sequence

from .paths import is_inside

PATH_ARGUMENT_NAMES = frozenset({"path", "file", "file_path", "directory", "folder", "image_path"})

WORKSPACE_DENIED = "Access denied: the path is outside the agent's workspaces."
NO_WORKSPACE = "Access denied: this agent has no workspace directories."


_current_workspaces: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "oscova_current_workspaces", default=()
)
_current_root: contextvars.ContextVar[str | None] = contextvars.ContextVar("oscova_current_tool_root", default=None)


def current_workspaces() -> tuple[str, ...]:
    """The allowed directories of the tool call in progress (set by WorkspaceValidation)."""
    return _current_workspaces.get()


def current_root() -> str | None:
    """The workspace root relative tool paths of the call in progress resolve against (WorkspaceValidation)."""
    return _current_root.get()


class WorkspaceViolation(PermissionError):
    """A tool path outside every allowed directory."""


def resolve_inside(path: str, allowed: Sequence[str], *, base: str | None = None, must_exist: bool = True) -> str:
    """The real path of `path` when it lies inside one of `allowed` (real paths), else WorkspaceViolation.

    A relative path resolves against `base`, the workspace root, whichever grant it then falls in (what the
    tools' descriptions tell the model); only a build without a root (`base` None) takes the first allowed
    directory. Symlinks are resolved on both sides, so neither `..` nor a link can leave the grant.
    """
    roots = [os.path.realpath(a) for a in allowed]
    if not roots:
        raise WorkspaceViolation(NO_WORKSPACE)
    candidate = os.path.expanduser(str(path))
    if not os.path.isabs(candidate):
        candidate = os.path.join(relative_base(allowed, base), candidate)
    real = os.path.realpath(candidate)
    for root in roots:
        if is_inside(real, root):
            if must_exist and not os.path.exists(real):
                raise FileNotFoundError(f"{path} does not exist")
            return real
    raise WorkspaceViolation(WORKSPACE_DENIED)


RealPath = Callable[[str], str]


def home_folder() -> str:
    """The real path of the user's home folder (`HOME`), which no grant may hold silently."""
    return os.path.realpath(os.path.expanduser("~"))


def grant_outside(root: str, folder: str, *, real_path: RealPath = os.path.realpath) -> str | None:
    """Why a workspace grant needs `[host] allow_outside_workspaces`, or None when it lies inside the root.
    `real_path` resolves symlinks (the checker passes one that records the question for its cache)."""
    real = real_path(os.path.join(root, folder))
    return None if is_inside(real, real_path(root), real=False) else "it is outside the workspace root"


def grant_too_wide(root: str, folder: str, *, real_path: RealPath = os.path.realpath,
                   home: str | None = None) -> str | None:
    """Why a workspace grant is never given silently: it is `/`, the home folder, or holds the home folder.
    `home`: the home folder's real path (default `home_folder()`)."""
    real = real_path(os.path.join(root, folder))
    home = home_folder() if home is None else home
    if real == real_path(os.sep):
        return "it grants the whole file system"
    if is_inside(home, real, real=False):
        return "it grants the home folder" if real == home else f"it grants a folder holding the home folder ({home})"
    return None


def granted_directories(root: str, folders: Sequence[str], *, allow_outside: bool = False) -> list[str]:
    """The real paths of the grants that exist, relative to `root`; grants leaving the root only when allowed."""
    found: list[str] = []
    for folder in folders:
        real = os.path.realpath(os.path.join(root, folder))
        if not os.path.isdir(real) or real in found:
            continue
        if not allow_outside and grant_outside(root, folder):
            continue
        found.append(real)
    return found


def relative_base(allowed: Sequence[str], base: str | None) -> str:
    """What a relative tool path is relative to: `base` (the workspace root), else the first allowed folder."""
    return os.path.realpath(base if base is not None else allowed[0])


def shown_path(real: str, allowed: Sequence[str], base: str | None) -> str:
    """How a tool names a file it touched: as a relative path would name it, else in full."""
    folder = relative_base(allowed, base)
    return os.path.relpath(real, folder) if is_inside(real, folder) else real


@contextlib.contextmanager
def workspaces_in_effect(allowed: tuple[str, ...], root: str | None = None) -> Iterator[None]:
    """What `current_workspaces()` and `current_root()` answer while a checked tool call runs (the tool's own
    path checks)."""
    token = _current_workspaces.set(allowed)
    root_token = _current_root.set(root)
    try:
        yield
    finally:
        _current_root.reset(root_token)
        _current_workspaces.reset(token)
