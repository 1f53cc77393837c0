"""Real git repositories in a temporary folder, and `oscova-lsp review` run on them as a subprocess with the
network blocked (a `sitecustomize` that refuses and records every IP connection) and an import marker."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

from tests.support.cli_zygote import module_command

GUARD = '''
import os, socket
_log = os.environ.get("REVIEW_NETWORK_LOG")
_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex

def _refuse(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        if _log:
            with open(_log, "a") as f:
                f.write(f"{address!r}\\n")
        raise OSError("the network is blocked in this test")

def connect(self, address):
    _refuse(self, address)
    return _connect(self, address)

def connect_ex(self, address):
    _refuse(self, address)
    return _connect_ex(self, address)

socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
'''
"""Loaded by every review subprocess before anything else: an IP connection fails and is written down."""

DATE = "2025-06-01T10:00:00+00:00"
"""Every commit's author and committer date: commit ids are the same on every run."""


def git(repo: Path, *args: str, check: bool = True) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
           "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
           "GIT_AUTHOR_DATE": DATE, "GIT_COMMITTER_DATE": DATE, "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.stderr}")
    return done.stdout.rstrip("\n")


def init(repo: Path, files: dict[str, str]) -> Path:
    """A repository on `main` whose first commit holds `files`."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    write(repo, files)
    commit(repo, "base")
    return repo


def write(repo: Path, files: dict[str, str | None]) -> None:
    """Writes (None: deletes) files, their text dedented."""
    for name, text in files.items():
        path = repo / name
        if text is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def review(cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120,
           ) -> subprocess.CompletedProcess[str]:
    """`oscova-lsp review ARGS` in `cwd`, the network blocked (see `network_log`)."""
    guard = cwd.parent / f".guard-{cwd.name}"
    guard.mkdir(exist_ok=True)
    (guard / "sitecustomize.py").write_text(GUARD)
    base = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    full = {**base, "PYTHONPATH": os.pathsep.join([str(guard), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
            "REVIEW_NETWORK_LOG": str(network_log(cwd)), "NO_COLOR": "1", **(env or {})}
    return subprocess.run(module_command("review", *args), cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=timeout)


def network_log(cwd: Path) -> Path:
    return cwd.parent / f".network-{cwd.name}.log"


def connections(cwd: Path) -> list[str]:
    path = network_log(cwd)
    return path.read_text().splitlines() if path.exists() else []


def review_json(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    done = review(cwd, "--format", "json", *args, env=env)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, json.loads(done.stdout)


def agents(report: dict[str, Any], workspace: int = 0) -> dict[str, dict[str, Any]]:
    return {a["id"]: a for a in report["workspaces"][workspace]["agents"]}


def diff_of(agent: dict[str, Any], part: str) -> str:
    return next((c["diff"] for c in agent["changes"] if c["part"] == part), "")
