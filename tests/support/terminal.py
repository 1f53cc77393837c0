"""A command run with a terminal on its stdin that answers its one `[y/N]` question: what the tests of approvals
and offers asked at a terminal share."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path


def answer_at_a_terminal(command: Sequence[str], cwd: Path, env: dict[str, str], answer: bytes,
                         ) -> tuple[int, str, str]:
    """Runs `command` with a terminal on stdin, types `answer` once `[y/N]` shows on stderr (or the process
    ends, or 60 s pass), and returns its exit status, stdout and stderr."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(list(command), cwd=cwd, env=env, stdin=terminal, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    os.close(terminal)
    err = b""
    deadline = time.monotonic() + 60
    try:
        while b"[y/N]" not in err and time.monotonic() < deadline and process.poll() is None:
            ready, _, _ = select.select([process.stderr], [], [], 0.2)
            if ready:
                err += os.read(process.stderr.fileno(), 4096)  # type: ignore[union-attr]
        os.write(controller, answer)
        out, rest = process.communicate(timeout=60)
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
    return process.returncode, out.decode(), (err + rest).decode()
