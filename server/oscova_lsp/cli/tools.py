"""`oscova-lsp tools`: the built-in tools."""

from __future__ import annotations

import argparse
from typing import Any

from .common import (
    EXIT_OK,
)

NAME = "tools"


def add_parser(sub: Any) -> None:
    sub.add_parser(NAME, help="list the built-in tools")


def run(args: argparse.Namespace) -> int:
    """The built-in tools, from the runtime's catalogue."""
    from oscova_runtime.catalogue import BUILTIN_TOOLS

    for spec in BUILTIN_TOOLS.values():
        where = f"from the `{spec.provider}` provider" if spec.provider else "selectable in `tools`"
        approval = ", approval required" if spec.approval_required else ""
        print(f"{spec.name:<17} {spec.description} ({where}{approval})")
    print("\nMore tools: `[tools.NAME]` in oscova.toml (`callable = \"module:function\"`).")
    return EXIT_OK
