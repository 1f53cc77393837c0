"""`oscova-lsp preview`: what an agent's model would be sent, and its cost in tokens."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    workspace_root,
)

NAME = "preview"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(NAME, help="print an agent's assembled instructions, messages and tools")
    parser.add_argument("agent_id", metavar="AGENT_ID")
    parser.add_argument("--input", default=None, metavar="TEXT", help="an input message to assemble with")
    parser.add_argument("--root", default=None, metavar="DIR",
                        help="the workspace root (default: found from the current directory)")
    parser.add_argument("--json", action="store_true", help="print the preview as JSON")


def run(args: argparse.Namespace) -> int:
    import asyncio

    from ..reporting import json_text, printable, wants_color
    from ..runs.errors import RunError
    from ..runs.service import RunService
    from ..runs.terminal import format_preview

    root = workspace_root(args.root)
    if root is None:
        return EXIT_USAGE

    async def main() -> dict[str, object]:
        service = RunService(root)
        try:
            return await service.preview(args.agent_id, args.input)
        finally:
            await service.aclose()

    try:
        preview = asyncio.run(main())
    except RunError as error:
        print(f"oscova-lsp: {printable(str(error))}", file=sys.stderr)
        return EXIT_FINDINGS
    if args.json:
        print(json_text(preview, indent=2))
    else:
        print(format_preview(preview, color=wants_color(sys.stdout)))
    return EXIT_OK
