"""The scanner: the identifiers of a template's code regions with their offsets, its references to other
templates with their spans, and its comments; Jinja's tree has line numbers only."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

OPEN_RE = re.compile(r"\{\{|\{%|\{#")
_TOKEN_RE = re.compile(
    r"""\s*+  # the spaces before a token, skipped with it
    (?:(?P<end>[-+]?(?:\}\}|%\}))
      |(?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      |(?P<name>[^\W\d]\w*)
      |(?P<num>\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)
      |(?P<op>==|!=|<=|>=|//|\*\*|[-+*/%~|.,:;()\[\]{}<>=!])
      |(?P<other>.))""",
    re.VERBOSE | re.DOTALL,
)
_ALONE_RE = re.compile(r"[-+]?\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*[-+]?(?:\}\}|%\})")
"""A region of one ASCII name alone before its end (`{{ name }}`, `{% endif %}`): its tokens in one match."""
RAW_END_RE = re.compile(r"\{%[-+]?\s*endraw\s*[-+]?%\}")
_COMPUTED_PATH_RE = re.compile(r"\s*(?:[~*/.|(\[]|\+(?!%\})|%(?!\})|(?:if|and|or|in|is|not)\b|[=!<>]=?)")
"""What follows a string that is only a part of a computed path (`"a-" ~ x`, `"a%s" % x`, `"a" if x else "b"`)."""
COMMENT_END = "#}"
_SKIP_AFTER = frozenset({"block", "endblock", "macro", "filter"})
_SKIP_TAGS = frozenset({"import", "from"})
_REF_TAGS = frozenset({"include", "import", "from", "extends"})


@dataclass(slots=True)
class Scan:
    identifiers: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    references: list[list[Any]] = field(default_factory=list)  # kind, path, start, end, ignore_missing, context
    comments: list[tuple[int, str]] = field(default_factory=list)
    unclosed: bool = False
    """Whether the last code region scanned ran to the end of the text without its closer."""


_NEXT_RE = re.compile(rf"\{{(?:\{{(?P<variable>{_ALONE_RE.pattern})?|%(?P<tag>{_ALONE_RE.pattern})?|#)")
"""The next opener (`OPEN_RE`), with the region after it when `_ALONE_RE` matches there: the commonest regions
are scanned in the search that finds them."""


def scan_template(text: str) -> Scan:
    scan = Scan()
    pos = 0
    n = len(text)
    while pos < n:
        m = _NEXT_RE.search(text, pos)
        if m is None:
            break
        if m.group("variable") is not None:  # a variable alone, as `scan_code` takes it
            scan.identifiers[m.group(2)].append(m.start(2))
            pos = m.end()
            continue
        if m.group("tag") is not None and m.group(4) != "raw":  # a tag alone: its name is no identifier
            pos = m.end()
            continue
        start = m.start() + 2
        opener = text[m.start():start]
        if opener == "{#":
            close = text.find(COMMENT_END, start)
            close = n if close == -1 else close
            scan.comments.append((m.start(), text[start:close]))
            pos = close + 2
            continue
        pos = scan_code(text, start, opener == "{%", scan)
    return scan


def scan_code(text: str, pos: int, is_tag: bool, scan: Scan) -> int:
    """Scans one `{{ }}` or `{% %}` region from `pos`; returns the offset after it."""
    alone = _ALONE_RE.match(text, pos)
    if alone is not None and not (is_tag and alone.group(1) == "raw"):
        if not is_tag:  # a variable; a tag's name is no identifier
            scan.identifiers[alone.group(1)].append(alone.start(1))
        return alone.end()
    n = len(text)
    if pos < n and text[pos] in "-+":
        pos += 1
    previous = ""  # the previous significant token
    before_previous = ""
    tag_name = ""
    depth = 0
    params_depth = -1  # paren depth of a macro/call signature, where `a=1` is a parameter
    ref_pending = False
    list_depth = -1  # the bracket depth of a list of paths (`{% include ["a.j2", "b.j2"] %}`)
    tag_refs: list[list[Any]] = []  # this tag's references, flagged by `ignore missing` / `with context`
    # Every character but a space starts a token (`other` takes any one), so the matches follow each other without
    # a gap until the spaces at the end of the text.
    for m in _TOKEN_RE.finditer(text, pos):
        kind = m.lastgroup or ""  # always one of the groups
        value = m.group(kind)
        pos = m.end()
        if kind == "end" and depth <= 0:
            if is_tag and tag_name == "raw":
                raw_end = RAW_END_RE.search(text, pos)
                return n if raw_end is None else raw_end.end()
            return pos
        if kind == "name":
            if is_tag and not tag_name:
                tag_name = value
                ref_pending = value in _REF_TAGS
                previous = value
                continue
            if value == "missing" and previous == "ignore":
                for ref in tag_refs:
                    ref[4] = True
            elif value == "context" and previous in ("with", "without"):
                for ref in tag_refs:
                    ref[5] = previous == "with"
            skip = (
                previous in (".", "|")
                or previous == "is"
                or (previous == "not" and before_previous == "is")
                or (is_tag and previous in _SKIP_AFTER and tag_name == previous)
                or (is_tag and tag_name in _SKIP_TAGS)
                or (depth > 0 and depth != params_depth and _followed_by_assign(text, pos))
            )
            if not skip:
                scan.identifiers[value].append(m.start(kind))
        elif kind == "str" and ref_pending:
            # A path written out: the whole expression (`{% include "a.j2" %}`), or an item of a list of them, any
            # of which will do (`{% include ["a.j2", "b.j2"] %}`). A computed one (`"a-" ~ x`) is not checked.
            in_list = list_depth == depth and previous in ("[", ",")
            if in_list or (depth == 0 and previous == tag_name):
                if not _COMPUTED_PATH_RE.match(text, pos):
                    # Jinja passes the render context to includes and extends, not to imports (unless asked).
                    ref = [tag_name, value[1:-1], m.start(kind), pos, in_list, tag_name in ("include", "extends")]
                    scan.references.append(ref)
                    tag_refs.append(ref)
            ref_pending = in_list
        elif kind == "op":
            if value == "[" and ref_pending and depth == 0 and previous == tag_name:
                list_depth = 1
            if value in "([{":
                depth += 1
                if value == "(" and is_tag and tag_name in ("macro", "call") and params_depth == -1:
                    params_depth = depth
            elif value in ")]}":
                depth -= 1
        before_previous, previous = previous, value
    scan.unclosed = True
    return n


def _followed_by_assign(text: str, pos: int) -> bool:
    i = pos
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    return i < n and text[i] == "=" and (i + 1 >= n or text[i + 1] != "=")
