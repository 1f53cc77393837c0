"""The `oscova-lsp` command line (docs/cli.md). Heavy modules are imported by the command that needs them."""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
"""`EXIT_INCOMPLETE`: `run` ended `completed` with an answer that is cut off (`finish_reason` `length` or
`content_filter`) or that a guard stopped (the result's `incomplete`)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"oscova-lsp: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _codes(value: str) -> frozenset[str]:
    """`--select` / `--ignore`: comma-separated codes or prefixes, each naming a rule (a typo is an error)."""
    from .analysis.lint import code_list

    try:
        return code_list(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _port(value: str) -> int:
    """`--port`: a TCP port number (0 lets the system choose one)."""
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"the port must be a number from 0 to 65535, not {value}")
    return port


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(prog="oscova-lsp", description="Language server and checker for Oscova agent definitions.")
    parser.add_argument("--version", action="version", version=f"oscova-lsp {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    check = sub.add_parser("check", help="check agent definitions, templates and host configuration")
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    check.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    check.add_argument("--select", type=_codes, default=None, metavar="CODES",
                       help="comma-separated codes or prefixes to report (default: all)")
    check.add_argument("--ignore", type=_codes, default=frozenset(), metavar="CODES",
                       help="comma-separated codes or prefixes to leave out")
    check.add_argument("--jobs", type=int, default=None, help="worker processes for large workspaces")
    check.add_argument("--workspaces", action="store_true",
                       help="check the whole workspace of each PATH, not only PATH (the pre-commit hook passes "
                            "the changed files)")
    check.add_argument("--no-cache", action="store_true",
                       help="parse every file again, neither reading nor writing the facts cache (also: "
                            "OSCOVA_LSP_NO_CACHE=1)")

    serve = sub.add_parser("serve", help="run the language server (stdio by default)")
    _serve_arguments(serve)

    run = sub.add_parser("run", help="run an agent, streaming its answer, tool calls and results",
                         epilog="exit status: 0 completed, 1 failed or cancelled, 2 usage error, 3 completed with an "
                                "incomplete answer (cut off at the token limit or by a content filter, or stopped "
                                "by the repeated-call guard)")
    run.add_argument("agent_id", metavar="AGENT_ID", nargs="?",
                     help="the agent to run (with --replay: default the recorded one)")
    run.add_argument("text", metavar="INPUT", nargs="?", default=None,
                     help="the input (or --input TEXT; default: read from stdin)")
    run.add_argument("--input", default=None, metavar="TEXT", help="the input (default: read from stdin)")
    run.add_argument("--root", default=None, metavar="DIR",
                     help="the workspace root (default: found from the current directory)")
    run.add_argument("--json", action="store_true", help="print one run event per line (JSON)")
    run.add_argument("--replay", default=None, metavar="TRANSCRIPT",
                     help="replay a recorded run (a transcript or run id) offline; exit 1 when the agent now "
                          "sends something else")
    run.add_argument("--live-tools", action="store_true", help="with --replay: run the tools instead of "
                     "using the recorded results")
    run.add_argument("--trace", action="store_true", help="with --replay: export the replay's spans as a run "
                     "does (a replay is offline and exports nothing without it)")

    preview = sub.add_parser("preview", help="print an agent's assembled instructions, messages and tools")
    preview.add_argument("agent_id", metavar="AGENT_ID")
    preview.add_argument("--input", default=None, metavar="TEXT", help="an input message to assemble with")
    preview.add_argument("--root", default=None, metavar="DIR",
                         help="the workspace root (default: found from the current directory)")
    preview.add_argument("--json", action="store_true", help="print the preview as JSON")

    compare = sub.add_parser("diff", help="compare two recorded runs (transcripts or run ids): the first "
                             "differing model request, the tool calls, the answers")
    compare.add_argument("first", metavar="A")
    compare.add_argument("second", metavar="B")
    compare.add_argument("--root", default=None, metavar="DIR",
                         help="the workspace whose .oscova/runs/ holds the run ids (default: found from the "
                              "current directory)")

    _test_arguments(sub.add_parser("test", help="replay the agent tests (recorded runs) under .oscova/tests/"))
    sub.add_parser("debug", help="run a Debug Adapter Protocol server over stdio: launch an agent run (live, a "
                   "replay, or a fork from model call N), stop at its steps, inspect and edit what it sends")

    review = sub.add_parser("review", help="show what every agent a change reaches will be sent, before and after "
                            "the change, offline (the base read from git objects)")
    review.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    review.add_argument("--base", default=None, metavar="REF",
                        help="the commit to compare with (default: the merge base with the default branch, else HEAD)")
    review.add_argument("--format", choices=("text", "markdown", "json", "github"), default="text")
    review.add_argument("--trust", action="store_true",
                        help="import the workspace's own tools and providers (at both sides) to render them")

    _eval_arguments(sub.add_parser("eval", help="run the evaluations (*.eval.yaml): every case × model × repeat, "
                                                "graded"))

    schema = sub.add_parser("schema", help="print the JSON Schema of agent definitions (--eval: of evaluations)")
    schema.add_argument("--eval", action="store_true", help="the JSON Schema of evaluation files (*.eval.yaml)")
    sub.add_parser("providers", help="list the built-in context provider types (the default order)")
    sub.add_parser("tools", help="list the built-in tools")
    init = sub.add_parser("init", help="start a workspace: an oscova.toml on the offline model, an agent, an agent "
                                       "test and an evaluation (nothing that exists is overwritten)")
    init.add_argument("folder", nargs="?", default=".", metavar="DIR", help="where (default: here; made if missing)")
    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?", help="an OSC code; omit to list every rule")
    return parser


def _serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    parser.add_argument("--tcp", action="store_true", help="listen on a TCP port instead")
    parser.add_argument("--host", default="127.0.0.1", help="TCP host, loopback only (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=2087, help="TCP port (default 2087)")
    parser.add_argument("--clientProcessId", "--client-process-id", dest="client_pid", type=int, default=None,
                        help="exit when this process is gone")


def _last_resort(entry: Callable[..., int]) -> Callable[..., int]:
    """No input ends in a traceback: an unexpected failure is one sentence on stderr and exit status 2."""

    @functools.wraps(entry)
    def guarded(argv: Sequence[str] | None = None) -> int:
        try:
            return entry(argv)
        except (SystemExit, KeyboardInterrupt):
            raise
        except RecursionError:
            print("oscova-lsp: internal error: the input nests too deeply to be processed; please report it "
                  "with the file that caused it", file=sys.stderr)
        except MemoryError:
            print("oscova-lsp: internal error: out of memory; please report it with the file that caused it",
                  file=sys.stderr)
        except Exception as error:  # noqa: BLE001 - the edge of the program: words, not a traceback
            print(f"oscova-lsp: internal error: {type(error).__name__}: {error}; please report it "
                  "(OSCOVA_LSP_TRACEBACK=1 prints the traceback)", file=sys.stderr)
            if os.environ.get("OSCOVA_LSP_TRACEBACK"):
                raise
        return EXIT_USAGE

    return guarded


@_last_resort
def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run-host"]:  # the language server's run host (`runhost/`): not a command for people
        from .runhost.child import main as run_host

        return run_host(argv[1:])
    if not argv or argv[0].startswith("--stdio") or argv[0].startswith("--clientProcessId") or argv[0] == "--tcp":
        argv = ["serve", *argv]  # `oscova-lsp` alone (or with a client's flags) is the language server
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            return _serve(args)
        if args.command == "check":
            return _check(args)
        if args.command == "run":
            return _run(args)
        if args.command == "diff":
            return _diff(args)
        if args.command == "preview":
            return _preview(args)
        if args.command == "test":
            return _test(args)
        if args.command == "review":
            return _review(args)
        if args.command == "debug":
            # the runtime loads here, never for `check` or `serve`
            from .debug.server import main as debug_main

            return debug_main()
        if args.command == "eval":
            return _eval(args)
        if args.command == "schema":
            return _schema(evaluation=args.eval)
        if args.command == "providers":
            return _providers()
        if args.command == "tools":
            return _tools()
        if args.command == "rule":
            return _rule(args.code)
        if args.command == "init":
            return _init(args.folder)
        build_parser().print_help(sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    from oscova_runtime.paths import is_inside

    from .analysis.diagnostics import Diagnostic, Severity
    from .analysis.lint import LintOptions
    from .reporting import display_path, printable

    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        print(f"oscova-lsp: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    lint = LintOptions(select=args.select, ignore=args.ignore)
    if not args.no_cache:
        held = _stored_check(args, lint)
        if held is not None:
            return held
    from .analysis.host import AnalysisHost
    from .analysis.workspace import workspace_roots

    paths = [os.path.abspath(p) for p in args.paths]
    roots: list[str] = []
    for path in paths:  # each path's own workspace, and every workspace nested below it
        roots += [root for root in workspace_roots(path) if root not in roots]
    if not roots:
        shown = ", ".join(display_path(p) for p in paths)
        print(f"oscova-lsp: nothing to check: {shown} is not an oscova workspace (no oscova.toml, or pyproject.toml "
              "with [tool.oscova], in it, above it or below it), so its *.agent.yaml and template files are left "
              "alone; an oscova.toml makes a folder a workspace (`oscova-lsp init` writes one)", file=sys.stderr)
        return EXIT_USAGE
    diagnostics: list[Diagnostic] = []
    files = 0
    checked: list[str] = []
    failing: list[str] = []
    rendered: list[str] = []  # the templates of the definitions given, checked with them
    # A short-lived process that builds a large graph of objects with few cycles: the cyclic collector would
    # walk it again and again (a third of a warm check's time on 10,000 files). Reference counting still
    # frees what is dropped; peak memory is measured by benchmarks/check_bench.py.
    gc.disable()
    host = AnalysisHost(paths, lint)
    for root in roots:
        # compared as written, as the index keys files: a folder symlinked into the root is still under it
        under = [p for p in paths if is_inside(p, root, real=False) or is_inside(root, p, real=False)]
        found, notices = host.check(root, jobs=args.jobs, cache=not args.no_cache,
                                    under=None if args.workspaces else under)
        for notice in notices:
            print(f"note: {printable(notice)}", file=sys.stderr)
        if found:
            checked.append(root)
        files += len(found)
        rendered += [p for p in found if not any(p == q or is_inside(p, q, real=False) for q in paths)]
        for items in found.values():
            diagnostics.extend(items)
        if any(d.severity is Severity.ERROR for items in found.values() for d in items):
            failing.append(root)
    if not files:
        print(f"oscova-lsp: nothing to check: no oscova.toml, agent definition (*.agent.yaml), template "
              f"(*.j2, *.jinja, *.jinja2) or evaluation (*.eval.yaml) under {', '.join(display_path(p) for p in paths)} outside never-scanned "
              "and `[host] exclude` folders", file=sys.stderr)
        return EXIT_USAGE
    from .analysis.rules.registry import RULES

    editor_only = frozenset(code for code, rule in RULES.items() if not rule.in_check)
    return _report(args, diagnostics, editor_only, files, checked, failing, _with_templates(paths, len(rendered)))


def _stored_check(args: argparse.Namespace, lint: Any) -> int | None:
    """A warm check of whole workspaces that reads none of their files: when each path given is a workspace root
    without nested workspaces and its stored results hold by the identities of its files and folders
    (`cache.check_by_stat`), they are printed as a check would print them, with no parser, pydantic model or rule
    module imported. None: the check reads the workspaces."""
    from .analysis.cache import check_by_stat
    from .analysis.diagnostics import Severity
    from .analysis.disk import find_root
    from .analysis.lint import lint_key
    from .reporting import printable

    roots = [os.path.abspath(p) for p in args.paths]
    if len(set(roots)) != len(roots) or any(not os.path.isdir(p) or find_root(p) != p for p in roots):
        return None
    checks = [check_by_stat(root, lint_key(lint)) for root in roots]
    held = [check.stored for check in checks if check.stored is not None and check.stored.editor_only is not None
            and check.nested == []]
    if len(held) != len(roots):
        return None
    diagnostics = [d for stored in held for items in stored.diagnostics.values() for d in items]
    for stored in held:
        for notice in stored.notices:
            print(f"note: {printable(notice)}", file=sys.stderr)
    failing = [root for root, stored in zip(roots, held, strict=True)
               if any(d.severity is Severity.ERROR for items in stored.diagnostics.values() for d in items)]
    checked = [root for root, stored in zip(roots, held, strict=True) if stored.diagnostics]
    files = sum(len(stored.diagnostics) for stored in held)
    if not files:
        return None  # the check says why there is nothing to check
    editor_only = frozenset().union(*(stored.editor_only or () for stored in held))
    return _report(args, diagnostics, editor_only, files, checked, failing, "")


def _report(args: argparse.Namespace, diagnostics: list[Any], editor_only: frozenset[str], files: int,
            checked: list[str], failing: list[str], covered: str) -> int:
    """Prints a check's findings in the format asked; the exit status."""
    from .analysis.diagnostics import Diagnostic
    from .reporting import format_github, format_json, format_sarif, format_text, summary

    # Editor-only rules (hints about what the template already handles) stay out of CI output unless named.
    named = args.select or frozenset()
    diagnostics = [d for d in diagnostics if d.code not in editor_only or d.code in named]
    diagnostics.sort(key=Diagnostic.sort_key)
    if args.format == "text":
        body = format_text(diagnostics)
        if body:
            print(body)
        print(summary(diagnostics, files, len(checked), failing, covered))
    elif args.format == "json":
        print(format_json(diagnostics))
    elif args.format == "sarif":
        print(format_sarif(diagnostics))
    else:
        body = format_github(diagnostics)
        if body:
            print(body)
    return EXIT_FINDINGS if failing else EXIT_OK


