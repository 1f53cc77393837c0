"""`oscova-lsp eval`: the evaluations run and graded, or graded again from their results (`--rescore`)."""

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

NAME = "eval"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(NAME, help="run the evaluations (*.eval.yaml): every case × model × repeat, graded")
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="evaluation files or folders (default: the current workspace)")
    parser.add_argument("--model", dest="models", action="extend", nargs="+", default=[], metavar="NAME",
                        help="run on these [models.NAME] instead of each evaluation's `models`")
    parser.add_argument("--repeat", type=_positive, default=None, metavar="N", help="runs per case and model")
    parser.add_argument("--case", default=None, metavar="NAME", help="only the cases of this name")
    parser.add_argument("--format", choices=("text", "json", "junit", "github", "html"), default="text")
    parser.add_argument("--jobs", type=_positive, default=4, metavar="N", help="runs at a time (default 4)")
    parser.add_argument("--rescore", default=None, metavar="DIR",
                        help="grade the runs recorded in DIR (.oscova/evals/<time>/) again, with no model call")


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return number


def run(args: argparse.Namespace) -> int:
    """`oscova-lsp eval`: exit 0 when every case meets its pass rate on every model, 1 when one does not (a run that
    failed or was cancelled fails its case unless the case asserts that status; no run completed adds a sentence
    naming the cause on stderr) or the evaluation was cancelled, 2 on usage errors and when there is no evaluation
    file."""
    from ..reporting import printable
    from ..runs.eval_report import render
    from ..runs.eval_runner import EvalError, EvalOptions, find_evals, rescore

    options = EvalOptions(models=args.models, repeat=args.repeat, case=args.case, jobs=args.jobs)
    try:
        paths = args.paths or [workspace_root(None) or os.getcwd()]
        evals = find_evals(paths)
        if not evals:
            raise EvalError(f"no evaluation files (*.eval.yaml) under {', '.join(paths)}")
        report = rescore(args.rescore, evals, options) if args.rescore else _run_evals(evals, options)
    except EvalError as error:
        print(f"oscova-lsp: {printable(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    print(render(report, args.format))
    cause = report.none_completed()
    if cause is not None:  # the endpoint down, its key unset: said once, whatever the format
        print(f"oscova-lsp: {printable(cause)}", file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_FINDINGS


def _run_evals(evals: Any, options: Any) -> Any:
    """Runs them with a progress line at a terminal; Ctrl-C cancels the runs and keeps what finished."""
    import asyncio
    import logging
    import signal

    from ..runs.eval_runner import run_evals

    logging.getLogger("oscova_lsp.runs.transcript").setLevel(logging.ERROR)
    if sys.stderr.isatty():
        def progress(done: int, total: int, outcome: Any) -> None:
            end = "\n" if done == total else ""
            print(f"\r  {done}/{total} runs", end=end, file=sys.stderr, flush=True)

        options.progress = progress

    async def main() -> Any:
        task = asyncio.ensure_future(run_evals(evals, options))
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, task.cancel)  # the report of what finished, not a traceback
        try:
            return await task
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    return asyncio.run(main())
