"""`oscova-lsp run`: an agent run streamed to the terminal, or a recorded run replayed (`--replay`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import (
    EXIT_FINDINGS,
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_USAGE,
    workspace_root,
)

NAME = "run"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(NAME, help="run an agent, streaming its answer, tool calls and results",
                            epilog="exit status: 0 completed, 1 failed or cancelled, 2 usage error (an unknown agent "
                                   "too), 3 completed with an incomplete answer (cut off at the token limit or by a "
                                   "content filter, or stopped by the repeated-call guard)")
    parser.add_argument("agent_id", metavar="AGENT_ID", nargs="?",
                        help="the agent to run (with --replay: default the recorded one)")
    parser.add_argument("text", metavar="INPUT", nargs="?", default=None,
                        help="the input (or --input TEXT; default: read from stdin)")
    parser.add_argument("--input", default=None, metavar="TEXT", help="the input (default: read from stdin)")
    parser.add_argument("--root", default=None, metavar="DIR",
                        help="the workspace root (default: found from the current directory)")
    parser.add_argument("--json", action="store_true", help="print one run event per line (JSON)")
    parser.add_argument("--replay", default=None, metavar="TRANSCRIPT",
                        help="replay a recorded run (a transcript, a run id or the start of one) offline; exit 1 "
                             "when the agent now sends something else")
    parser.add_argument("--live-tools", action="store_true",
                        help="with --replay: run the tools instead of using the recorded results")
    parser.add_argument("--trace", action="store_true",
                        help="with --replay: export the replay's spans as a run does (a replay is offline and "
                             "exports nothing without it)")


def run(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from ..reporting import printable
    from ..runs.errors import RunError
    from ..runs.service import RunService  # the runtime loads here, never for `check` or `serve`
    from ..runs.terminal import run_in_terminal

    # A transcript that cannot be written is said once, from the run's result, not also by its log line.
    logging.getLogger("oscova_lsp.runs.transcript").setLevel(logging.ERROR)
    if args.replay is not None or args.live_tools:
        return _replay(args)
    if args.agent_id is None:
        print("oscova-lsp: the following arguments are required: AGENT_ID (or --replay RUN_ID, which replays the "
              "recorded agent)", file=sys.stderr)
        return EXIT_USAGE
    root = workspace_root(args.root)
    if root is None:
        return EXIT_USAGE
    if args.text is not None and args.input is not None:
        print("oscova-lsp: give the input once: as INPUT or as --input TEXT", file=sys.stderr)
        return EXIT_USAGE
    text = args.input if args.input is not None else args.text
    interactive = sys.stdin.isatty()
    if text is None:
        if interactive:
            print("Type the input, then press Ctrl-D:", file=sys.stderr)
        # The line end a pipe or Ctrl-D leaves is not part of the input (`echo hi |` sends "hi").
        text = sys.stdin.read().removesuffix("\n").removesuffix("\r")
        interactive = False  # stdin is spent: approval prompts cannot be answered
    if not text.strip():
        print("oscova-lsp: no input: pass --input TEXT or pipe it on stdin", file=sys.stderr)
        return EXIT_USAGE

    async def main() -> dict[str, object]:
        service = RunService(root)
        try:
            return await run_in_terminal(service, args.agent_id, text, as_json=args.json, out=sys.stdout,
                                         err=sys.stderr, interactive=interactive)
        finally:
            await service.aclose()

    try:
        result = asyncio.run(main())
    except RunError as error:  # the run never started (no such agent): a usage error, and nothing recorded
        print(f"oscova-lsp: {printable(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    if result["status"] != "completed":
        return EXIT_FINDINGS
    return EXIT_INCOMPLETE if result.get("incomplete") else EXIT_OK


REPLAY_MATCHED = {"completed": "✓ replay matches the recording",
                  "failed": "✓ the replay reproduces the recorded failure",
                  "cancelled": "✓ the replay reproduces the recorded cancellation"}
"""The last line of a replay that ended as its recording did: a failure reproduced is not a success."""


def _replay(args: argparse.Namespace) -> int:
    """`run AGENT --replay TRANSCRIPT`: exit 0 when the replay matches, 1 when it drifted or ended otherwise
    than recorded, 2 for a transcript that cannot be replayed."""
    import asyncio

    from ..reporting import display_path, json_text, printable
    from ..runs.replay import DRIFTED, RecordingError, replay_run
    from ..runs.terminal import JsonLines, LiveTranscript, approver
    from ..runs.transcript import resolve_transcript

    if args.replay is None:
        print("oscova-lsp: --live-tools goes with --replay TRANSCRIPT", file=sys.stderr)
        return EXIT_USAGE
    root = workspace_root(args.root)
    if root is None:
        return EXIT_USAGE
    listener = JsonLines(sys.stdout) if args.json else LiveTranscript(sys.stdout, sys.stderr, spinner=False)
    try:
        path = resolve_transcript(root, args.replay)
        if not args.json:
            print(f"replaying {printable(display_path(path))} offline" + (" (live tools)" if args.live_tools else ""),
                  file=sys.stderr)
        approve = approver(listener if isinstance(listener, LiveTranscript) else None, sys.stderr)
        outcome = asyncio.run(replay_run(root, args.agent_id, path, input=args.input, live_tools=args.live_tools,
                                         on_event=listener, trace=args.trace, approve=approve))
    except RecordingError as error:
        print(f"oscova-lsp: {printable(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    if outcome.result.get("transcriptError"):
        print(f"⚠ the replay's {outcome.result['transcriptError'].removeprefix('the ')}", file=sys.stderr)
    if args.json:
        print(json_text({"kind": "replay", "matched": outcome.matched, "status": outcome.status,
                         "difference": outcome.difference, "transcript": outcome.transcript}))
    elif outcome.status == DRIFTED:
        print(f"✗ drifted: {printable(outcome.difference or '')}", file=sys.stderr)
    elif outcome.matched:
        print(REPLAY_MATCHED.get(outcome.status, REPLAY_MATCHED["completed"]), file=sys.stderr)
    else:
        print(f"✗ the replay ended {outcome.status}, the recorded run otherwise", file=sys.stderr)
    return EXIT_OK if outcome.matched else EXIT_FINDINGS
