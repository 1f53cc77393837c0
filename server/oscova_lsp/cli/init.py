"""`oscova-lsp init`: a starter workspace on the offline model."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .common import (
    EXIT_OK,
    EXIT_USAGE,
)

NAME = "init"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(NAME, help="start a workspace: an oscova.toml on the offline model, an agent, an agent "
                                       "test and an evaluation (nothing that exists is overwritten)")
    parser.add_argument("folder", nargs="?", default=".", metavar="DIR", help="where (default: here; made if missing)")


def run(args: argparse.Namespace) -> int:
    folder: str = args.folder
    from ..starter import InitError, init_workspace

    try:
        started = init_workspace(folder)
    except InitError as error:
        print(f"oscova-lsp: {error}", file=sys.stderr)
        return EXIT_USAGE
    # What init did is said on stderr, as `cargo new` and `uv init` say it: stdout stays for what a script reads.
    print(f"Started a workspace in {folder}:", file=sys.stderr)
    for rel in started.written:
        print(f"  {rel}", file=sys.stderr)
    if started.test_note:
        print(f"The first agent test was not recorded: {started.test_note}", file=sys.stderr)
    here = "" if os.path.abspath(folder) == os.getcwd() else f"cd {folder} && "
    print(f"Next: {here}oscova-lsp check && oscova-lsp run assistant \"Hello\" && oscova-lsp test && oscova-lsp eval",
          file=sys.stderr)
    return EXIT_OK
