"""`oscova-lsp diff`: two recorded runs compared."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
)

NAME = "diff"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(NAME, help="compare two recorded runs (transcripts, run ids or their starts): the first "
                                       "differing model request, the tool calls, the answers")
    parser.add_argument("first", metavar="A")
    parser.add_argument("second", metavar="B")
    parser.add_argument("--root", default=None, metavar="DIR",
                        help="the workspace whose .oscova/runs/ holds the run ids (default: found from the "
                             "current directory)")


def run(args: argparse.Namespace) -> int:
    """`diff A B`: exit 0 when the runs are the same, 1 when they differ, 2 when one cannot be read."""
    from ..analysis.disk import find_root
    from ..reporting import printable
    from ..runs.diff import diff_transcripts
    from ..runs.transcript import RecordingError, resolve_transcript

    root = os.path.abspath(args.root) if args.root is not None else find_root(os.getcwd())
    try:
        difference = diff_transcripts(resolve_transcript(root, args.first), resolve_transcript(root, args.second))
    except RecordingError as error:
        print(f"oscova-lsp: {printable(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    if not difference:
        print("The runs match: the same model requests, tool calls and answers.", file=sys.stderr)
        return EXIT_OK
    print(printable(difference))
    return EXIT_FINDINGS
