"""`oscova-lsp review`: what every agent a change reaches will be sent, before and after, offline."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .common import (
    EXIT_USAGE,
)

NAME = "review"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(NAME, help="show what every agent a change reaches will be sent, before and after "
                                       "the change, offline (the base read from git objects)")
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    parser.add_argument("--base", default=None, metavar="REF",
                        help="the commit to compare with (default: the merge base with the default branch, else HEAD)")
    parser.add_argument("--format", choices=("text", "markdown", "json", "github"), default="text")
    parser.add_argument("--trust", action="store_true",
                        help="import the workspace's own tools and providers (at both sides) to render them")


def run(args: argparse.Namespace) -> int:
    """`review`: exit 0 when no agent test drifted and no error was introduced, 1 otherwise, 2 when the change
    cannot be reviewed (not a git repository, an unknown REF, a shallow clone without the base)."""
    import asyncio

    from oscova_runtime.paths import FileRefused, append_to_output

    from ..analysis.cache_files import ENV_OFF
    from ..review.formats import format_github, format_json, format_markdown, format_text
    from ..review.git import ReviewError
    from ..review.review import review

    os.environ[ENV_OFF] = "1"  # nothing written outside the review's scratch folder: no facts cache either
    try:
        found = asyncio.run(review(args.paths, args.base, trusted=args.trust))
    except ReviewError as error:
        print(f"oscova-lsp: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.format == "github":
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        try:
            if summary:
                append_to_output(summary, format_markdown(found))
        except FileRefused as refused:
            print(f"oscova-lsp: the step summary {summary} was not written: {refused}", file=sys.stderr)
            summary = None
        body = format_github(found)
        print(body + ("\n" if body else "") + ("" if summary else format_markdown(found)), end="")
    else:
        render = {"text": format_text, "markdown": format_markdown, "json": format_json}[args.format]
        print(render(found).rstrip("\n"))
    return found.exit_code