def _init(folder: str) -> int:
    from .starter import InitError, init_workspace

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


def _with_templates(paths: list[str], templates: int) -> str:
    """What a check of definition files covered besides them: the templates they render."""
    from .reporting import display_path

    if not templates:
        return ""
    noun = "template" if templates == 1 else "templates"
    given = [p for p in paths if os.path.isfile(p)]
    if len(given) == 1:
        return f"{display_path(given[0])} and the {templates} {noun} it renders"
    return f"the {len(given)} definitions given and the {templates} {noun} they render"


def _serve(args: argparse.Namespace) -> int:
    from .lsp.launch import serve_stdio, serve_tcp  # pygls is imported by the server, never by `check`

    if args.tcp:
        return serve_tcp(args.host, args.port, args.client_pid)
    if sys.stdin.isatty():  # typed at a terminal: say what this waiting process is
        print("oscova-lsp: this is the language server; it speaks LSP on stdin and stdout and waits for an "
              "editor to start it. Ctrl-C stops it; `oscova-lsp --help` lists the commands (check, run, …).",
              file=sys.stderr, flush=True)
    return serve_stdio(args.client_pid)


def _workspace_root(option: str | None) -> str | None:
    """`--root` when it holds a host configuration, else the root found from the current directory; None
    (with a sentence on stderr) when there is no workspace: a run or preview needs one, and writes nothing
    outside it."""
    from .analysis.workspace import find_root, host_config_path

    if option is not None:
        root = os.path.abspath(option)
        if not os.path.isdir(root):
            print(f"oscova-lsp: the workspace root {option} is not a directory", file=sys.stderr)
            return None
        if host_config_path(root) is None:
            above = find_root(root)
            hint = f"; the nearest workspace is {above}" if above else ""
            print(f"oscova-lsp: no workspace at {root}: it holds no oscova.toml (or pyproject.toml with "
                  f"[tool.oscova]){hint}", file=sys.stderr)
            return None
        return root
    found = find_root(os.getcwd())
    if found is None:
        print(f"oscova-lsp: no oscova.toml was found in {os.getcwd()} or any folder above it; run from inside "
              "a workspace or pass --root DIR", file=sys.stderr)
    return found


