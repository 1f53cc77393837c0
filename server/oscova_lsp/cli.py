"""The `oscova-lsp` command line (SPEC §7). Heavy modules are imported by the command that needs them."""

from __future__ import annotations

import argparse
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

    sub.add_parser("schema", help="print the JSON Schema of agent definitions")
    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?", help="an OSC code; omit to list every rule")
    return parser


def _serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    parser.add_argument("--tcp", action="store_true", help="listen on a TCP port instead")
    parser.add_argument("--host", default="127.0.0.1", help="TCP host (default 127.0.0.1)")
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
