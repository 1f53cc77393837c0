"""`oscova-lsp check`: the diagnostics of workspaces, in text, JSON, SARIF or GitHub annotations."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from typing import Any

from .common import (
    COLOR_CHOICES,
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    codes_argument,
)

NAME = "check"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        NAME, help="check agent definitions, templates and host configuration",
        description="Reports the diagnostics of the agent definitions, templates, evaluations and oscova.toml at and "
                    "below each PATH, each checked against its whole workspace.",
        epilog="exit status: 0 clean or warnings only, 1 errors found, 2 usage or I/O error, or nothing to check")
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH",
                        help="files or folders to check (default: the current folder); a definition given also "
                             "reports the templates it renders")
    parser.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text",
                        help="text: path:line:col: CODE message (the default); json: each diagnostic with its LSP "
                             "range (0-based); sarif: SARIF 2.1.0 for code scanning; github: GitHub workflow "
                             "commands that annotate a pull request")
    parser.add_argument("--color", choices=COLOR_CHOICES, default="auto",
                        help="colour the text output: auto (the default) at a terminal, unless NO_COLOR is set or "
                             "FORCE_COLOR asks for it when piped; always; never")
    parser.add_argument("--select", type=codes_argument, default=None, metavar="CODES",
                        help="comma-separated codes or prefixes to report (default: all)")
    parser.add_argument("--ignore", type=codes_argument, default=frozenset(), metavar="CODES",
                        help="comma-separated codes or prefixes to leave out")
    parser.add_argument("--jobs", type=int, default=None, help="worker processes for large workspaces")
    parser.add_argument("--workspaces", action="store_true",
                        help="check the whole workspace of each PATH, not only PATH (the pre-commit hook passes "
                             "the changed files)")
    parser.add_argument("--no-cache", action="store_true",
                        help="parse every file again, neither reading nor writing the facts cache (also: "
                             "OSCOVA_LSP_NO_CACHE=1)")


def run(args: argparse.Namespace) -> int:
    from ..analysis.lint import LintOptions

    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        print(f"oscova-lsp: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return EXIT_USAGE
    lint = LintOptions(select=args.select, ignore=args.ignore)
    if not args.no_cache:
        held = _stored_check(args, lint)
        if held is not None:
            return held
    # A short-lived process that builds a large graph of objects with few cycles: the cyclic collector would
    # walk it again and again (a third of a warm check's time on 10,000 files), and in the template workers,
    # forked from here and so collecting or not as this process does, cost a tenth of their time. Reference
    # counting still frees what is dropped; peak memory is measured by benchmarks/check_bench.py.
    gc.disable()
    prefetch = _prefetch(args)
    try:
        return _check(args, lint, prefetch)
    finally:
        if prefetch is not None:
            prefetch.close()


def _check(args: argparse.Namespace, lint: Any, prefetch: Any) -> int:
    """The check proper: each workspace of the paths loaded and checked (`AnalysisHost.check`); the templates of a
    root in `prefetch` (its pool and the templates already sent) are parsed there."""
    from oscova_runtime.paths import is_inside

    from ..analysis.diagnostics import Diagnostic, Severity
    from ..analysis.discovery import workspace_roots
    from ..analysis.host import AnalysisHost
    from ..reporting import display_path, printable

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
    host = AnalysisHost(paths, lint)
    for root in roots:
        # compared as written, as the index keys files: a folder symlinked into the root is still under it
        under = [p for p in paths if is_inside(p, root, real=False) or is_inside(root, p, real=False)]
        found, notices = host.check(root, jobs=args.jobs, cache=not args.no_cache,
                                    under=None if args.workspaces else under,
                                    prefetch=prefetch if prefetch is not None and prefetch.root == root else None)
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
        shown = ", ".join(display_path(p) for p in paths)
        print(f"oscova-lsp: nothing to check: no oscova.toml, agent definition (*.agent.yaml), template "
              f"(*.j2, *.jinja, *.jinja2) or evaluation (*.eval.yaml) under {shown} outside never-scanned "
              "and `[host] exclude` folders", file=sys.stderr)
        return EXIT_USAGE
    from ..analysis.rules.registry import RULES

    editor_only = frozenset(code for code, rule in RULES.items() if not rule.in_check)
    return _report(args, diagnostics, editor_only, files, checked, failing, _with_templates(paths, len(rendered)))


def _prefetch(args: argparse.Namespace) -> Any:
    """The templates of the one workspace root given, sent to worker processes before the check imports its
    parsers and rules (`template_prefetch.py`), when its every file will be parsed: without the cache, or with a
    cache that holds no facts of the root yet. None otherwise (files given, several paths, a warm cache)."""
    from ..analysis.cache_files import FACTS_FILE, cache_disabled, cache_folder
    from ..analysis.disk import find_root
    from ..analysis.template_prefetch import TemplatePrefetch

    workers = args.jobs if args.jobs is not None else os.cpu_count() or 1  # as the load counts them
    if len(args.paths) != 1 or workers < 2:
        return None
    root = os.path.abspath(args.paths[0])
    if not os.path.isdir(root) or find_root(root) != root:
        return None
    if not (args.no_cache or cache_disabled()) and os.path.exists(os.path.join(cache_folder(root), FACTS_FILE)):
        return None  # most templates' facts are stored: parsing them all again would cost more than it saves
    return TemplatePrefetch.start(root, workers)


def _stored_check(args: argparse.Namespace, lint: Any) -> int | None:
    """A warm check of whole workspaces that reads none of their files: when each path given is a workspace root
    without nested workspaces and its stored results hold by the identities of its files and folders
    (`warm_start.check_by_stat`), they are printed as a check would print them, with no parser, pydantic model or rule
    module imported. None: the check reads the workspaces."""
    from ..analysis.diagnostics import Severity
    from ..analysis.disk import find_root
    from ..analysis.lint import lint_key
    from ..analysis.warm_start import check_by_stat
    from ..reporting import printable

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
    from ..analysis.diagnostics import Diagnostic
    from ..reporting import (
        color_summary,
        format_github,
        format_json,
        format_sarif,
        format_text,
        summary,
        wants_color,
    )

    # Editor-only rules (hints about what the template already handles) stay out of CI output unless named.
    named = args.select or frozenset()
    diagnostics = [d for d in diagnostics if d.code not in editor_only or d.code in named]
    diagnostics.sort(key=Diagnostic.sort_key)
    if args.format == "text":
        color = wants_color(sys.stdout, args.color)
        body = format_text(diagnostics, color=color)
        if body:
            print(body)
        line = summary(diagnostics, files, len(checked), failing, covered)
        print(color_summary(line, diagnostics) if color else line)
    elif args.format == "json":
        print(format_json(diagnostics))
    elif args.format == "sarif":
        print(format_sarif(diagnostics))
    else:
        body = format_github(diagnostics)
        if body:
            print(body)
    return EXIT_FINDINGS if failing else EXIT_OK


def _with_templates(paths: list[str], templates: int) -> str:
    """What a check of definition files covered besides them: the templates they render."""
    from ..reporting import display_path

    if not templates:
        return ""
    noun = "template" if templates == 1 else "templates"
    given = [p for p in paths if os.path.isfile(p)]
    if len(given) == 1:
        return f"{display_path(given[0])} and the {templates} {noun} it renders"
    return f"the {len(given)} definitions given and the {templates} {noun} they render"
