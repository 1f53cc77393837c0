"""`oscova-lsp debug`: the Debug Adapter Protocol server over stdio."""

from __future__ import annotations

import argparse
from typing import Any

NAME = "debug"


def add_parser(sub: Any) -> None:
    sub.add_parser(NAME, help="run a Debug Adapter Protocol server over stdio: launch an agent run (live, a "
                   "replay, or a fork from model call N), stop at its steps, inspect and edit what it sends")


def run(args: argparse.Namespace) -> int:
    from ..debug.server import main as debug_main  # the runtime loads here, never for `check` or `serve`

    return debug_main()
