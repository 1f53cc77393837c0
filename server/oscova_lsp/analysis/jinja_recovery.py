"""Recovery: when Jinja's parser stops, blank the smallest failing construct (keeping every line and column
where it was), report it, and parse again, so that every error is reported and the rest is still analysed."""

from __future__ import annotations

import re
from dataclasses import dataclass

from jinja2 import TemplateSyntaxError, nodes

from .jinja_facts import SyntaxProblem, line_column
from .jinja_parse import parse
from .jinja_scan import COMMENT_END, OPEN_RE, RAW_END_RE, Scan, scan_code
from .text import LineIndex

MAX_SYNTAX_ERRORS = 64
_RECOVERY_BUDGET = 4_000_000
"""Characters re-parsed at most while recovering (each recovery parses the template about twice): a huge
broken template gets fewer recoveries, never minutes of them."""
_MAX_TRIES_PER_ERROR = 8
_BLOCK_TAGS = frozenset({"if", "for", "macro", "call", "filter", "block", "with", "autoescape", "trans"})
_SIMPLE_TAGS = frozenset({"set", "include", "import", "from", "extends", "do", "break", "continue", "print", "raw"})
_MIDDLE_TAGS = {"else": ("if", "for"), "elif": ("if",), "pluralize": ("trans",)}
_CLOSERS = {"{{": "}}", "{%": "%}", "{#": "#}"}
_TAG_NAME_RE = re.compile(r"\{%[-+]?\s*(\w*)")
_SET_BLOCK_RE = re.compile(r"\{%[-+]?\s*set\s+[\w\s,.]*[-+]?%\}$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class _Region:
    start: int
    end: int
    opener: str  # "{{", "{%" or "{#"
    tag: str  # a statement's tag name, "" otherwise
    closed: bool


def parse_tolerant(text: str, edited: range | None = None) -> tuple[nodes.Template | None, str, list[SyntaxProblem]]:
    """Jinja's tree of `text` with every broken construct blanked, the blanked text, and the errors."""
    errors: list[SyntaxProblem] = []
    work = text
    outcome = parse(work)
    limit = max(1, min(MAX_SYNTAX_ERRORS, _RECOVERY_BUDGET // (2 * len(text) + 1)))
    while isinstance(outcome, TemplateSyntaxError) and len(errors) < limit:
        found = _recover(work, outcome, edited)
        if found is None:
            errors.append(SyntaxProblem(outcome.message or "invalid template", max((outcome.lineno or 1) - 1, 0)))
            break
        work, problem, outcome = found  # the trial parse that accepted the blank is the next parse
        errors.append(problem)
    if isinstance(outcome, Exception) and not isinstance(outcome, TemplateSyntaxError):
        # Jinja may raise other errors on hostile input; never let them escape.
        errors.append(SyntaxProblem(f"the template cannot be parsed ({type(outcome).__name__})", 0))
    errors.sort(key=lambda e: (e.line, e.column))
    return (outcome if isinstance(outcome, nodes.Template) else None), work, errors


def _failure(outcome: nodes.Template | Exception) -> tuple[int, str] | None:
    """Where and why Jinja stopped, or None when it parsed."""
    if isinstance(outcome, TemplateSyntaxError):
        return outcome.lineno, outcome.message or ""
    return None if isinstance(outcome, nodes.Template) else (-1, "")


def _recover(text: str, exc: TemplateSyntaxError,
             edited: range | None = None) -> tuple[str, SyntaxProblem, nodes.Template | Exception] | None:
    """The text with the construct that made Jinja stop blanked, the problem to report there, and how Jinja
    parses the blanked text."""
    lines = LineIndex(text)
    regions = _regions(text)
    error_line = max((exc.lineno or 1) - 1, 0)
    message = exc.message or "invalid template"
    before = (exc.lineno, message)
    # Each candidate: the span to report, then any partner tags blanked with it.
    candidates: list[list[tuple[int, int]]] = []
    if message == "Missing end of raw directive":  # the rest is raw text, as Jinja reads it: no code in it
        opener = next((r for r in regions if r.tag == "raw" and not RAW_END_RE.search(text, r.end)), None)
        if opener is not None:
            candidates.append([(opener.start, opener.end), (opener.end, len(text))])
    if "tag" in message:  # an unknown, misplaced or unclosed block tag: match the tags as Jinja does
        culprit = _edited_opener(text, lines, regions, edited) or _misplaced_tag(text, regions)
        if culprit is not None:
            candidates.extend([part] for part in _parts(text, lines, culprit))
    on_line = [(index, region) for index, region in enumerate(regions)
               if lines.position(region.start).line <= error_line <= lines.position(region.end).line]
    # Constructs broken in themselves first: each trial below is a parse of the whole template.
    on_line = on_line[:_MAX_TRIES_PER_ERROR * 2]
    on_line.sort(key=lambda item: not _broken_alone(text, item[1]))
    for index, region in on_line:
        for part in _parts(text, lines, region):
            # A broken `{% if %}` goes with its `{% else %}` and `{% endif %}` when they would not parse
            # alone; while the opener is being typed before them, the tags after it belong to others.
            partners: list[tuple[int, int]] = []
            if part == (region.start, region.end) and region.closed and _opens_block(text, region):
                if _misplaced_tag(text, regions[:index] + regions[index + 1:]) is not None:
                    partners = _partners(text, regions, index)
            candidates.append([part, *partners])
    candidates = candidates[:_MAX_TRIES_PER_ERROR]
    line_start = lines.line_start(error_line)
    candidates.append([(line_start, line_start + len(lines.line_text(error_line)))])
    for spans in candidates:
        blanked = text
        for start, end in spans:
            blanked = _blank(blanked, start, end)
        if blanked == text:
            continue
        outcome = parse(blanked)
        if spans is candidates[-1] or _failure(outcome) != before:
            start, end = spans[0]
            line, column = line_column(lines, start)
            end_col = column + end - start if line_column(lines, end)[0] == line else None
            return blanked, SyntaxProblem(message, line, column, end_col), outcome
    return None


def _edited_opener(text: str, lines: LineIndex, regions: list[_Region], edited: range | None) -> _Region | None:
    """A block opener on an edited line without which the tags pair up: the one being typed."""
    if not edited or _misplaced_tag(text, regions) is None:
        return None
    tried = 0
    for index, region in enumerate(regions):
        if _opens_block(text, region) and lines.position(region.start).line in edited:
            if _misplaced_tag(text, regions[:index] + regions[index + 1:]) is None:
                return region
            tried += 1
            if tried == _MAX_TRIES_PER_ERROR:
                break
    return None


def _broken_alone(text: str, region: _Region) -> bool:
    """Whether a construct fails to parse by itself (a block opener with its end tag added)."""
    if not region.closed:
        return True
    source = text[region.start:region.end]
    if region.opener == "{%":
        if _opens_block(text, region):
            source += "{% end" + region.tag + " %}"
        elif region.tag not in _SIMPLE_TAGS:
            return region.tag.removeprefix("end") not in _BLOCK_TAGS and region.tag not in _MIDDLE_TAGS
    return not isinstance(parse(source), nodes.Template)


def _partners(text: str, regions: list[_Region], index: int) -> list[tuple[int, int]]:
    """The middle and end tags that belong to the block opened at `regions[index]` (none: not an opener)."""
    opener = regions[index]
    if not _opens_block(text, opener):
        return []
    out: list[tuple[int, int]] = []
    depth = 0
    for region in regions[index + 1:]:
        if region.opener != "{%":
            continue
        if _opens_block(text, region):
            depth += 1
        elif region.tag.startswith("end") and region.tag[3:] in _BLOCK_TAGS | {"set"}:
            if depth == 0:
                if region.tag[3:] == opener.tag:
                    out.append((region.start, region.end))
                return out
            depth -= 1
        elif depth == 0 and opener.tag in _MIDDLE_TAGS.get(region.tag, ()):
            out.append((region.start, region.end))
    return out


def _opens_block(text: str, region: _Region) -> bool:
    return region.opener == "{%" and (region.tag in _BLOCK_TAGS or (
        region.tag == "set" and _SET_BLOCK_RE.match(text, region.start, region.end) is not None))


def _parts(text: str, lines: LineIndex, region: _Region) -> list[tuple[int, int]]:
    """The spans worth blanking for a region, smallest first. What is being typed (`{{ name` before its
    `}}`) must not swallow the lines after it, so a region never loses more than its first line unless it is a
    closed statement tag."""
    line = lines.position(region.start).line
    line_end = lines.line_start(line) + len(lines.line_text(line))
    if region.closed and (region.end <= line_end or region.opener == "{%"):
        return [(region.start, region.end)]
    parts = []
    if not region.closed:  # first up to the closer the author meant, when it is on the same line
        closer = text.find(_CLOSERS[region.opener], region.start + 2, line_end)
        if closer != -1:
            parts.append((region.start, closer + 2))
    parts.append((region.start, min(region.end, line_end)))
    return parts


def _blank(text: str, start: int, end: int) -> str:
    """Replaces `text[start:end]` by spaces, line breaks kept."""
    middle = "".join(ch if ch in "\r\n" else " " for ch in text[start:end])
    return text[:start] + middle + text[end:]


def _regions(text: str) -> list[_Region]:
    """The `{{ }}`, `{% %}` and `{# #}` regions of a text, as Jinja's lexer delimits them."""
    out: list[_Region] = []
    pos, n = 0, len(text)
    scratch = Scan()
    while pos < n:
        m = OPEN_RE.search(text, pos)
        if m is None:
            break
        opener = m.group()
        if opener == "{#":
            close = text.find(COMMENT_END, m.end())
            end = n if close == -1 else close + 2
            tag, closed = "", close != -1
        else:
            scratch.unclosed = False
            end = scan_code(text, m.end(), opener == "{%", scratch)
            closed = not scratch.unclosed
            tag_match = _TAG_NAME_RE.match(text, m.start()) if opener == "{%" else None
            tag = tag_match.group(1) if tag_match else ""
            if tag == "raw":  # the region is the opening tag; its body is text
                close = text.find("%}", m.end())
                end, closed = (n, False) if close == -1 else (close + 2, True)
        out.append(_Region(m.start(), end, opener, tag, closed))
        pos = max(end, m.end())
    return out


def _misplaced_tag(text: str, regions: list[_Region]) -> _Region | None:
    """The first tag Jinja cannot place: an end or middle tag with no opener, else the innermost opener
    left open (when a later end tag closes an outer block, or at the end of the template)."""
    stack: list[_Region] = []
    after_else: set[int] = set()  # openers whose `else` was seen
    for region in regions:
        if region.opener != "{%":
            continue
        tag = region.tag
        if _opens_block(text, region):
            stack.append(region)
        elif tag.startswith("end") and tag[3:] in _BLOCK_TAGS | {"set", "raw"}:
            opened = [r.tag for r in stack]
            if opened and opened[-1] == tag[3:]:
                stack.pop()
            elif tag[3:] in opened and region.closed:
                return stack[-1]  # an inner block left open
            else:
                return region  # an end tag with no opener
        elif tag in _MIDDLE_TAGS:
            if not stack or stack[-1].tag not in _MIDDLE_TAGS[tag] or stack[-1].start in after_else:
                return region
            if tag == "else":
                after_else.add(stack[-1].start)
        elif tag not in _SIMPLE_TAGS:
            return region  # an unknown tag
    return stack[-1] if stack else None
