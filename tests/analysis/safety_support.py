"""`oscova-lsp check` as an attacker's workspace meets it: a subprocess with a time limit, a memory limit and
a stdin pipe kept open (a reader of `/dev/stdin` would wait on it forever)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tests.support.cli_zygote import script_command
from tests.support.host_files import MODELS

MEMORY_LIMIT = 1_500_000_000
"""Address space of the checked process: reading `/dev/zero` whole fails fast instead of taking the machine."""
TIME_LIMIT = 90.0
"""Seconds; generous for a loaded machine: a hang is forever, a check of these workspaces well under 5 s."""


@dataclass
class Result:
    returncode: int | None
    """None when the process did not finish within the time limit (it was killed)."""
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def check(*args: str, cwd: Path, timeout: float = TIME_LIMIT) -> Result:
    exe = shutil.which("oscova-lsp", path=str(Path(sys.executable).parent))
    assert exe, "the console script `oscova-lsp` is installed"
    env = {**os.environ, "OSCOVA_LSP_JOBS": "1"}
    env.pop("OSCOVA_LSP_TRACEBACK", None)
    process = subprocess.Popen(script_command(exe, "check", *args), cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env, preexec_fn=_limit_memory)
    # Not `communicate`: it closes stdin at once, and a reader of `/dev/stdin` would then see its end.
    chunks: dict[str, bytes] = {}
    readers = [threading.Thread(target=_drain, args=(stream, name, chunks), daemon=True)
               for stream, name in ((process.stdout, "out"), (process.stderr, "err"))]
    for reader in readers:
        reader.start()
    try:
        returncode: int | None = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        returncode = None
    for reader in readers:
        reader.join(10)
    assert process.stdin is not None
    process.stdin.close()
    return Result(returncode, chunks.get("out", b"").decode("utf-8", "replace"),
                  chunks.get("err", b"").decode("utf-8", "replace"))


def _drain(stream: IO[bytes] | None, name: str, chunks: dict[str, bytes]) -> None:
    assert stream is not None
    chunks[name] = stream.read()
    stream.close()


def assert_no_traceback(result: Result) -> None:
    assert result.returncode is not None, f"check did not finish within {TIME_LIMIT} s:\n{result.output[-2000:]}"
    assert result.returncode in (0, 1, 2), result.output[-2000:]
    assert "Traceback" not in result.output, result.output[-4000:]


HOST = MODELS
