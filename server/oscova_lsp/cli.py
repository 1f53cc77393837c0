"""The `oscova-lsp` command line (SPEC §7). Heavy modules are imported by the command that needs them."""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Sequence

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"oscova-lsp: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _codes(value: str) -> frozenset[str]:
    return frozenset(c.strip().upper() for c in value.split(",") if c.strip())


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

    serve = sub.add_parser("serve", help="run the language server (stdio by default)")
    _serve_arguments(serve)

    run = sub.add_parser("run", help="run an agent, streaming its answer, tool calls and results")
    run.add_argument("agent_id", metavar="AGENT_ID")
    run.add_argument("--input", default=None, metavar="TEXT", help="the input (default: read from stdin)")
    run.add_argument("--root", default=None, metavar="DIR",
                     help="the workspace root (default: found from the current directory)")
    run.add_argument("--json", action="store_true", help="print one run event per line (JSON)")

    preview = sub.add_parser("preview", help="print an agent's assembled instructions, messages and tools")
    preview.add_argument("agent_id", metavar="AGENT_ID")
    preview.add_argument("--input", default=None, metavar="TEXT", help="an input message to assemble with")
    preview.add_argument("--root", default=None, metavar="DIR",
                         help="the workspace root (default: found from the current directory)")
    preview.add_argument("--json", action="store_true", help="print the preview as JSON")

    sub.add_parser("schema", help="print the JSON Schema of agent definitions")
    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?", help="an OSC code; omit to list every rule")
    return parser


def _serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    parser.add_argument("--tcp", action="store_true", help="listen on a TCP port instead")
    parser.add_argument("--host", default="127.0.0.1", help="TCP host, loopback only (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=2087, help="TCP port (default 2087)")
    parser.add_argument("--clientProcessId", "--client-process-id", dest="client_pid", type=int, default=None,
                        help="exit when this process is gone")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
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
        if args.command == "preview":
            return _preview(args)
        if args.command == "schema":
            return _schema()
        if args.command == "rule":
            return _rule(args.code)
        build_parser().print_help(sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    from .analysis.checks import LintOptions
    from .analysis.diagnostics import Diagnostic, Severity
    from .analysis.engine import Analysis, analysis_for
    from .reporting import format_github, format_json, format_sarif, format_text, summary

    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        print(f"oscova-lsp: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    lint = LintOptions(select=args.select, ignore=args.ignore)
    analyses: dict[str, tuple[Analysis, list[str]]] = {}
    for path in args.paths:
        analysis = analysis_for(path, lint)
        analyses.setdefault(analysis.root, (analysis, []))[1].append(os.path.abspath(path))
    diagnostics: list[Diagnostic] = []
    files = 0
    for analysis, paths in analyses.values():
        analysis.load(jobs=args.jobs)
        gc.freeze()  # the parsed workspace lives until exit: keep the collector from rescanning it
        for notice in analysis.workspace.notices:
            print(f"note: {notice}", file=sys.stderr)
        found = analysis.all_diagnostics(paths)
        files += len(found)
        for items in found.values():
            diagnostics.extend(items)
    diagnostics.sort(key=Diagnostic.sort_key)
    if args.format == "text":
        body = format_text(diagnostics)
        if body:
            print(body)
        print(summary(diagnostics, files))
    elif args.format == "json":
        print(format_json(diagnostics))
    elif args.format == "sarif":
        print(format_sarif(diagnostics))
    else:
        body = format_github(diagnostics)
        if body:
            print(body)
    return EXIT_FINDINGS if any(d.severity is Severity.ERROR for d in diagnostics) else EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    from .lsp.launch import serve_stdio, serve_tcp  # pygls is imported by the server, never by `check`

    if args.tcp:
        return serve_tcp(args.host, args.port, args.client_pid)
    return serve_stdio(args.client_pid)


def _workspace_root(option: str | None) -> str | None:
    """`--root`, else the root found from the current directory, else the current directory."""
    from .analysis.workspace import find_root

    if option is not None:
        if not os.path.isdir(option):
            print(f"oscova-lsp: the workspace root {option} is not a directory", file=sys.stderr)
            return None
        return os.path.abspath(option)
    return find_root(os.getcwd()) or os.getcwd()


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from .runs.service import RunService  # the runtime loads here, never for `check` or `serve`
    from .runs.terminal import run_in_terminal

    root = _workspace_root(args.root)
    if root is None:
        return EXIT_USAGE
    text = args.input
    interactive = sys.stdin.isatty()
    if text is None:
        if interactive:
            print("Type the input, then press Ctrl-D:", file=sys.stderr)
        text = sys.stdin.read()
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
    return EXIT_OK if result["status"] == "completed" else EXIT_FINDINGS


def _preview(args: argparse.Namespace) -> int:
    import asyncio

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
        print(f"oscova-lsp: {error}", file=sys.stderr)
        return EXIT_FINDINGS
    if args.json:
        print(json.dumps(preview, indent=2, ensure_ascii=False))
    else:
        print(format_preview(preview, color=sys.stdout.isatty() and "NO_COLOR" not in os.environ))
    return EXIT_OK


def _schema() -> int:
    from oscova_runtime.definition import definition_json_schema

    print(json.dumps(definition_json_schema(), indent=2))
    return EXIT_OK


def _rule(code: str | None) -> int:
    from .analysis.rules import RULES

    if code is None:
        for rule in RULES.values():
            print(f"{rule.code}  {rule.severity.label:<11}  {rule.summary}")
        return EXIT_OK
    found = RULES.get(code.upper())
    if found is None:
        print(f"oscova-lsp: unknown rule `{code}`; `oscova-lsp rule` lists them", file=sys.stderr)
        return EXIT_USAGE
    print(found.documentation())
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
