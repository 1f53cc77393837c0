"""`oscova-lsp rule`: a rule's documentation, or the list of every rule."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import (
    EXIT_OK,
    EXIT_USAGE,
)

NAME = "rule"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(NAME, help="print a rule's documentation")
    parser.add_argument("code", nargs="?", help="an OSC code; omit to list every rule")


def run(args: argparse.Namespace) -> int:
    code: str | None = args.code
    from ..analysis.lint import normal_code
    from ..analysis.rules.registry import RULES, listing

    if code is None:
        print("\n".join(listing()))
        return EXIT_OK
    found = RULES.get(normal_code(code))
    if found is None:
        print(f"oscova-lsp: unknown rule `{code}`; `oscova-lsp rule` lists them", file=sys.stderr)
        return EXIT_USAGE
    print(found.documentation())
    return EXIT_OK
