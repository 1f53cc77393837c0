"""Diagnostics as text, JSON, SARIF 2.1.0 and GitHub workflow commands (docs/checking.md)."""

from __future__ import annotations

import functools
import json
import os
import re
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

from oscova_runtime.paths import is_inside

from . import __version__
from .analysis.diagnostics import Diagnostic, Severity
from .analysis.text import Range

FORMATS = ("text", "json", "sarif", "github")

# -- text that is safe to print ---------------------------------------------------------------------------
# Files, models and tools can hold control characters: ESC ] 0 ; … BEL retitles a terminal, ESC[2K ESC[1A
# erases what was printed. Terminal output shows each as `\x1b` (git and ripgrep do the same), a byte of a
# file name that is not UTF-8 (a lone surrogate from `surrogateescape`) as `\xff`, and bidirectional
# overrides as `\u202e`; newlines and tabs stay (and a CR before a newline).

_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
                          "|\r(?!\n)")
_UNPRINTABLE_ON_A_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""What JSON leaves raw that a terminal showing it could act on (DEL, C1, bidirectional overrides: escaped
`\\u009b`, the same value), and lone surrogates, which no UTF-8 encoder can write."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte `surrogateescape` could not decode
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` for a terminal: control characters escaped, newlines and tabs kept."""
    return _UNPRINTABLE.sub(_escape, text)


def printable_line(text: str) -> str:
    """`text` on one line of a terminal (a path, a name): newlines and tabs escaped too."""
    return _UNPRINTABLE_ON_A_LINE.sub(_escape, text)


def json_text(value: Any, **options: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **options)`, valid UTF-8 always and safe to show (`_json_safe`)."""
    return _json_safe(json.dumps(value, ensure_ascii=False, **options))


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xD800 <= code <= 0xDFFF:  # the text `\xff` (a byte of a name that is not UTF-8), as JSON writes it
        return _escape(match).replace("\\", "\\\\")
    return f"\\u{code:04x}"


def _json_safe(text: str) -> str:
    """JSON text with DEL, C1 controls and bidirectional overrides written as JSON escapes, and each lone
    surrogate as the characters `\\xff` (JSON without lone surrogates: every decoder takes it)."""
    return _JSON_UNSAFE.sub(_json_escape, text)


def display_path(path: str) -> str:
    """Relative to the current directory when below it; absolute otherwise."""
    return _display_path(path, os.getcwd())


@functools.lru_cache(maxsize=8192)  # a file's path is shown once per diagnostic, related location and edit
def _display_path(path: str, cwd: str) -> str:
    if not is_inside(path, cwd, real=False):
        return path
    absolute, folder = os.path.abspath(path), _absolute(cwd)
    rest = absolute[len(folder.rstrip(os.sep)) + 1:]
    if not path or absolute == folder or not rest or rest[0] == os.sep:  # the folder itself; a `//` start
        return os.path.relpath(path, cwd)
    return rest  # what `os.path.relpath` answers below the folder, without its walk over both paths' components


@functools.lru_cache(maxsize=8)
def _absolute(folder: str) -> str:
    return os.path.abspath(folder)


def wants_color(stream: Any, choice: str = "auto") -> bool:
    """Whether to write `stream` in colour: `choice` (`--color`) `always` or `never` decides; `auto` takes
    `NO_COLOR` (no colour), then `FORCE_COLOR` (colour), then whether `stream` is a terminal (not `TERM=dumb`)."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"


_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFORMATION: "blue",
                   Severity.HINT: "cyan"}


def _text_parts(d: Diagnostic) -> tuple[str, str, str, str]:
    """A text line's path, `:line:col:`, code and ` message`."""
    return (printable_line(display_path(d.path)), f":{d.range.start.line + 1}:{d.range.start.character + 1}:",
            f" {d.code}", f" {printable(d.message)}")


def format_text(diagnostics: Iterable[Diagnostic], *, color: bool = False) -> str:
    """`path:line:col: CODE message`, a line each; with `color`, the same words in colour (rich's styles, imported
    only then): the path bold, the position dim, the code by its severity."""
    if not color:
        return "\n".join("".join(_text_parts(d)) for d in diagnostics)
    path, where = styler("bold"), styler("dim")
    code = {severity: styler(style) for severity, style in _SEVERITY_STYLE.items()}
    lines = []
    for d in diagnostics:
        shown_path, position, shown_code, message = _text_parts(d)
        lines.append(path(shown_path) + where(position) + code[d.severity](shown_code) + message)
    return "\n".join(lines)


def color_summary(line: str, diagnostics: list[Diagnostic]) -> str:
    """The summary line in colour: green when nothing was found, red with errors, yellow otherwise."""
    style = ("green" if not diagnostics else
             "bold red" if any(d.severity is Severity.ERROR for d in diagnostics) else "yellow")
    return styler(style)(line)


