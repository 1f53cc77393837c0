"""The `oscova-lsp` command line (docs/cli.md): one module a command, each with its `NAME`, `add_parser` and `run`,
registered in `COMMANDS`. Heavy modules are imported by the command that needs them, when it runs."""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence
from types import ModuleType

from . import (
    check,
    debug,
    diff,
    evaluate,
    init,
    preview,
    providers,
    review,
    rule,
    run,
    schema,
    serve,
    test,
    tools,
)
from .common import EXIT_OK, EXIT_USAGE, Parser, last_resort

COMMANDS: tuple[ModuleType, ...] = (check, serve, run, preview, diff, test, debug, review, evaluate, schema,
                                    providers, tools, init, rule)
"""Every command, in the order `--help` lists them: a new command is a module here and one entry."""
LEFT_TO_THE_END = frozenset({check.NAME})
"""Commands whose objects `oscova-lsp`, run as a program, leaves to the process's end as they are: the
interpreter's last garbage collection would walk the whole parsed workspace (a third of a second of CPU after a
check of 4,000 files) to find nothing that must be freed before the process ends."""


def build_parser() -> Parser:
    from .. import __version__

    parser = Parser(prog="oscova-lsp", description="Language server and checker for Oscova agent definitions.")
    parser.add_argument("--version", action="version", version=f"oscova-lsp {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


@last_resort
def main(argv: Sequence[str] | None = None) -> int:
    program = argv is None  # the process's own command line (the console script, `python -m oscova_lsp`)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run-host"]:  # the language server's run host (`runhost/`): not a command for people
        from ..runhost.child import main as run_host

        return run_host(argv[1:])
    if not argv or argv[0].startswith("--stdio") or argv[0].startswith("--clientProcessId") or argv[0] == "--tcp":
        argv = ["serve", *argv]  # `oscova-lsp` alone (or with a client's flags) is the language server
    parser = build_parser()
    args = parser.parse_args(argv)
    command = next((c for c in COMMANDS if c.NAME == args.command), None)
    if command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        status = int(command.run(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    if program and command.NAME in LEFT_TO_THE_END:
        gc.freeze()  # out of every collection, the interpreter's last one included
    return status
