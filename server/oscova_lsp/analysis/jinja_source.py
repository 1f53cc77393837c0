"""Jinja2 templates as plain facts: free variables with exact positions, references, syntax errors.

Jinja's AST carries line numbers only, so a small scanner finds the column of every identifier in the
template's code regions, and the two are matched name by name in source order. Scoping (set, for,
with, macro and call arguments, imports) is tracked by our own walk, which is an order of magnitude
cheaper than `jinja2.meta.find_undeclared_variables`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Environment, TemplateSyntaxError, nodes

from .text import LineIndex

_ENV = Environment(autoescape=False)

SPECIAL_NAMES = frozenset({"loop", "self", "super", "caller", "varargs", "kwargs"})


@dataclass(frozen=True, slots=True)
class VariableUse:
    """A variable read that no enclosing template scope binds: the rendering provider must."""

    name: str
    line: int
    column: int
    offset: int

    @property
    def end_column(self) -> int:
        return self.column + len(self.name)


@dataclass(frozen=True, slots=True)
class TemplateReference:
    kind: str  # include | import | from | extends
    path: str
    line: int
    column: int
    end_column: int
    """The span of the path string, quotes included."""
    ignore_missing: bool = False
    with_context: bool = True
    """False for an `import` / `from` without `with context`: the imported template sees no render variables."""


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    message: str
    line: int  # 0-based


@dataclass
class TemplateFacts:
    text: str
    free_uses: list[VariableUse] = field(default_factory=list)
    references: list[TemplateReference] = field(default_factory=list)
    syntax_error: SyntaxProblem | None = None
    local_names: frozenset[str] = frozenset()
    """Names the template binds itself (set, for, macro arguments, imports): offered by completion."""
    suppressions: dict[int, frozenset[str] | None] = field(default_factory=dict)
    delimited: list[tuple[int, int]] = field(default_factory=list)
    """Offset intervals inside a labelled delimiter (an XML-like tag pair or a fenced block)."""

    def is_delimited(self, offset: int) -> bool:
        return any(start <= offset < end for start, end in self.delimited)


# --------------------------------------------------------------------------------------------------
# The scanner: identifiers in code regions, with their offsets

_OPEN_RE = re.compile(r"\{\{|\{%|\{#")
_TOKEN_RE = re.compile(
    r"""(?P<ws>\s+)
      |(?P<end>[-+]?(?:\}\}|%\}))
      |(?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      |(?P<name>[^\W\d]\w*)
      |(?P<num>\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)
      |(?P<op>==|!=|<=|>=|//|\*\*|[-+*/%~|.,:;()\[\]{}<>=!])
      |(?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_RAW_END_RE = re.compile(r"\{%[-+]?\s*endraw\s*[-+]?%\}")
_COMMENT_END = "#}"
_SKIP_AFTER = frozenset({"block", "endblock", "macro", "filter"})
_SKIP_TAGS = frozenset({"import", "from"})
_REF_TAGS = frozenset({"include", "import", "from", "extends"})


@dataclass(slots=True)
class _Scan:
    identifiers: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    references: list[list[Any]] = field(default_factory=list)  # kind, path, start, end, ignore_missing, context
    comments: list[tuple[int, str]] = field(default_factory=list)


def _scan(text: str) -> _Scan:
    scan = _Scan()
    pos = 0
    n = len(text)
    while pos < n:
        m = _OPEN_RE.search(text, pos)
        if m is None:
            break
        opener = m.group()
        start = m.end()
        if opener == "{#":
            close = text.find(_COMMENT_END, start)
            close = n if close == -1 else close
            scan.comments.append((m.start(), text[start:close]))
            pos = close + 2
            continue
        pos = _scan_code(text, start, opener == "{%", scan)
    return scan


def _scan_code(text: str, pos: int, is_tag: bool, scan: _Scan) -> int:
    """Scans one `{{ }}` or `{% %}` region from `pos`; returns the offset after it."""
    n = len(text)
    if pos < n and text[pos] in "-+":
        pos += 1
    previous = ""  # the previous significant token
    before_previous = ""
    tag_name = ""
    depth = 0
    params_depth = -1  # paren depth of a macro/call signature, where `a=1` is a parameter
    ref_pending = False
    tag_refs: list[list[Any]] = []  # this tag's references, flagged by `ignore missing` / `with context`
    while pos < n:
        m = _TOKEN_RE.match(text, pos)
        if m is None:  # pragma: no cover - the pattern matches any character
            break
        kind = m.lastgroup
        value = m.group()
        pos = m.end()
        if kind == "ws":
            continue
        if kind == "end" and depth <= 0:
            if is_tag and tag_name == "raw":
                raw_end = _RAW_END_RE.search(text, pos)
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
                scan.identifiers[value].append(m.start())
        elif kind == "str" and ref_pending:
            ref_pending = False
            # Jinja passes the render context to includes and extends, not to imports (unless asked).
            ref = [tag_name, value[1:-1], m.start(), m.end(), False, tag_name in ("include", "extends")]
            scan.references.append(ref)
            tag_refs.append(ref)
        elif kind == "op":
            if value in "([{":
                depth += 1
                if value == "(" and is_tag and tag_name in ("macro", "call") and params_depth == -1:
                    params_depth = depth
            elif value in ")]}":
                depth -= 1
        before_previous, previous = previous, value
    return n


def _followed_by_assign(text: str, pos: int) -> bool:
    i = pos
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    return i < n and text[i] == "=" and (i + 1 >= n or text[i + 1] != "=")


def _names_in(node: nodes.Node) -> list[nodes.Name]:
    """The Name nodes of an assignment target, the node itself included."""
    if isinstance(node, nodes.Name):
        return [node]
    return list(node.find_all(nodes.Name))


# --------------------------------------------------------------------------------------------------
# The scope walk over Jinja's AST


class _Walker:
    """Collects every Name node in order with whether an enclosing template scope binds it."""

    def __init__(self) -> None:
        self.names: list[tuple[str, int, bool]] = []  # (name, lineno, is_free_load)
        self.scopes: list[set[str]] = [set()]
        self.bound_anywhere: set[str] = set()

    def bound(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def bind(self, name: str) -> None:
        self.scopes[-1].add(name)
        self.bound_anywhere.add(name)

    def bind_targets(self, node: nodes.Node) -> None:
        for name_node in _names_in(node):
            self.bind(name_node.name)

    def record_store(self, node: nodes.Node) -> None:
        for name_node in _names_in(node):
            self.names.append((name_node.name, name_node.lineno, False))

    def visit(self, node: nodes.Node) -> None:
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
            self.generic(node)

    def generic(self, node: nodes.Node) -> None:
        for child in node.iter_child_nodes():
            self.visit(child)

    def visit_Template(self, node: nodes.Template) -> None:
        # Top-level assignments and macros are visible everywhere in the template (blocks included).
        for child in node.body:
            self._predeclare(child)
        self.generic(node)

    def _predeclare(self, node: nodes.Node) -> None:
        if isinstance(node, nodes.Assign | nodes.AssignBlock):
            self.bind_targets(node.target)
        elif isinstance(node, nodes.Macro):
            self.bind(node.name)
        elif isinstance(node, nodes.Import):
            self.bind(node.target)
        elif isinstance(node, nodes.FromImport):
            for item in node.names:
                self.bind(item[1] if isinstance(item, tuple) else item)
        elif isinstance(node, nodes.If):
            for child in (*node.body, *node.elif_, *node.else_):
                self._predeclare(child)

    def visit_Name(self, node: nodes.Name) -> None:
        if node.ctx == "load":
            free = not self.bound(node.name) and node.name not in SPECIAL_NAMES
            self.names.append((node.name, node.lineno, free))
        else:
            self.names.append((node.name, node.lineno, False))
            if node.ctx == "store":
                self.bind(node.name)

    def visit_NSRef(self, node: nodes.NSRef) -> None:
        free = not self.bound(node.name)
        self.names.append((node.name, node.lineno, free))

    def visit_Assign(self, node: nodes.Assign) -> None:
        self.visit(node.node)
        self.visit(node.target)

    def visit_AssignBlock(self, node: nodes.AssignBlock) -> None:
        self.visit(node.target)
        if node.filter is not None:
            self.visit(node.filter)
        for child in node.body:
            self.visit(child)

    def visit_For(self, node: nodes.For) -> None:
        self.scopes.append(set())
        self.visit(node.target)
        self.scopes.pop()
        self.visit(node.iter)  # the iterable is evaluated outside the loop's scope
        self.scopes.append(set())
        self.bind_targets(node.target)
        if node.test is not None:
            self.visit(node.test)
        for child in node.body:
            self.visit(child)
        self.scopes.pop()
        for child in node.else_:
            self.visit(child)

    def _callable_body(self, args: list[nodes.Name], defaults: list[nodes.Expr], body: list[nodes.Node]) -> None:
        for default in defaults:
            self.visit(default)
        self.scopes.append(set())
        for arg in args:
            self.names.append((arg.name, arg.lineno, False))
            self.bind(arg.name)
        for child in body:
            self._predeclare(child)
        for child in body:
            self.visit(child)
        self.scopes.pop()

    def visit_Macro(self, node: nodes.Macro) -> None:
        self.bind(node.name)
        self._callable_body(node.args, node.defaults, node.body)

    def visit_CallBlock(self, node: nodes.CallBlock) -> None:
        self.visit(node.call)
        self._callable_body(node.args, node.defaults, node.body)

    def visit_With(self, node: nodes.With) -> None:
        for value in node.values:
            self.visit(value)
        self.scopes.append(set())
        for target in node.targets:
            self.record_store(target)
            self.bind_targets(target)
        for child in node.body:
            self.visit(child)
        self.scopes.pop()

    def visit_Import(self, node: nodes.Import) -> None:
        self.visit(node.template)
        self.bind(node.target)

    def visit_FromImport(self, node: nodes.FromImport) -> None:
        self.visit(node.template)
        for item in node.names:
            self.bind(item[1] if isinstance(item, tuple) else item)


# --------------------------------------------------------------------------------------------------

_SUPPRESS_RE = re.compile(r"oscova:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")
_TAG_RE = re.compile(r"<(/?)([A-Za-z][\w.:-]*)(?:\s[^<>]*)?>")
_FENCE_RE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)


def analyze_template(text: str) -> TemplateFacts:
    """Facts about one template's text. Never raises."""
    facts = TemplateFacts(text=text)
    lines = LineIndex(text)
    scan = _scan(text)
    facts.suppressions = _suppressions(scan, lines)
    for kind, path, start, end, ignore_missing, with_context in scan.references:
        pos = lines.position(start)
        facts.references.append(TemplateReference(kind, path, pos.line, pos.character,
                                                   lines.position(end).character, ignore_missing, with_context))
    try:
        tree = _ENV.parse(text)
    except TemplateSyntaxError as exc:
        facts.syntax_error = SyntaxProblem(exc.message or "invalid template", max((exc.lineno or 1) - 1, 0))
        return facts
    except Exception as exc:  # Jinja may raise other errors on hostile input; never let them escape.
        facts.syntax_error = SyntaxProblem(f"the template cannot be parsed ({type(exc).__name__})", 0)
        return facts
    walker = _Walker()
    try:
        walker.visit(tree)
    except RecursionError:
        facts.syntax_error = SyntaxProblem("the template nests too deeply to analyse", 0)
        return facts
    facts.local_names = frozenset(walker.bound_anywhere)
    facts.delimited = _delimited_intervals(text)
    # Match AST names to scanned identifiers, name by name, in source order (stable by line).
    taken: dict[str, int] = defaultdict(int)
    for name, lineno, free in sorted(walker.names, key=lambda item: item[1]):
        index = taken[name]
        taken[name] += 1
        if not free:
            continue
        offsets = scan.identifiers.get(name, ())
        offset = offsets[index] if index < len(offsets) else _fallback_offset(text, lines, name, lineno)
        pos = lines.position(offset)
        facts.free_uses.append(VariableUse(name, pos.line, pos.character, offset))
    facts.free_uses.sort(key=lambda use: use.offset)
    return facts


def _fallback_offset(text: str, lines: LineIndex, name: str, lineno: int) -> int:
    """Where a name the scanner missed sits: from its line on (Jinja counts a lone CR as a line break)."""
    pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
    found = pattern.search(text, lines.line_start(lineno - 1)) or pattern.search(text)
    return found.start() if found else 0


def _suppressions(scan: _Scan, lines: LineIndex) -> dict[int, frozenset[str] | None]:
    result: dict[int, frozenset[str] | None] = {}
    for offset, body in scan.comments:
        match = _SUPPRESS_RE.search(body)
        if not match:
            continue
        raw = match.group("codes")
        codes = None if raw is None else (frozenset(c.strip().upper() for c in raw.split(",") if c.strip()) or None)
        line = lines.position(offset).line
        targets = [line]
        if not lines.line_text(line)[: lines.position(offset).character].strip():
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
    fences = [m.start() for m in _FENCE_RE.finditer(text)]
    for i in range(0, len(fences) - 1, 2):
        intervals.append((fences[i], fences[i + 1]))
    return intervals


# --------------------------------------------------------------------------------------------------
# A compact form for worker processes: plain tuples pickle an order of magnitude faster than objects.

WireFacts = tuple


def facts_to_wire(facts: TemplateFacts) -> WireFacts:
    error = (facts.syntax_error.message, facts.syntax_error.line) if facts.syntax_error else None
    return (
        tuple((u.name, u.line, u.column, u.offset) for u in facts.free_uses),
        tuple((r.kind, r.path, r.line, r.column, r.end_column, r.ignore_missing, r.with_context)
              for r in facts.references),
        error,
        tuple(facts.local_names),
        tuple(facts.suppressions.items()),
        tuple(facts.delimited),
    )


def facts_from_wire(text: str, wire: WireFacts) -> TemplateFacts:
    uses, refs, error, local_names, suppressions, delimited = wire
    return TemplateFacts(
        text=text,
        free_uses=[VariableUse(*u) for u in uses],
        references=[TemplateReference(*r) for r in refs],
        syntax_error=SyntaxProblem(*error) if error else None,
        local_names=frozenset(local_names),
        suppressions=dict(suppressions),
        delimited=list(delimited),
    )


def analyze_templates_to_wire(texts: list[str]) -> list[WireFacts]:
    """Worker-process entry point: many templates' facts in the compact form."""
    return [facts_to_wire(analyze_template(text)) for text in texts]