def _run(args: argparse.Namespace) -> int:
    import asyncio
    import logging

    from .runs.service import RunService  # the runtime loads here, never for `check` or `serve`
    from .runs.terminal import run_in_terminal

    # A transcript that cannot be written is said once, from the run's result, not also by its log line.
    logging.getLogger("oscova_lsp.runs.transcript").setLevel(logging.ERROR)
    if args.replay is not None or args.live_tools:
        return _replay(args)
    if args.agent_id is None:
        print("oscova-lsp: the following arguments are required: AGENT_ID (or --replay RUN_ID, which replays the "
              "recorded agent)", file=sys.stderr)
        return EXIT_USAGE
    root = _workspace_root(args.root)
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

    result = asyncio.run(main())
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

    from .reporting import display_path, json_text, printable
    from .runs.diff import resolve_transcript
    from .runs.replay import DRIFTED, RecordingError, replay_run
    from .runs.terminal import JsonLines, LiveTranscript, approver

    if args.replay is None:
        print("oscova-lsp: --live-tools goes with --replay TRANSCRIPT", file=sys.stderr)
        return EXIT_USAGE
    root = _workspace_root(args.root)
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


def _diff(args: argparse.Namespace) -> int:
    """`diff A B`: exit 0 when the runs are the same, 1 when they differ, 2 when one cannot be read."""
    from .analysis.workspace import find_root
    from .reporting import printable
    from .runs.diff import diff_transcripts, resolve_transcript
    from .runs.transcript import RecordingError

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


