"""Workspace validation of tool paths: real paths against the allowed directories (no `..` or symlink escape)."""

from __future__ import annotations

import contextvars
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .function_invocation import FunctionInvocationContext, ToolCallRefusedError

PATH_ARGUMENT_NAMES = frozenset({"path", "file", "file_path", "directory", "folder", "image_path"})

WORKSPACE_DENIED = "Access denied: the path is outside the agent's workspaces."
NO_WORKSPACE = "Access denied: this agent has no workspace directories."


_current_workspaces: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "oscova_current_workspaces", default=()
)


def current_workspaces() -> tuple[str, ...]:
    """The allowed directories of the tool call in progress (set by WorkspaceValidation)."""
    return _current_workspaces.get()


class WorkspaceViolation(PermissionError):
    """A tool path outside every allowed directory."""


def resolve_inside(path: str, allowed: Sequence[str], *, must_exist: bool = True) -> str:
    """The real path of `path` when it lies inside one of `allowed` (real paths), else WorkspaceViolation.

    A relative path resolves against the first allowed directory. Symlinks are resolved on both sides,
    so neither `..` nor a link can leave the grant.
    """
    roots = [os.path.realpath(a) for a in allowed]
    if not roots:
        raise WorkspaceViolation(NO_WORKSPACE)
    candidate = os.path.expanduser(str(path))
    if not os.path.isabs(candidate):
        candidate = os.path.join(roots[0], candidate)
    real = os.path.realpath(candidate)
    for root in roots:
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            if must_exist and not os.path.exists(real):
                raise FileNotFoundError(f"{path} does not exist")
            return real
    raise WorkspaceViolation(WORKSPACE_DENIED)


class WorkspaceValidation:
    """Function middleware: refuses a call whose path arguments leave the definition's workspaces.

    The resolver is called on each checked call, so changed grants apply without a rebuild.
    """

    def __init__(self, resolver: Callable[[], Sequence[str]]) -> None:
        self._resolver = resolver

    async def __call__(
        self, context: FunctionInvocationContext, call_next: Callable[[FunctionInvocationContext], Awaitable[Any]]
    ) -> Any:
        names = set(context.function.path_parameters) or PATH_ARGUMENT_NAMES
        checked = [v for k, v in context.arguments.items() if k in names and isinstance(v, str)]
        allowed = tuple(self._resolver())
        for value in checked:
            try:
                resolve_inside(value, allowed, must_exist=False)
            except WorkspaceViolation as violation:  # a failed call: it counts towards the error limit
                raise ToolCallRefusedError(str(violation)) from violation
        token = _current_workspaces.set(allowed)
        try:
            return await call_next(context)
        finally:
            _current_workspaces.reset(token)