def styler(style: str) -> Callable[[str], str]:
    """A function that writes a text in `style` (rich's style syntax: `bold red`) for a terminal of the 8 standard
    colours; rich is imported on the first call, so only output in colour loads it."""
    from rich.color import ColorSystem
    from rich.style import Style

    parsed = Style.parse(style)
    return lambda text: parsed.render(text, color_system=ColorSystem.STANDARD) if text else text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def summary(diagnostics: list[Diagnostic], files: int, workspaces: int = 1, failing: Iterable[str] = (),
            covered: str = "") -> str:
    """The last line of text output: what was checked (files and workspaces, and `covered`: which files, when
    that needs saying), what was found, and which workspaces have errors."""
    scope = f"{_count(files, 'file')} of {_count(workspaces, 'workspace')} checked"
    if not diagnostics:
        return f"All checks passed ({scope}{': ' + covered if covered else ''})."
    counts = {s: sum(1 for d in diagnostics if d.severity is s) for s in Severity}
    parts = [f"{n} {s.label}{'s' if n != 1 and s is not Severity.INFORMATION else ''}"
             for s, n in counts.items() if n]
    failing = [printable_line(display_path(root)) for root in failing]
    where = f"; errors in {', '.join(failing)}" if failing and workspaces > 1 else ""
    return f"Found {', '.join(parts)} in {scope}{f' ({covered})' if covered else ''}{where}."


def format_json(diagnostics: Iterable[Diagnostic]) -> str:
    """Each diagnostic's `to_json()`, its paths as `display_path` shows them, as `json.dumps` writes it, one a
    line (readable and diff-friendly)."""
    cwd = os.getcwd()
    lines = [_json_line(d, lambda path: _display_path(path, cwd)) for d in diagnostics]
    return _json_safe("[\n" + ",\n".join(lines) + "\n]") if lines else "[]"


def _json_line(d: Diagnostic, shown: Callable[[str], str]) -> str:
    """`"  " + json.dumps(item, ensure_ascii=False)` of the diagnostic's `to_json()` with its paths `shown`, written
    out here: its shape is known, and building the dictionaries for the encoder took two thirds of the time
    (`indent` would take json's pure-Python encoder, slower still). tests/analysis/test_report_json.py holds
    the two to the same text."""
    related = ", ".join(f'{{"path": {_string(shown(r.path))}, "range": {_range(r.range)}, "message": '
                        f'{_string(r.message)}}}' for r in d.related)
    fixes = ", ".join(f'{{"title": {_string(f.title)}, "edits": ['
                      + ", ".join(f'{{"path": {_string(shown(e.path))}, "range": {_range(e.range)}, "newText": '
                                  f'{_string(e.new_text)}}}' for e in f.edits) + "]}" for f in d.fixes)
    return (f'  {{"path": {_string(shown(d.path))}, "range": {_range(d.range)}, "severity": '
            f'{_string(d.severity.label)}, "code": {_string(d.code)}, "source": "oscova", "message": '
            f'{_string(d.message)}, "relatedInformation": [{related}], "fixes": [{fixes}]}}')


_string = json.encoder.encode_basestring
"""A string as `json.dumps(..., ensure_ascii=False)` writes it (json's C function)."""


def _range(rng: Range) -> str:
    """`rng.to_json()` as `json.dumps` writes it."""
    start, end = rng.start, rng.end
    return (f'{{"start": {{"line": {start.line}, "character": {start.character}}}, '
            f'"end": {{"line": {end.line}, "character": {end.character}}}}}')


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
    """A SARIF artifact location: a URI reference, percent-encoded from the name's bytes (RFC 3986), so a name
    that is not UTF-8 or holds a space is still a valid URI."""
    rel = display_path(path)
    uri = urllib.parse.quote(os.fsencode(rel.replace(os.sep, "/")), safe="/")
    return {"uri": uri} if not os.path.isabs(rel) else {"uri": "file://" + uri}


def format_sarif(diagnostics: list[Diagnostic]) -> str:
    # Imported here: the other formats print stored results with no rule module loaded.
    from .analysis.rules.registry import RULES

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
    return json_text(log, indent=2)


_GITHUB_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning",
                 Severity.INFORMATION: "notice", Severity.HINT: "notice"}


def github_data(text: str) -> str:
    """Text of a GitHub workflow command's message (`::error …::message`)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(text: str) -> str:
    """A value of a GitHub workflow command's properties (`file=`, `title=`)."""
    return github_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(level: str, properties: dict[str, object], message: str) -> str:
    """One GitHub workflow command (`::error file=…,line=…::message`), its properties and message escaped."""
    props = ",".join(f"{key}={github_property(str(value))}" for key, value in properties.items())
    return f"::{level} {props}::{github_data(message)}"


def format_github(diagnostics: Iterable[Diagnostic]) -> str:
    lines = []
    for d in diagnostics:
        props = (f"file={github_property(printable_line(display_path(d.path)))},line={d.range.start.line + 1},"
                 f"col={d.range.start.character + 1},endLine={d.range.end.line + 1},"
                 f"endColumn={d.range.end.character + 1},title={github_property(d.code)}")
        lines.append(f"::{_GITHUB_LEVEL[d.severity]} {props}::{github_data(printable(f'{d.code} {d.message}'))}")
    return "\n".join(lines)