def _preview(args: argparse.Namespace) -> int:
    import asyncio

    from .reporting import json_text, printable
    from .runs.errors import RunError
    from .runs.service import RunService
    from .runs.terminal import format_preview

    root = _workspace_root(args.root)
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
        print(format_preview(preview, color=sys.stdout.isatty() and "NO_COLOR" not in os.environ))
    return EXIT_OK


def _test_arguments(parser: argparse.ArgumentParser) -> None:
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


def _test(args: argparse.Namespace) -> int:
    """`oscova-lsp test`: exit 0 when every case replays as recorded, 1 when one drifted or could not run,
    2 on usage errors and when there is no case at all."""
    import asyncio

    from .reporting import printable
    from .runs.cases import CaseError, find_cases, render, run_case, save_case, tests_dir

    if args.save is not None or args.name is not None:
        if args.save is None or args.paths or args.update:
            print("oscova-lsp: --name goes with --save RUN_ID, which takes no PATH and no --update", file=sys.stderr)
            return EXIT_USAGE
        root = _workspace_root(args.root)
        if root is None:
            return EXIT_USAGE
        first = not os.path.isdir(tests_dir(root))
        try:
            case = save_case(root, args.save, args.name)
        except CaseError as error:
            print(f"oscova-lsp: {printable(str(error))}", file=sys.stderr)
            return EXIT_USAGE
        print(_saved_words(case, first, named=args.name is not None))
        return EXIT_OK
    paths = args.paths
    if not paths:
        root = _workspace_root(args.root)
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


