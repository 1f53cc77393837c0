"""Jinja2 templates as plain facts: free variables with exact positions, references, syntax errors.

Jinja's AST carries line numbers only, so a small scanner finds the column of every identifier in the
template's code regions, and the two are matched name by name in source order. Scoping (set, for,
with, macro and call arguments, imports) is tracked by our own walk, which is an order of magnitude
cheaper than `jinja2.meta.find_undeclared_variables`.

The parts: `jinja_parse` (Jinja's tree, faster), `jinja_scan` (identifiers with their offsets), `jinja_walk`
(the scope walk) with `jinja_truth` (what a test proves), `jinja_recovery` (syntax errors), `jinja_facts` (the
facts themselves).
"""

from __future__ import annotations

import re
from collections import defaultdict
from operator import itemgetter

from .jinja_facts import SyntaxProblem, TemplateFacts, WireFacts, facts_from_wire, line_column
from .jinja_recovery import parse_tolerant
from .jinja_scan import Scan, scan_template
from .jinja_walk import Walker
from .text import LineIndex

_SUPPRESS_RE = re.compile(r"oscova:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")
_TAG_RE = re.compile(r"<(/?)([A-Za-z][\w.:-]*)(?:\s[^<>]*)?>")
_FENCE_RE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)


def analyze_template(text: str, edited: range | None = None) -> TemplateFacts:
    """Facts about one template's text. Never raises; a syntax error costs only its own construct.

    `edited`: the lines changed since the template last parsed, if known. A block opener typed there is the
    one left open, when the text alone cannot tell (`{% if a %}` typed inside another `{% if %}` block)."""
    return facts_from_wire(text, _analyze(text, edited))


def _analyze(text: str, edited: range | None = None) -> WireFacts:
    """`analyze_template`'s facts in their compact form, which the workers send: made as tuples, not as the
    objects `facts_to_wire` would take apart again (a few per cent of the time of a template of the benchmark)."""
    tree, parsed_text, errors = parse_tolerant(text, edited)
    lines = LineIndex(text)
    # Positions come from the text Jinja parsed: broken constructs blanked, lines and columns unchanged.
    scan = scan_template(parsed_text)
    suppressions = tuple(_suppressions(scan, lines).items())
    if parsed_text != text:
        # An include on a line being typed still counts: the graph of templates does not flicker.
        blanked = [ref for ref in scan_template(text).references if parsed_text[ref[2]] != text[ref[2]]]
        scan.references = sorted(scan.references + blanked, key=lambda ref: ref[2])
    references = []
    for kind, path, start, end, ignore_missing, with_context in scan.references:
        line, column = lines.line_column(start)
        references.append((kind, path, line, column, column + end - start, ignore_missing, with_context))
    if tree is None:
        return (), tuple(references), _errors(errors), (), suppressions, ()
    walker = Walker()
    try:
        walker.visit(tree)
    except RecursionError:
        errors = [*errors, SyntaxProblem("the template nests too deeply to analyse", 0)]
        return (), tuple(references), _errors(errors), (), suppressions, ()
    local_names = tuple(frozenset(walker.bound_anywhere))
    delimited = tuple(_delimited_intervals(text))
    # Match AST names to scanned identifiers, name by name, in source order (stable by line).
    taken: dict[str, int] = defaultdict(int)
    uses = []
    for name, lineno, free, effect in sorted(walker.names, key=itemgetter(1)):
        index = taken[name]
        taken[name] += 1
        if not free:
            continue
        offsets = scan.identifiers.get(name, ())
        offset = offsets[index] if index < len(offsets) else _fallback_offset(parsed_text, lines, name, lineno)
        line, column = lines.line_column(offset)
        uses.append((name, line, column, offset, effect))
    uses.sort(key=itemgetter(3))  # by offset
    return tuple(uses), tuple(references), _errors(errors), local_names, suppressions, delimited


def _errors(errors: list[SyntaxProblem]) -> tuple[tuple[str, int, int, int | None], ...]:
    return tuple((e.message, e.line, e.column, e.end_column) for e in errors)


def _fallback_offset(text: str, lines: LineIndex, name: str, lineno: int) -> int:
    """Where a name the scanner missed sits: from its line on (Jinja counts a lone CR as a line break)."""
    pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
    found = pattern.search(text, lines.line_start(lineno - 1)) or pattern.search(text)
    return found.start() if found else 0


def _suppressions(scan: Scan, lines: LineIndex) -> dict[int, frozenset[str] | None]:
    result: dict[int, frozenset[str] | None] = {}
    for offset, body in scan.comments:
        match = _SUPPRESS_RE.search(body)
        if not match:
            continue
        raw = match.group("codes")
        codes = None if raw is None else (frozenset(c.strip().upper() for c in raw.split(",") if c.strip()) or None)
        line, column = line_column(lines, offset)
        targets = [line]
        if not lines.line_text(line)[:column].strip():
            end_line = lines.position(offset + len(body) + 4).line
            rest = lines.line_text(end_line)
            if rest.rstrip().endswith("#}"):
                targets.append(end_line + 1)  # a comment alone on its line covers the next line too
        for target in targets:
            existing = result.get(target, frozenset())
            if target in result and (existing is None or codes is None):
                result[target] = None
            else:
                result[target] = codes if codes is None else (existing or frozenset()) | codes
    return result


def _delimited_intervals(text: str) -> list[tuple[int, int]]:
    intervals: list[tuple[int, int]] = []
    if "<" in text:
        stack: list[tuple[str, int]] = []
        for m in _TAG_RE.finditer(text):
            closing, name = m.group(1), m.group(2).lower()
            if not closing:
                if not m.group().endswith("/>"):
                    stack.append((name, m.end()))
                continue
            for i in range(len(stack) - 1, -1, -1):
                if stack[i][0] == name:
                    intervals.append((stack[i][1], m.start()))
                    del stack[i:]
                    break
    # A fence holds three backticks or tildes: a text without them (most) is not searched line by line.
    fences = [m.start() for m in _FENCE_RE.finditer(text)] if "```" in text or "~~~" in text else []
    for i in range(0, len(fences) - 1, 2):
        intervals.append((fences[i], fences[i + 1]))
    return intervals


def analyze_templates_to_wire(texts: list[str]) -> list[WireFacts]:
    """Worker-process entry point: many templates' facts in the compact form."""
    return [_analyze(text) for text in texts]
