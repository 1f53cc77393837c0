"""`oscova-lsp test`: the agent tests under `.oscova/tests/` replayed, and runs saved as tests."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    workspace_root,
)

NAME = "test"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(NAME, help="replay the agent tests (recorded runs) under .oscova/tests/")
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="case files or folders (default: the .oscova/tests/ of the current workspace)")
    parser.add_argument("--format", choices=("text", "json", "github", "junit"), default="text")
    parser.add_argument("--update", action="store_true",
                        help="re-record the expected requests of the cases that drifted (the change is intended)")
    parser.add_argument("--save", default=None, metavar="RUN_ID",
                        help="make a completed run (its id, or its transcript) a case, instead of running cases")
    parser.add_argument("--name", default=None, metavar="NAME", help="the saved case's name (default: the agent id)")
    parser.add_argument("--root", default=None, metavar="DIR",
                        help="the workspace root for --save and the default PATH (default: found from here)")
    parser.add_argument("--trace", action="store_true",
                        help="export the replays' spans as runs do (agent tests are offline and export nothing "
                             "without it)")


def run(args: argparse.Namespace) -> int:
    """`oscova-lsp test`: exit 0 when every case replays as recorded, 1 when one drifted or could not run,
    2 on usage errors and when there is no case at all."""
    import asyncio

    from ..reporting import printable
    from ..runs.cases import CaseError, find_cases, render, run_case, save_case, tests_dir

    if args.save is not None or args.name is not None:
        if args.save is None or args.paths or args.update:
            print("oscova-lsp: --name goes with --save RUN_ID, which takes no PATH and no --update", file=sys.stderr)
            return EXIT_USAGE
        root = workspace_root(args.root)
        if root is None:
            return EXIT_USAGE
        first = not os.path.isdir(tests_dir(root))
        try:
            case = save_case(root, args.save, args.name)
        except CaseError as error:
            print(f"oscova-lsp: {printable(str(error))}", file=sys.stderr)
            return EXIT_USAGE
        print(_saved_words(case, first, named=args.name is not None), flush=True)
        if first:
            _offer_gitignore_lines(root)
        return EXIT_OK
    paths = args.paths
    if not paths:
        root = workspace_root(args.root)
        if root is None:
            return EXIT_USAGE
        paths = [root]
    try:
        cases = find_cases(paths)
    except CaseError as error:
        print(f"oscova-lsp: {printable(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    if not cases:
        print(f"oscova-lsp: no agent tests under {', '.join(paths)}: save a run as a case with "
              "`oscova-lsp test --save RUN_ID`", file=sys.stderr)
        return EXIT_USAGE

    async def main() -> list[Any]:
        return [await run_case(case, update=args.update, trace=args.trace) for case in cases]

    results = asyncio.run(main())
    print(render(results, args.format))
    return EXIT_OK if all(r.ok for r in results) else EXIT_FINDINGS


def _saved_words(case: Any, first: bool, *, named: bool) -> str:
    """Where a saved case went; the name it got when its default was taken; on a workspace's first case, when
    its `.gitignore` lacks them, the lines that commit the cases and not the rest of `.oscova/`."""
    from ..runs.cases import default_case_name, missing_gitignore_lines, tests_dir

    line = f"saved the case {case.name}: {os.path.relpath(case.path)}"
    wanted = default_case_name(case.recording().agent_id)
    if not named and case.name != wanted:
        line += f" ({wanted} is taken; --name NAME names it)"
    missing = missing_gitignore_lines(case.root) if first else []
    if not missing:
        return line
    ignore = "".join(f"\n    {pattern}" for pattern in missing)
    return (f"{line}\nCommit {os.path.relpath(tests_dir(case.root))}{os.sep}: a case is a fixture of your "
            "repository. The rest of .oscova/ (run transcripts, memory) belongs to this machine; keep it out "
            f"with these lines in the .gitignore beside oscova.toml:{ignore}")


def _offer_gitignore_lines(root: str) -> None:
    """At a terminal, asks whether to add the missing `.gitignore` lines and adds them on a yes; elsewhere says
    how to add them. Never writes without a yes."""
    import shlex

    from oscova_runtime.paths import FileRefused

    from ..runs.cases import add_gitignore_lines, gitignore_path, missing_gitignore_lines

    missing = missing_gitignore_lines(root)
    if not missing:
        return
    shown = os.path.relpath(gitignore_path(root))
    if not sys.stdin.isatty():
        quoted = " ".join(shlex.quote(line) for line in missing)
        print(f"To add them: printf '%s\\n' {quoted} >> {shlex.quote(shown)}")
        return
    print(f"? Add them to {shown}? [y/N] ", end="", file=sys.stderr, flush=True)
    try:
        answer = sys.stdin.readline()
    except (OSError, ValueError, KeyboardInterrupt):
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        print(f"{shown} was left as it is")
        return
    try:
        add_gitignore_lines(root)
    except FileRefused as refused:
        print(f"oscova-lsp: {shown} was not written: {refused}", file=sys.stderr)
        return
    print(f"added them to {shown}")