def _review(args: argparse.Namespace) -> int:
    """`review`: exit 0 when no agent test drifted and no error was introduced, 1 otherwise, 2 when the change
    cannot be reviewed (not a git repository, an unknown REF, a shallow clone without the base)."""
    import asyncio

    from oscova_runtime.paths import FileRefused, append_to_output

    from .analysis.cache import ENV_OFF
    from .review.formats import format_github, format_json, format_markdown, format_text
    from .review.git import ReviewError
    from .review.review import review

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


def _saved_words(case: Any, first: bool, *, named: bool) -> str:
    """Where a saved case went; the name it got when its default was taken; on a workspace's first case, the
    `.gitignore` lines that commit the cases and not the rest of `.oscova/`."""
    from .runs.cases import GITIGNORE_LINES, default_case_name, tests_dir

    line = f"saved the case {case.name}: {os.path.relpath(case.path)}"
    wanted = default_case_name(case.recording().agent_id)
    if not named and case.name != wanted:
        line += f" ({wanted} is taken; --name NAME names it)"
    if not first:
        return line
    ignore = "".join(f"\n    {pattern}" for pattern in GITIGNORE_LINES)
    return (f"{line}\nCommit {os.path.relpath(tests_dir(case.root))}{os.sep}: a case is a fixture of your "
            "repository. The rest of .oscova/ (run transcripts, memory) belongs to this machine; keep it out "
            f"with these lines in the .gitignore beside oscova.toml:{ignore}")


