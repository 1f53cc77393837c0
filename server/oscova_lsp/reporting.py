"""Diagnostics as text, JSON, SARIF 2.1.0 and GitHub workflow commands (SPEC §7)."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable
from typing import Any

from oscova_runtime.paths import is_inside

from . import __version__
from .analysis.diagnostics import Diagnostic, Severity
from .analysis.rules import RULES

FORMATS = ("text", "json", "sarif", "github")


def display_path(path: str) -> str:
    """Relative to the current directory when below it; absolute otherwise."""
    return _display_path(path, os.getcwd())


@functools.lru_cache(maxsize=8192)  # a file's path is shown once per diagnostic, related location and edit
def _display_path(path: str, cwd: str) -> str:
    return os.path.relpath(path, cwd) if is_inside(path, cwd, real=False) else path


def format_text(diagnostics: Iterable[Diagnostic]) -> str:
    lines = []
    for d in diagnostics:
        lines.append(f"{display_path(d.path)}:{d.range.start.line + 1}:{d.range.start.character + 1}: "
                     f"{d.code} {d.message}")
    return "\n".join(lines)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def summary(diagnostics: list[Diagnostic], files: int, workspaces: int = 1, failing: Iterable[str] = ()) -> str:
    """The last line of text output: what was checked (files and workspaces), what was found, and which
    workspaces have errors."""
    scope = f"{_count(files, 'file')} of {_count(workspaces, 'workspace')}"
    if not diagnostics:
        return f"All checks passed ({scope} checked)."
    counts = {s: sum(1 for d in diagnostics if d.severity is s) for s in Severity}
    parts = [f"{n} {s.label}{'s' if n != 1 and s is not Severity.INFORMATION else ''}"
             for s, n in counts.items() if n]
    failing = [display_path(root) for root in failing]
    where = f"; errors in {', '.join(failing)}" if failing and workspaces > 1 else ""
    return f"Found {', '.join(parts)} in {scope} checked{where}."


def format_json(diagnostics: Iterable[Diagnostic]) -> str:
    out = []
    for d in diagnostics:
        item = d.to_json()
        item["path"] = display_path(d.path)
        for related in item["relatedInformation"]:
            related["path"] = display_path(related["path"])
        for fix in item["fixes"]:
            for edit in fix["edits"]:
                edit["path"] = display_path(edit["path"])
        out.append(item)
    if not out:
        return "[]"
    # One diagnostic a line: readable, diff-friendly, and written by json's C encoder (`indent` would take the
    # pure-Python one, a second on 3,500 diagnostics).
    return "[\n" + ",\n".join("  " + json.dumps(item, ensure_ascii=False) for item in out) + "\n]"


_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning",
                Severity.INFORMATION: "note", Severity.HINT: "note"}


def _sarif_region(d_range: Any) -> dict[str, int]:
    return {
        "startLine": d_range.start.line + 1,
        "startColumn": d_range.start.character + 1,
        "endLine": d_range.end.line + 1,
        "endColumn": d_range.end.character + 1,
    }


def _artifact(path: str) -> dict[str, str]:
    rel = display_path(path)
    return {"uri": rel.replace(os.sep, "/")} if not os.path.isabs(rel) else {"uri": "file://" + rel}


def format_sarif(diagnostics: list[Diagnostic]) -> str:
    codes = sorted(RULES)
    rule_index = {code: i for i, code in enumerate(codes)}
    results = []
    for d in diagnostics:
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": rule_index[d.code],
            "level": _SARIF_LEVEL[d.severity],
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {"artifactLocation": _artifact(d.path),
                                                "region": _sarif_region(d.range)}}],
        }
        if d.related:
            result["relatedLocations"] = [
                {"id": i, "message": {"text": r.message},
                 "physicalLocation": {"artifactLocation": _artifact(r.path), "region": _sarif_region(r.range)}}
                for i, r in enumerate(d.related)
            ]
        if d.fixes:
            result["fixes"] = [
                {"description": {"text": f.title},
                 "artifactChanges": [
                     {"artifactLocation": _artifact(e.path),
                      "replacements": [{"deletedRegion": _sarif_region(e.range),
                                        "insertedContent": {"text": e.new_text}}]}
                     for e in f.edits]}
                for f in d.fixes
            ]
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "oscova-lsp",
                "version": __version__,
                "informationUri": "https://github.com/oscova/oscova-lsp",
                "rules": [
                    {"id": code,
                     "name": code,
                     "shortDescription": {"text": RULES[code].summary},
                     "fullDescription": {"text": RULES[code].explanation.strip().replace("\n", " ")},
                     "defaultConfiguration": {"level": _SARIF_LEVEL[RULES[code].severity]},
                     "help": {"text": RULES[code].documentation()}}
                    for code in codes
                ],
            }},
            "columnKind": "utf16CodeUnits",
            "results": results,
        }],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)


_GITHUB_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning",
                 Severity.INFORMATION: "notice", Severity.HINT: "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(level: str, properties: dict[str, object], message: str) -> str:
    """One GitHub workflow command (`::error file=…,line=…::message`), its properties and message escaped."""
    props = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties.items())
    return f"::{level} {props}::{_escape_data(message)}"


def format_github(diagnostics: Iterable[Diagnostic]) -> str:
    lines = []
    for d in diagnostics:
        props = (f"file={_escape_property(display_path(d.path))},line={d.range.start.line + 1},"
                 f"col={d.range.start.character + 1},endLine={d.range.end.line + 1},"
                 f"endColumn={d.range.end.character + 1},title={_escape_property(d.code)}")
        lines.append(f"::{_GITHUB_LEVEL[d.severity]} {props}::{_escape_data(f'{d.code} {d.message}')}")
    return "\n".join(lines)
