"""Which files a workspace is made of, and where workspaces begin: the walks over the disk.

One set of rules for every walk (never-scanned folders, the `[host] exclude` folders, a folder with a host
configuration of its own is a workspace of its own), so that `oscova-lsp check FOLDER`, the language server's
folders, `review` and a load all agree on which roots there are and which files each one holds.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from oscova_runtime.paths import walk

from .disk import NEVER_SCANNED, FileKind, file_kind, find_root, host_config_path, read_text


def excluded_dirs(root: str, host_path: str | None) -> set[str]:
    """The `[host] exclude` folders of the workspace at `root`, as absolute paths."""
    if host_path is None:
        return set()
    # Imported here: the rest of this module is light, so that the template prefetch can walk a workspace
    # before the check has imported its parsers (pydantic's models take a third of a second).
    from .files import HostFile, parse_file

    parsed = parse_file(host_path, *read_text(host_path, root))  # a link leading out is not read: no excludes
    if not isinstance(parsed, HostFile) or parsed.config is None:
        return set()
    return {os.path.normpath(os.path.join(root, p)) for p in parsed.config.host.exclude}


def workspace_roots(path: str) -> list[str]:
    """The workspace holding `path` and every workspace nested below `path`, outermost first: the folders
    holding an `oscova.toml` (or a `pyproject.toml` with `[tool.oscova]`); none when there is no such folder.
    Never-scanned folders and each enclosing workspace's `[host] exclude` are not searched."""
    start = os.path.abspath(path)
    top = find_root(start)
    roots = [top] if top is not None else []
    if not os.path.isdir(start):
        return roots
    excluded = excluded_dirs(top, host_config_path(top)) if top is not None else set()
    for dirpath, dirnames, _ in walk(start):  # the folder the user named; linked folders are not walked
        if dirpath != top:
            host_path = host_config_path(dirpath)
            if host_path is not None:
                roots.append(dirpath)
                excluded |= excluded_dirs(dirpath, host_path)
        dirnames[:] = sorted(d for d in dirnames
                             if d not in NEVER_SCANNED and os.path.join(dirpath, d) not in excluded)
    return roots


def discover(root: str, listed: Callable[[str, bool], None] | None = None, *,
             excluded: set[str] | None = None) -> list[str]:
    """Every definition, template and host file under `root`, minus never-scanned folders and nested
    workspaces (each a workspace of its own). `listed(folder, nested)`: called for the root and each folder
    walked before it is listed, and for each nested workspace left out (`nested`), so the results cache can
    tell later, by their identities, that the same files would be found (`warm_start.Manifest`). `excluded`:
    the `[host] exclude` folders to leave out, by default those of the validated host configuration
    (`excluded_dirs`)."""
    found: list[str] = []
    if listed is not None:
        listed(root, False)
    host_path = host_config_path(root)
    if host_path is None:  # not a workspace: only its open documents are read, and nothing is reported
        return found
    if excluded is None:
        excluded = excluded_dirs(root, host_path)
    for dirpath, dirnames, filenames in walk(root, root=root):
        kept = []
        for d in sorted(dirnames):
            if d in NEVER_SCANNED or os.path.join(dirpath, d) in excluded:
                continue
            nested = host_config_path(os.path.join(dirpath, d)) is not None
            if listed is not None:
                listed(os.path.join(dirpath, d), nested)
            if not nested:
                kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            kind = file_kind(path)
            if kind is FileKind.DEFINITION or kind is FileKind.TEMPLATE or kind is FileKind.EVAL:
                found.append(path)
    found.insert(0, host_path)
    return found