def _eval_arguments(parser: argparse.ArgumentParser) -> None:
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


def _eval(args: argparse.Namespace) -> int:
    """`oscova-lsp eval`: exit 0 when every case meets its pass rate on every model, 1 when one does not (a run that
    failed or was cancelled fails its case unless the case asserts that status; no run completed adds a sentence
    naming the cause on stderr) or the evaluation was cancelled, 2 on usage errors and when there is no evaluation
    file."""
    from .reporting import printable
    from .runs.eval_report import render
    from .runs.evals import EvalError, EvalOptions, find_evals, rescore

    options = EvalOptions(models=args.models, repeat=args.repeat, case=args.case, jobs=args.jobs)
    try:
        paths = args.paths or [_workspace_root(None) or os.getcwd()]
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

    from .runs.evals import run_evals

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


def _schema(*, evaluation: bool) -> int:
    from oscova_runtime.definition import definition_json_schema
    from oscova_runtime.evaluation import eval_json_schema

    print(json.dumps(eval_json_schema() if evaluation else definition_json_schema(), indent=2))
    return EXIT_OK


def _providers() -> int:
    """The built-in provider types, from the runtime's catalogue (the one list the checker and runs use)."""
    from oscova_runtime.catalogue import PROVIDERS

    for spec in PROVIDERS:
        print(f"{spec.position:>2}  {spec.type:<14} {spec.class_name}")
        print(f"    {spec.summary}")
        print(f"    active: {spec.applies_when}; contributes {', '.join(spec.contributes)}"
              + (f"; tools {', '.join(spec.tools)}" if spec.tools else "")
              + (f"; variables {', '.join(v.name for v in spec.variables)}" if spec.variables else ""))
    print("\nA definition lists more in `context_providers` (a type above, or a `[providers.NAME]` of oscova.toml);"
          " they are appended at position 10.")
    return EXIT_OK


def _tools() -> int:
    """The built-in tools, from the runtime's catalogue."""
    from oscova_runtime.catalogue import BUILTIN_TOOLS

    for spec in BUILTIN_TOOLS.values():
        where = f"from the `{spec.provider}` provider" if spec.provider else "selectable in `tools`"
        approval = ", approval required" if spec.approval_required else ""
        print(f"{spec.name:<17} {spec.description} ({where}{approval})")
    print("\nMore tools: `[tools.NAME]` in oscova.toml (`callable = \"module:function\"`).")
    return EXIT_OK


def _rule(code: str | None) -> int:
    from .analysis.lint import normal_code
    from .analysis.rules.registry import RULES, listing

    if code is None:
        print("\n".join(listing()))
        return EXIT_OK
    found = RULES.get(normal_code(code))
    if found is None:
        print(f"oscova-lsp: unknown rule `{code}`; `oscova-lsp rule` lists them", file=sys.stderr)
        return EXIT_USAGE
    print(found.documentation())
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
