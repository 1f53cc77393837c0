"""Folders where writes fail for real: a small tmpfs that fills up, a read-only folder.

Root (the machine this suite runs on) mounts a tmpfs; elsewhere the full-disk tests are skipped with the
reason, and a read-only folder is made with mode 0555 (which root would ignore).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

READ_ONLY_WORDS = {True: "the file system is read-only", False: "permission was denied"}
"""What a write in `read_only` is refused with, as root (a read-only tmpfs) and otherwise (mode 0555)."""


@contextlib.contextmanager
def mounted_tmpfs(folder: Path, options: str) -> Iterator[None]:
    """A tmpfs with `options` (`size=64k`, `ro,size=64k`) mounted on `folder` while the block runs."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"a tmpfs cannot be mounted here: {mounted.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """A folder no write succeeds in: a read-only tmpfs as root (who ignores modes), mode 0555 otherwise."""
    if os.geteuid() == 0:
        with mounted_tmpfs(folder, "ro,size=64k"):
            yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o555)
    try:
        yield
    finally:
        folder.chmod(0o755)
