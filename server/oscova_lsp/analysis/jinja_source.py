"""Jinja2 templates as plain facts: free variables with exact positions, references, syntax errors.

Jinja's AST carries line numbers only, so a small scanner finds the column of every identifier in the
template's code regions, and the two are matched name by name in source order. Scoping (set, for,
with, macro and call arguments, imports) is tracked by our own walk, which is an order of magnitude
cheaper than `jinja2.meta.find_undeclared_variables`.
"""

from __future__ import annotations

import operator
import re
from ast import literal_eval
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Environment, TemplateSyntaxError, nodes
from jinja2 import lexer as _lexer
from jinja2.parser import Parser

from .text import LineIndex


class _Environment(Environment):
    """Jinja's default environment, whose templates are tokenized by `_tokens` where it can (Jinja's own lexer
    where it cannot): the same tokens, in about a third of the time."""

    def _tokenize(self, source: str, name: str | None, filename: str | None = None,
                  state: str | None = None) -> _lexer.TokenStream:
        tokens = _tokens(source) if state is None and not self.extensions else None
        if tokens is None:
            return super()._tokenize(source, name, filename, state)
        return _lexer.TokenStream(iter(tokens), name, filename)


_ENV = _Environment(autoescape=False)
_NOT_PLAIN = frozenset({"not", "true", "false", "True", "False", "none", "None"})
"""Names an expression does not read as a variable when alone (`not …`, constants)."""


class _Parser(Parser):
    """Jinja's parser, with a short way through its fifteen levels of expression rules for the commonest
    expression: one variable alone before the tag's end (`{{ name }}`, `{% if name %}`). It makes the node those
    rules make there; anything else goes the whole way."""

    def parse_tuple(self, simplified: bool = False, with_condexpr: bool = True,
                    extra_end_rules: tuple[str, ...] | None = None, explicit_parentheses: bool = False,
                    with_namespace: bool = False) -> nodes.Tuple | nodes.Expr:
        token = self.stream.current
        if token.type == "name" and not simplified and token.value not in _NOT_PLAIN and \
                self.stream.look().type in ("variable_end", "block_end") and \
                not self.is_tuple_end(extra_end_rules):
            next(self.stream)
            return nodes.Name(token.value, "load", lineno=token.lineno)
        return super().parse_tuple(simplified, with_condexpr, extra_end_rules, explicit_parentheses, with_namespace)

# What happens at a use of a name when it is undefined (`VariableUse.effect`), as Jinja's default `Undefined`
# renders it. The first three are guards: the template handles the name being undefined.
DEFAULT = "default"
"""The subject of a `default` (`d`) filter: the default applies."""
DEFINED_TEST = "defined"
"""The subject of an `is defined` / `is undefined` test."""
GUARDED = "guarded"
"""Inside a branch or an operand that a test of this name guards (`{% if x is defined %}…{{ x }}`,
`x is defined and x`, `{{ x if x is defined else 0 }}`): it renders only where the name is defined."""
EMPTY = "empty"
"""Output, directly or through a filter that keeps text: it renders empty."""
IF_TEST = "if"
"""The whole test of an `if` or `elif`: the test is false, the block never renders."""
TEST = "test"
"""Tested for truth inside a larger test (`not`, `and`, `or`, a conditional expression, another test)."""
PASSES = "passes"
"""The subject of a test an undefined value passes (`iterable`, `sequence`, `callable`): it iterates as empty."""
LOOP = "loop"
"""The iterable of a `for`: the loop never runs."""
FAILS = "fails"
"""Read from (attribute, item, call) or computed with: Jinja raises and the rendering fails."""
COMPARED = "compared"
"""Compared with `==` or `!=`: an undefined value equals no value."""
VALUE = "value"
"""Anything else (a `set` value, a comparison, a filter or macro argument): undefined there."""
GUARDS = frozenset({DEFAULT, DEFINED_TEST, GUARDED})
UNDEFINED_EFFECTS = {
    DEFAULT: "the default always applies",
    DEFINED_TEST: "the test always finds it undefined",
    GUARDED: "this use renders only where it is defined",
    EMPTY: "it renders empty",
    IF_TEST: "it is undefined, so the test is false and its block never renders",
    TEST: "it is undefined, so it tests false",
    PASSES: "it is undefined, yet the test is true",
    LOOP: "it is undefined, so the loop never runs",
    FAILS: "it is undefined, and using it here fails the rendering",
    COMPARED: "it is undefined, so it equals no value",
    VALUE: "it is undefined where it is used here",
}
"""What rendering does at a use of a name that nothing binds, in the words of the checks and hover."""


@dataclass(frozen=True, slots=True)
class VariableUse:
    """A variable read that no enclosing template scope binds: the rendering provider must."""

    name: str
    line: int
    column: int
    """In characters, like every column of the facts (a range converts them to UTF-16 code units)."""
    offset: int
    effect: str = EMPTY
    """What rendering does at this use when the name is undefined: one of the effects above."""

    @property
    def guarded(self) -> bool:
        """The template itself handles the name being undefined here."""
        return self.effect in GUARDS

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
    column: int = 0
    end_column: int | None = None
    """The failing construct's columns on `line` (in characters); None: the whole line."""


@dataclass
class TemplateFacts:
    text: str
    free_uses: list[VariableUse] = field(default_factory=list)
    references: list[TemplateReference] = field(default_factory=list)
    syntax_errors: list[SyntaxProblem] = field(default_factory=list)
    """Every syntax error, in source order; the rest of the template is analysed around them."""
    local_names: frozenset[str] = frozenset()
    """Names the template binds itself (set, for, macro arguments, imports): offered by completion."""
    suppressions: dict[int, frozenset[str] | None] = field(default_factory=dict)
    delimited: list[tuple[int, int]] = field(default_factory=list)
    """Offset intervals inside a labelled delimiter (an XML-like tag pair or a fenced block)."""

    @property
    def syntax_error(self) -> SyntaxProblem | None:
        return self.syntax_errors[0] if self.syntax_errors else None

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
_COMPUTED_PATH_RE = re.compile(r"\s*(?:[~*/.|(\[]|\+(?!%\})|%(?!\})|(?:if|and|or|in|is|not)\b|[=!<>]=?)")
"""What follows a string that is only a part of a computed path (`"a-" ~ x`, `"a%s" % x`, `"a" if x else "b"`)."""
_COMMENT_END = "#}"
_SKIP_AFTER = frozenset({"block", "endblock", "macro", "filter"})
_SKIP_TAGS = frozenset({"import", "from"})
_REF_TAGS = frozenset({"include", "import", "from", "extends"})


@dataclass(slots=True)
class _Scan:
    identifiers: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    references: list[list[Any]] = field(default_factory=list)  # kind, path, start, end, ignore_missing, context
    comments: list[tuple[int, str]] = field(default_factory=list)
    unclosed: bool = False
    """Whether the last code region scanned ran to the end of the text without its closer."""


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
    list_depth = -1  # the bracket depth of a list of paths (`{% include ["a.j2", "b.j2"] %}`)
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
            # A path written out: the whole expression (`{% include "a.j2" %}`), or an item of a list of them, any
            # of which will do (`{% include ["a.j2", "b.j2"] %}`). A computed one (`"a-" ~ x`) is not checked.
            in_list = list_depth == depth and previous in ("[", ",")
            if in_list or (depth == 0 and previous == tag_name):
                if not _COMPUTED_PATH_RE.match(text, pos):
                    # Jinja passes the render context to includes and extends, not to imports (unless asked).
                    ref = [tag_name, value[1:-1], m.start(), m.end(), in_list, tag_name in ("include", "extends")]
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


def _names_in(node: nodes.Node) -> list[nodes.Name]:
    """The Name nodes of an assignment target, the node itself included."""
    if isinstance(node, nodes.Name):
        return [node]
    return list(node.find_all(nodes.Name))


# --------------------------------------------------------------------------------------------------
# The scope walk over Jinja's AST


class _Walker:
    """Collects every Name node in source order with whether an enclosing template scope binds it.

    Binding follows Jinja's rendering: a name is bound from its assignment on (`{{ x }}{% set x = 1 %}`
    reads an unbound `x`), an `if` branch sees only its own sets and after the `if` a name set on any
    branch counts as bound, `{% block %}` bodies see the top level only, and a macro body runs when it is
    called, so it sees every name its enclosing bodies assign.
    """

    def __init__(self) -> None:
        self.names: list[tuple[str, int, bool, str]] = []  # (name, lineno, is_free_load, effect)
        self.role = VALUE
        """The effect an undefined name has where the node being visited stands (set by `visit`)."""
        self.guards: list[frozenset[str]] = []
        """Names the enclosing tests prove defined wherever the node being visited renders."""
        self.scopes: list[set[str]] = [set()]
        self.kinds: list[str] = ["root"]
        self.bodies: list[set[str]] = []  # every name each enclosing body assigns, for macro bodies
        self.bound_anywhere: set[str] = set()
        self.proofs = _Proofs()

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
            self.names.append((name_node.name, name_node.lineno, False, VALUE))

    def push(self, kind: str, names: Iterable[str] = ()) -> None:
        self.scopes.append(set(names))
        self.kinds.append(kind)

    def pop(self) -> set[str]:
        self.kinds.pop()
        return self.scopes.pop()

    def visit(self, node: nodes.Node, role: str = VALUE) -> None:
        """Visits `node` standing where an undefined value has the effect `role`; its children stand in a
        plain value position unless its visitor says otherwise."""
        self.role = role
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
            self.generic(node)

    def visit_guarded(self, node: nodes.Node, role: str, names: frozenset[str]) -> None:
        """Visits `node` where the names `names` are known to be defined."""
        self.guards.append(names)
        try:
            self.visit(node, role)
        finally:
            self.guards.pop()

    def effect(self, name: str) -> str:
        return GUARDED if any(name in names for names in self.guards) else self.role

    def generic(self, node: nodes.Node) -> None:
        for child in node.iter_child_nodes():
            self.visit(child)

    def body(self, children: list[nodes.Node]) -> None:
        self.bodies.append(_assigned(children))
        for child in children:
            self.visit(child)
        self.bodies.pop()

    def visit_Template(self, node: nodes.Template) -> None:
        self.body(node.body)

    def visit_Name(self, node: nodes.Name) -> None:
        if node.ctx == "load":
            free = not self.bound(node.name) and node.name not in _ALWAYS_BOUND
            self.names.append((node.name, node.lineno, free, self.effect(node.name)))
        else:
            self.names.append((node.name, node.lineno, False, VALUE))
            if node.ctx == "store":
                self.bind(node.name)

    def visit_NSRef(self, node: nodes.NSRef) -> None:
        free = not self.bound(node.name)
        self.names.append((node.name, node.lineno, free, self.effect(node.name) if self.role == VALUE else FAILS))

    # Where an undefined value goes: what each expression does with the value of its operands.

    def visit_Output(self, node: nodes.Output) -> None:
        for child in node.nodes:
            self.visit(child, EMPTY)

    def visit_Filter(self, node: nodes.Filter) -> None:
        if node.node is not None:  # None: a `{% filter %}` block's filter, applied to the block's text
            if node.name in _DEFAULT_FILTERS:
                role = DEFAULT
            elif _UNDEFINED_FILTERED.get(node.name) is _RAISES:  # `indent`, `int`, `tojson` … of undefined fail
                role = FAILS
            else:
                role = EMPTY if self.role == EMPTY and node.name in _TEXT_FILTERS else VALUE
            self.visit(node.node, role)
        self._arguments(node)

    def visit_Test(self, node: nodes.Test) -> None:
        if node.name in _DEFINED_TESTS:
            role = DEFINED_TEST
        else:
            of_undefined = _TESTS_OF_UNDEFINED.get(node.name)
            role = FAILS if of_undefined is _RAISES else PASSES if of_undefined is True else TEST
        self.visit(node.node, role)
        self._arguments(node)

    def _arguments(self, node: nodes.Filter | nodes.Test | nodes.Call) -> None:
        for child in [*node.args, *node.kwargs, node.dyn_args, node.dyn_kwargs]:
            if child is not None:
                self.visit(child)

    def visit_Not(self, node: nodes.Not) -> None:
        self.visit(node.node, TEST)

    def visit_And(self, node: nodes.And) -> None:
        self.visit(node.left, TEST)
        self.visit_guarded(node.right, TEST, self.proofs.implied(node.left, True, self.proofs.names_of(node.right)[0]))  # read only when the left is true

    def visit_Or(self, node: nodes.Or) -> None:
        self.visit(node.left, TEST)
        self.visit_guarded(node.right, TEST, self.proofs.implied(node.left, False, self.proofs.names_of(node.right)[0]))  # read only when the left is false

    def visit_CondExpr(self, node: nodes.CondExpr) -> None:
        role = self.role
        self.visit_guarded(node.expr1, role, self.proofs.implied(node.test, True, self.proofs.names_of(node.expr1)[0]))  # `expr1 if test else expr2`: source order
        self.visit(node.test, TEST)
        if node.expr2 is not None:
            self.visit_guarded(node.expr2, role, self.proofs.implied(node.test, False, self.proofs.names_of(node.expr2)[0]))

    def visit_Concat(self, node: nodes.Concat) -> None:
        role = EMPTY if self.role == EMPTY else VALUE
        for child in node.nodes:
            self.visit(child, role)

    def _reads(self, node: nodes.Getattr | nodes.Getitem | nodes.Call) -> None:
        self.visit(node.node, FAILS)

    def visit_Getattr(self, node: nodes.Getattr) -> None:
        self._reads(node)

    def visit_Getitem(self, node: nodes.Getitem) -> None:
        self._reads(node)
        self.visit(node.arg)

    def visit_Call(self, node: nodes.Call) -> None:
        self._reads(node)
        self._arguments(node)

    def visit_Compare(self, node: nodes.Compare) -> None:
        # Equality and membership compare an undefined value quietly; ordering raises.
        ops = {op.op for op in node.ops}
        role = FAILS if ops & _ORDERING else COMPARED if ops <= {"eq", "ne"} else VALUE
        self.visit(node.expr, role)
        for op in node.ops:
            self.visit(op.expr, role)

    def _computes(self, node: nodes.Node) -> None:
        for child in node.iter_child_nodes():
            self.visit(child, FAILS)

    visit_Add = visit_Sub = visit_Mul = visit_Div = visit_FloorDiv = visit_Mod = visit_Pow = _computes
    visit_Neg = visit_Pos = _computes

    def visit_Assign(self, node: nodes.Assign) -> None:
        # The target comes first in the source; the value is read before the target is bound.
        self.record_store(node.target)
        self.visit(node.node)
        self.bind_targets(node.target)

    def visit_AssignBlock(self, node: nodes.AssignBlock) -> None:
        self.record_store(node.target)
        if node.filter is not None:
            self.visit(node.filter)
        for child in node.body:
            self.visit(child)
        self.bind_targets(node.target)

    def visit_If(self, node: nodes.If) -> None:
        set_on_a_branch: set[str] = set()
        otherwise: frozenset[str] = frozenset()  # what the earlier tests being false prove defined
        arms: list[tuple[nodes.Node | None, Sequence[nodes.Node]]] = [
            (node.test, node.body), *((elif_.test, elif_.body) for elif_ in node.elif_), (None, node.else_)]
        # The names each arm reads, and those the arms after it read: a test is asked only about them.
        reads = [self.proofs.reads(branch) for _, branch in arms]
        later = [frozenset[str]()] * len(arms)
        for i in range(len(arms) - 2, -1, -1):
            following = arms[i + 1][0]
            later[i] = later[i + 1] | reads[i + 1] | (self.proofs.names_of(following)[0] if following else frozenset())
        for (test, branch), here, after in zip(arms, reads, later, strict=True):
            proven = otherwise
            if test is not None:
                first = len(self.names)
                self.visit_guarded(test, IF_TEST, otherwise)
                self._say_what_the_test_does(test, first)
                proven = otherwise | self.proofs.implied(test, True, here)
                otherwise = otherwise | self.proofs.implied(test, False, after)
            self.push("branch")
            self.guards.append(proven)
            for child in branch:
                self.visit(child)
            self.guards.pop()
            set_on_a_branch |= self.pop()
        # Set on some branch only: left unreported (templates usually test the same condition again).
        for name in set_on_a_branch:
            self.bind(name)

    def _say_what_the_test_does(self, test: nodes.Node, first: int) -> None:
        """A name tested inside an `if` test (`x is not none`, `x | length > 0`) is told what the whole test does
        when it is undefined: true, or false so that the block never renders."""
        asked = self.proofs.names_of(test)[1]  # as in its proofs: the first names of a long test
        for index in range(first, len(self.names)):
            name, lineno, free, effect = self.names[index]
            if free and effect in (TEST, PASSES, VALUE, COMPARED) and name in asked:
                truth = self.proofs.truth(test, name)
                if truth is not None:
                    self.names[index] = (name, lineno, free, PASSES if truth else IF_TEST)

    def visit_For(self, node: nodes.For) -> None:
        self.push("scratch")
        self.visit(node.target)
        self.pop()
        self.visit(node.iter, LOOP)  # the iterable is evaluated outside the loop's scope
        self.push("for")
        self.bind_targets(node.target)
        if node.test is not None:
            self.visit(node.test, TEST)
        self.bind("loop")
        # The body runs only for an item: where the iterable (and the loop's own test) proves its names defined.
        body = self.proofs.reads(node.body)
        runs = self.proofs.iterates_nothing(node.iter, body) | (
            self.proofs.implied(node.test, True, body) if node.test is not None else frozenset())
        self.guards.append(runs)
        self.body(node.body)
        self.guards.pop()
        self.pop()
        for child in node.else_:
            self.visit(child)

    def visit_Block(self, node: nodes.Block) -> None:
        if node.scoped:
            # Jinja renders it with a context derived from every name visible here: that context is what a
            # block inside it sees, scoped or not (nbconvert's null.j2 nests four deep in a loop).
            self.push("context", set().union(*self.scopes))
            self.push("block")
            self.body(node.body)
            self.pop()
            self.pop()
            return
        # A block renders with the context of the block function around it: the template's top level, or
        # what the nearest enclosing scoped block was given; never a loop or set inside that function.
        contexts = [i for i, kind in enumerate(self.kinds) if kind == "context"]
        depth = contexts[-1] + 1 if contexts else 0
        while not contexts and depth < len(self.kinds) and self.kinds[depth] in ("root", "branch"):
            depth += 1
        saved_scopes, saved_kinds = self.scopes, self.kinds
        self.scopes, self.kinds = saved_scopes[:depth], saved_kinds[:depth]
        self.push("block")
        self.body(node.body)
        self.scopes, self.kinds = saved_scopes, saved_kinds

    def _signature(self, args: list[nodes.Name], defaults: list[nodes.Expr], implicit: Iterable[str]) -> None:
        """Arguments in source order; a default may read the arguments before it (`m(a, b=a)`)."""
        self.push("callable", implicit)
        first_default = len(args) - len(defaults)
        for index, arg in enumerate(args):
            self.names.append((arg.name, arg.lineno, False, VALUE))
            if index >= first_default:
                self.visit(defaults[index - first_default])
            self.bind(arg.name)

    def visit_Macro(self, node: nodes.Macro) -> None:
        # The body runs when the macro is called: every name its enclosing bodies assign is set by then.
        later = set().union(*self.bodies) if self.bodies else set()
        self.push("deferred", later)
        self._signature(node.args, node.defaults, ("caller", "varargs", "kwargs"))
        self.body(node.body)
        self.pop()
        self.pop()
        self.bind(node.name)

    def visit_CallBlock(self, node: nodes.CallBlock) -> None:
        self._signature(node.args, node.defaults, ("varargs", "kwargs"))
        saved = self.scopes.pop(), self.kinds.pop()
        self.visit(node.call)  # the call is evaluated in the enclosing scope
        self.scopes.append(saved[0])
        self.kinds.append(saved[1])
        self.body(node.body)
        self.pop()

    def visit_With(self, node: nodes.With) -> None:
        for target in node.targets:
            self.record_store(target)
        for value in node.values:
            self.visit(value)
        self.push("with")
        for target in node.targets:
            self.bind_targets(target)
        self.body(node.body)
        self.pop()

    def visit_Import(self, node: nodes.Import) -> None:
        self.visit(node.template)
        self.bind(node.target)

    def visit_FromImport(self, node: nodes.FromImport) -> None:
        self.visit(node.template)
        for item in node.names:
            self.bind(item[1] if isinstance(item, tuple) else item)


_ALWAYS_BOUND = frozenset({"self", "super"})
"""Special names bound everywhere; `loop`, `caller`, `varargs` and `kwargs` are bound by their construct."""
_DEFAULT_FILTERS = frozenset({"default", "d"})
_DEFINED_TESTS = frozenset({"defined", "undefined"})
_TEXT_FILTERS = frozenset({"capitalize", "e", "escape", "forceescape", "lower", "safe", "string", "striptags", "title",
                           "trim", "truncate", "upper"})
"""Filters that turn an undefined value into empty text (`{{ x | upper }}` renders empty)."""
_ORDERING = frozenset({"lt", "lteq", "gt", "gteq"})


# --------------------------------------------------------------------------------------------------
# What a test proves: Jinja's own results for an undefined value, so a use that rendering reaches only where a
# name is defined (`{% if x | length > 0 %}{{ x }}`, `{% if x.a is defined %}{{ x.b }}`, a loop over `x`) is
# guarded. Every entry was read from Jinja 3.1 applying the filter or test to `Undefined`.


class _Outcome:
    """An evaluation's result that is not a plain value."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_UNDEFINED = _Outcome("undefined")
"""Jinja's `Undefined`: false, empty, equal only to another undefined value."""
_RAISES = _Outcome("raises")
"""The evaluation fails (reading from or computing with an undefined value)."""
_UNKNOWN = _Outcome("unknown")
"""Any value: it depends on what the other names hold."""
_MISSING = _Outcome("missing")
"""Not evaluated yet."""
_EMPTY_ITERATOR = _Outcome("empty iterator")
"""A generator over nothing (`select`, `map`, `unique` … of an undefined value): true, and a loop over it never
runs."""

_UNDEFINED_FILTERED: dict[str, object] = {
    **dict.fromkeys(("capitalize", "e", "escape", "forceescape", "format", "join", "lower", "replace", "safe",
                     "string", "striptags", "title", "trim", "upper", "urlencode", "urlize"), ""),
    **dict.fromkeys(("count", "length", "sum", "wordcount"), 0),
    **dict.fromkeys(("groupby", "list", "sort"), ()),
    **dict.fromkeys(("batch", "items", "map", "reject", "rejectattr", "reverse", "select", "selectattr", "unique"),
                    _EMPTY_ITERATOR),
    **dict.fromkeys(("first", "last", "max", "min", "random", "truncate"), _UNDEFINED),
    **dict.fromkeys(("abs", "attr", "dictsort", "filesizeformat", "float", "indent", "int", "round", "tojson",
                     "wordwrap", "xmlattr"), _RAISES),
}
"""What a built-in filter makes of an undefined value (`default` is the filters' own case)."""
_TESTS_OF_UNDEFINED: dict[str, object] = {
    **dict.fromkeys(("boolean", "defined", "escaped", "false", "filter", "float", "integer", "lower", "mapping",
                     "none", "number", "string", "test", "true", "upper"), False),
    **dict.fromkeys(("callable", "iterable", "sequence", "undefined"), True),
    **dict.fromkeys(("<", "<=", ">", ">=", "divisibleby", "even", "ge", "greaterthan", "gt", "le", "lessthan", "lt",
                     "odd"), _RAISES),
}
"""What a built-in test says of an undefined value (equality tests compare, below)."""
_EQUALITY_TESTS = {"==": True, "eq": True, "equalto": True, "!=": False, "ne": False}
_MAX_PROOF_NAMES = 32
"""Names of one test that are evaluated for what it proves (a test naming more proves nothing of the rest)."""


def _truth(value: object) -> bool | None:
    """The truth of a value, None when it is unknown; `_RAISES` has none (callers check it first)."""
    if value is _UNDEFINED:
        return False
    if value is _EMPTY_ITERATOR:
        return True
    if isinstance(value, _Outcome):
        return None
    return bool(value)


def _plain(value: object) -> bool:
    return not isinstance(value, _Outcome)


class _Evaluation:
    """Evaluates an expression with one name undefined and every other name unknown, as far as Jinja's semantics
    decide it: a plain value (constants and what they compute), or one of the outcomes above."""

    def __init__(self, name: str | None, proofs: _Proofs) -> None:
        self.name = name
        """The undefined name (None: the parts that read no name being proven)."""
        self.proofs = proofs
        self.known: dict[int, object] = {}
        """Each node's value, by the node's id (the tree outlives the evaluation)."""

    def value(self, node: nodes.Node) -> object:
        if self.name is not None and self.name not in self.proofs.names_of(node)[0]:
            return self.proofs.common.value(node)
        known = self.known.get(id(node), _MISSING)
        if known is _MISSING:
            method = getattr(self, "_" + type(node).__name__, None)
            known = self.known[id(node)] = _UNKNOWN if method is None else method(node)
        return known

    def _Name(self, node: nodes.Name) -> object:  # noqa: N802 - named after the node
        return _UNDEFINED if node.name == self.name and node.ctx == "load" else _UNKNOWN

    def _Const(self, node: nodes.Const) -> object:  # noqa: N802
        return node.value if isinstance(node.value, str | int | float | bool | None) else _UNKNOWN

    def _List(self, node: nodes.List | nodes.Tuple) -> object:  # noqa: N802
        items = [self.value(item) for item in node.items]
        if _RAISES in items:
            return _RAISES
        return tuple(items) if all(_plain(item) for item in items) else _UNKNOWN

    _Tuple = _List

    def _Not(self, node: nodes.Not) -> object:  # noqa: N802
        value = self.value(node.node)
        truth = None if value is _RAISES else _truth(value)
        return value if value is _RAISES else _UNKNOWN if truth is None else not truth

    def _And(self, node: nodes.And) -> object:  # noqa: N802
        return self._short_circuit(node, stops_on=False)

    def _Or(self, node: nodes.Or) -> object:  # noqa: N802
        return self._short_circuit(node, stops_on=True)

    def _short_circuit(self, node: nodes.And | nodes.Or, stops_on: bool) -> object:
        left = self.value(node.left)
        if left is _RAISES:
            return _RAISES
        truth = _truth(left)
        if truth is stops_on:
            return left
        right = self.value(node.right)
        if truth is not None:
            return right
        # The left side may go either way: the result is the right's truth only when it is that of a stop too.
        return stops_on if right is not _RAISES and _truth(right) is stops_on else _UNKNOWN

    def _CondExpr(self, node: nodes.CondExpr) -> object:  # noqa: N802
        test = self.value(node.test)
        truth = None if test is _RAISES else _truth(test)
        if test is _RAISES or truth is None:
            return test if test is _RAISES else _UNKNOWN
        if truth:
            return self.value(node.expr1)
        return _UNDEFINED if node.expr2 is None else self.value(node.expr2)

    def _reads(self, node: nodes.Getattr | nodes.Getitem | nodes.Call) -> object:
        subject = self.value(node.node)
        return _RAISES if subject is _UNDEFINED or subject is _RAISES else _UNKNOWN

    def _Getattr(self, node: nodes.Getattr) -> object:  # noqa: N802
        return self._reads(node)

    def _Getitem(self, node: nodes.Getitem) -> object:  # noqa: N802
        read, key = self._reads(node), self.value(node.arg)
        if read is _RAISES or key is _RAISES:
            return _RAISES
        return _UNDEFINED if key is _UNDEFINED else read  # no container holds an undefined key: Jinja's lookup fails

    def _Call(self, node: nodes.Call) -> object:  # noqa: N802
        read = self._reads(node)
        if read is _RAISES or self._arguments_raise(node):
            return _RAISES
        if isinstance(node.node, nodes.Name) and node.node.name == "range" and not node.kwargs:
            bounds = [self.value(arg) for arg in node.args]  # `range(xs | length)`: empty for an undefined `xs`
            numbers = [b for b in bounds if type(b) is int]
            if len(numbers) == len(bounds) and 1 <= len(numbers) <= 3 and numbers[2:] != [0]:
                return () if len(range(*numbers)) == 0 else _UNKNOWN
        return read

    def _arguments_raise(self, node: nodes.Call | nodes.Filter | nodes.Test) -> bool:
        return any(self.value(arg) is _RAISES for arg in [*node.args, *(kw.value for kw in node.kwargs)])

    def _computes(self, node: nodes.BinExpr | nodes.UnaryExpr) -> object:
        operands = [self.value(child) for child in node.iter_child_nodes()]
        return _RAISES if any(v is _UNDEFINED or v is _RAISES for v in operands) else _UNKNOWN

    _Add = _Sub = _Mul = _Div = _FloorDiv = _Mod = _Pow = _Neg = _Pos = _computes

    def _Concat(self, node: nodes.Concat) -> object:  # noqa: N802
        parts = [self.value(child) for child in node.nodes]
        if _RAISES in parts:
            return _RAISES
        if all(p is _UNDEFINED or isinstance(p, str | int | float) for p in parts):
            return "".join("" if p is _UNDEFINED else str(p) for p in parts)
        return _UNKNOWN

    def _Filter(self, node: nodes.Filter) -> object:  # noqa: N802
        if node.node is None:  # a `{% filter %}` block's filter
            return _UNKNOWN
        subject = self.value(node.node)
        if subject is _RAISES or self._arguments_raise(node):
            return _RAISES
        if node.name in _DEFAULT_FILTERS:
            fallback = self.value(node.args[0]) if node.args else ""
            if subject is _UNDEFINED:
                return fallback
            always = len(node.args) > 1 or any(kw.key == "boolean" for kw in node.kwargs)
            return subject if _plain(subject) and not always else _UNKNOWN
        if subject is _UNDEFINED:
            return _UNDEFINED_FILTERED.get(node.name, _UNKNOWN)
        if node.name in ("length", "count") and isinstance(subject, str | tuple):
            return len(subject)
        if node.name == "list" and (subject is _EMPTY_ITERATOR or isinstance(subject, tuple)):
            return () if subject is _EMPTY_ITERATOR else subject
        return _UNKNOWN

    def _Test(self, node: nodes.Test) -> object:  # noqa: N802
        subject = self.value(node.node)
        if subject is _RAISES or self._arguments_raise(node):
            return _RAISES
        if node.name in _EQUALITY_TESTS and len(node.args) == 1 and not node.kwargs:
            equal = _equal(subject, self.value(node.args[0]))
            return equal if equal is _UNKNOWN else equal is _EQUALITY_TESTS[node.name]
        if subject is _UNDEFINED:
            return _TESTS_OF_UNDEFINED.get(node.name, _UNKNOWN)
        if node.name in _DEFINED_TESTS and subject is not _UNKNOWN:
            return node.name == "defined"  # a plain value or an empty iterator is defined
        return _UNKNOWN

    def _Compare(self, node: nodes.Compare) -> object:  # noqa: N802
        left = self.value(node.expr)
        if left is _RAISES:
            return _RAISES
        if len(node.ops) != 1:  # a chain: only its first operands are certain to be evaluated
            return _RAISES if self.value(node.ops[0].expr) is _RAISES else _UNKNOWN
        op = node.ops[0].op
        right = self.value(node.ops[0].expr)
        if right is _RAISES:
            return _RAISES
        if op in ("eq", "ne"):
            equal = _equal(left, right)
            return equal if equal is _UNKNOWN else equal is (op == "eq")
        if op in _ORDERING:
            if left is _UNDEFINED or right is _UNDEFINED:
                return _RAISES
            return _ordered(op, left, right) if _plain(left) and _plain(right) else _UNKNOWN
        if op in ("in", "notin"):
            found = _contains(right, left)
            return found if isinstance(found, _Outcome) else found is (op == "in")
        return _UNKNOWN


def _equal(left: object, right: object) -> object:
    """`left == right` as Jinja compares: an undefined value equals only another undefined value."""
    if left is _UNDEFINED or right is _UNDEFINED:
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        return left is right
    if _plain(left) and _plain(right):
        return left == right
    return _UNKNOWN


def _ordered(op: str, left: Any, right: Any) -> object:
    """`left < right` and the like between two plain values (a mismatch of types fails, as in Jinja)."""
    compare = {"lt": operator.lt, "lteq": operator.le, "gt": operator.gt, "gteq": operator.ge}[op]
    try:
        return bool(compare(left, right))
    except TypeError:
        return _RAISES


def _contains(container: object, item: object) -> object:
    """`item in container`: nothing is in an undefined value (it iterates as empty); an undefined value is in no
    list, and asking a string for it fails."""
    if container is _UNDEFINED or container is _EMPTY_ITERATOR:
        return False
    if item is _UNDEFINED and isinstance(container, tuple):
        return False
    if item is _UNDEFINED and isinstance(container, str):
        return _RAISES
    if isinstance(container, str | tuple) and _plain(item):
        try:
            return item in container  # type: ignore[operator]
        except TypeError:
            return _RAISES
    return _UNKNOWN


class _Proofs:
    """What tests and loops prove of one template's names. Values are kept by node: a part of a test that does not
    read a name has the same value whichever name is undefined, and is evaluated once for all of them; the tests
    nested in a test (an `and` chain asks of each of its left sides) cost nothing more."""

    def __init__(self) -> None:
        self.evaluations: dict[str, _Evaluation] = {}
        self.common = _Evaluation(None, self)
        """The values of the parts that read none of the names being proven."""
        self.names: dict[int, tuple[frozenset[str], tuple[str, ...]]] = {}

    def names_of(self, node: nodes.Node) -> tuple[frozenset[str], tuple[str, ...]]:
        """The names `node` reads, and the first `_MAX_PROOF_NAMES` of them in source order."""
        found = self.names.get(id(node))
        if found is None:
            if isinstance(node, nodes.Name):
                found = (frozenset({node.name}), (node.name,)) if node.ctx == "load" else (frozenset(), ())
            else:
                every: set[str] = set()
                first: dict[str, None] = {}
                for child in node.iter_child_nodes():
                    names, ordered = self.names_of(child)
                    every |= names
                    first.update(dict.fromkeys(ordered[:_MAX_PROOF_NAMES - len(first)]))
                found = (frozenset(every), tuple(first))
            self.names[id(node)] = found
        return found

    def reads(self, body: Iterable[nodes.Node]) -> frozenset[str]:
        """The names the nodes of a body read."""
        return frozenset[str]().union(*(self.names_of(node)[0] for node in body))

    def _values(self, node: nodes.Node, among: frozenset[str] | None) -> Iterable[tuple[str, object]]:
        names = self.names_of(node)[1]
        if among is not None:  # only the names read where the proof holds can use it
            names = tuple(name for name in names if name in among)
        for name in names:
            evaluation = self.evaluations.get(name)
            if evaluation is None:
                evaluation = self.evaluations[name] = _Evaluation(name, self)
            yield name, evaluation.value(node)

    def truth(self, test: nodes.Node, name: str) -> bool | None:
        """Whether `test` is true with `name` undefined; None when that depends on other names or it fails."""
        evaluation = self.evaluations.get(name)
        if evaluation is None:
            evaluation = self.evaluations[name] = _Evaluation(name, self)
        value = evaluation.value(test)
        return None if value is _RAISES else _truth(value)

    def implied(self, test: nodes.Node, outcome: bool, among: frozenset[str] | None = None) -> frozenset[str]:
        """The names that are defined wherever `test` has the truth value `outcome`: those with which, undefined,
        the test would fail or have the other value (`x`, `x is defined`, `x == "a"`, `x | length > 0`,
        `x.a is defined` when true; `x is undefined` when false; `x[0] == "a"` either way). `among`: only these."""
        return frozenset(name for name, value in self._values(test, among)
                         if value is _RAISES or _truth(value) is (not outcome))

    def iterates_nothing(self, iterable: nodes.Node, among: frozenset[str] | None = None) -> frozenset[str]:
        """The names that are defined wherever a loop over `iterable` runs its body: those with which, undefined,
        evaluating it fails or gives nothing to iterate (`xs`, `xs | selectattr(...)`, `x.items()`). `among`: only
        these."""
        return frozenset(name for name, value in self._values(iterable, among)
                         if value in (_RAISES, _UNDEFINED, _EMPTY_ITERATOR)
                         or (isinstance(value, str | tuple) and not value))


def _assigned(children: list[nodes.Node]) -> set[str]:
    """The names a body assigns at its own level (if branches included, nested loops and macros not)."""
    out: set[str] = set()
    for node in children:
        if isinstance(node, nodes.Assign | nodes.AssignBlock):
            out.update(n.name for n in _names_in(node.target))
        elif isinstance(node, nodes.Macro):
            out.add(node.name)
        elif isinstance(node, nodes.Import):
            out.add(node.target)
        elif isinstance(node, nodes.FromImport):
            out.update(item[1] if isinstance(item, tuple) else item for item in node.names)
        elif isinstance(node, nodes.If):
            out |= _assigned([*node.body, *node.elif_, *node.else_])
    return out


# --------------------------------------------------------------------------------------------------

_SUPPRESS_RE = re.compile(r"oscova:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")
_TAG_RE = re.compile(r"<(/?)([A-Za-z][\w.:-]*)(?:\s[^<>]*)?>")
_FENCE_RE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)


def analyze_template(text: str, edited: range | None = None) -> TemplateFacts:
    """Facts about one template's text. Never raises; a syntax error costs only its own construct.

    `edited`: the lines changed since the template last parsed, if known. A block opener typed there is the
    one left open, when the text alone cannot tell (`{% if a %}` typed inside another `{% if %}` block)."""
    facts = TemplateFacts(text=text)
    tree, parsed_text, errors = _parse_tolerant(text, edited)
    facts.syntax_errors = errors
    lines = LineIndex(text)
    # Positions come from the text Jinja parsed: broken constructs blanked, lines and columns unchanged.
    scan = _scan(parsed_text)
    facts.suppressions = _suppressions(scan, lines)
    if parsed_text != text:
        # An include on a line being typed still counts: the graph of templates does not flicker.
        blanked = [ref for ref in _scan(text).references if parsed_text[ref[2]] != text[ref[2]]]
        scan.references = sorted(scan.references + blanked, key=lambda ref: ref[2])
    for kind, path, start, end, ignore_missing, with_context in scan.references:
        line, column = _line_column(lines, start)
        facts.references.append(TemplateReference(kind, path, line, column, column + end - start,
                                                  ignore_missing, with_context))
    if tree is None:
        return facts
    walker = _Walker()
    try:
        walker.visit(tree)
    except RecursionError:
        facts.syntax_errors = [*errors, SyntaxProblem("the template nests too deeply to analyse", 0)]
        return facts
    facts.local_names = frozenset(walker.bound_anywhere)
    facts.delimited = _delimited_intervals(text)
    # Match AST names to scanned identifiers, name by name, in source order (stable by line).
    taken: dict[str, int] = defaultdict(int)
    for name, lineno, free, effect in sorted(walker.names, key=lambda item: item[1]):
        index = taken[name]
        taken[name] += 1
        if not free:
            continue
        offsets = scan.identifiers.get(name, ())
        offset = offsets[index] if index < len(offsets) else _fallback_offset(parsed_text, lines, name, lineno)
        line, column = _line_column(lines, offset)
        facts.free_uses.append(VariableUse(name, line, column, offset, effect))
    facts.free_uses.sort(key=lambda use: use.offset)
    return facts


# --------------------------------------------------------------------------------------------------
# Recovery: when Jinja's parser stops, blank the smallest failing construct (keeping every line and
# column where it was), report it, and parse again.

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


def _parse_tolerant(text: str, edited: range | None = None) -> tuple[nodes.Template | None, str, list[SyntaxProblem]]:
    """Jinja's tree of `text` with every broken construct blanked, the blanked text, and the errors."""
    errors: list[SyntaxProblem] = []
    work = text
    outcome = _parse(work)
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


def _parse(text: str) -> nodes.Template | Exception:
    """Jinja's tree of `text` (`Environment.parse`, without binding every node to the environment, which nothing
    here reads), or the exception it raised."""
    try:
        return nodes.Template(_Parser(_ENV, text).subparse(), lineno=1)
    except Exception as exc:
        return exc


# --------------------------------------------------------------------------------------------------
# Jinja's lexer, faster: the tokens `Lexer.tokenize` makes for the default syntax, from the same patterns tried
# in the same order, with the work `Lexer.wrap` does on each token done as it is made. Whatever Jinja's lexer
# would refuse, or treats specially (a `raw` block, `\r` line breaks), is left to it: `_tokens` says None.

_RULES = _ENV.lexer.rules
_ROOT_RE = _RULES["root"][0][0]
_COMMENT_RE = _RULES["comment_begin"][0][0]
_ENDS = {_lexer.TOKEN_BLOCK_BEGIN: (_RULES["block_begin"][0][0], _lexer.TOKEN_BLOCK_END),
         _lexer.TOKEN_VARIABLE_BEGIN: (_RULES["variable_begin"][0][0], _lexer.TOKEN_VARIABLE_END)}
_BEGINS = (_lexer.TOKEN_RAW_BEGIN, _lexer.TOKEN_VARIABLE_BEGIN, _lexer.TOKEN_COMMENT_BEGIN, _lexer.TOKEN_BLOCK_BEGIN)
_CLOSING = {"{": "}", "(": ")", "[": "]"}
_Token = _lexer.Token


def _tokens(source: str) -> list[_lexer.Token] | None:
    """The tokens of `source` as Jinja's lexer makes them for the default environment, or None where it would
    raise (its error is its own to word) or the text holds what this does not handle."""
    if "\r" in source:
        return None
    if source.endswith("\n"):  # as `tokeniter`: one trailing line break is not part of the template
        source = source[:-1]
    out: list[_lexer.Token] = []
    append = out.append
    pos, end, lineno = 0, len(source), 1
    while pos < end:
        m = _ROOT_RE.match(source, pos)
        if m is None:  # the rest is text
            append(_Token(lineno, _lexer.TOKEN_DATA, source[pos:]))
            break
        groups = m.groups()
        begin = next(kind for kind, value in zip(_BEGINS, groups[1::2], strict=True) if value is not None)
        if begin == _lexer.TOKEN_RAW_BEGIN:
            return None
        text = groups[0]
        if next(g for g in groups[2::2] if g is not None) == "-":
            text = text.rstrip()
        if text:
            append(_Token(lineno, _lexer.TOKEN_DATA, text))
        lineno += groups[0].count("\n")
        pos = m.end()
        if begin == _lexer.TOKEN_COMMENT_BEGIN:
            comment = _COMMENT_RE.match(source, pos)
            if comment is None:
                return None
            lineno += comment.group().count("\n")
            pos = comment.end()
            continue
        append(_Token(lineno, begin, m.group(begin)))
        found = _code(source, pos, lineno, begin, append)
        if found is None:
            return None
        pos, lineno = found
    return out


def _ascii_kinds() -> dict[str, str]:
    """What an ASCII character can start in a code region, in the order Jinja's lexer tries its rules: only that
    rule is tried for it (the rules before it cannot match there). Other characters try every rule in order."""
    kinds: dict[str, str] = {}
    for char in map(chr, range(128)):
        if char in " \t\n\x0b\x0c":
            kinds[char] = "space"
        elif char.isdigit():
            kinds[char] = "number"
        elif char.isalpha() or char == "_":
            kinds[char] = "name"
        elif char in "'\"":
            kinds[char] = "string"
        elif char in "-+%}":
            kinds[char] = "end"  # an end tag, else an operator
        elif char in "/*=!<>~[](){}.:|,;":
            kinds[char] = "operator"
    return kinds


_KINDS = _ascii_kinds()


def _code(source: str, pos: int, lineno: int, begin: str, append: Any) -> tuple[int, int] | None:
    """The tokens of one `{{ }}` or `{% %}` region from `pos` to its end tag (or the end of the text); the offset
    and line after it, or None where Jinja's lexer would raise."""
    end_re, end_type = _ENDS[begin]
    balancing: list[str] = []
    end = len(source)
    while pos < end:
        kind = _KINDS.get(source[pos], "")
        if kind == "space":
            space = _lexer.whitespace_re.match(source, pos)
            if space is None:  # pragma: no cover - the pattern matches every character of this kind
                return None
            lineno += space.group().count("\n")
            pos = space.end()
            continue
        if kind == "end" and not balancing and (m := end_re.match(source, pos)) is not None:
            value = m.group()
            append(_Token(lineno, end_type, value))
            return m.end(), lineno + value.count("\n")
        if kind == "name":
            m = _lexer.name_re.match(source, pos)
            if m is None:  # pragma: no cover - the pattern matches every character of this kind
                return None
            append(_Token(lineno, _lexer.TOKEN_NAME, m.group()))
            pos = m.end()
            continue
        if kind in ("end", "operator"):
            m = _lexer.operator_re.match(source, pos)
            if m is None or not _operator(m.group(), balancing, lineno, append):
                return None
            pos = m.end()
            continue
        if kind:  # a number, or a string
            found = _value(source, pos, lineno, append, kind == "number")
        else:  # any other character: every rule, in Jinja's order
            found = _other(source, pos, lineno, balancing, append, end_re, end_type)
        if found is None:
            return None
        if found[0] < 0:  # the end tag
            return -found[0], found[1]
        pos, lineno = found
    return pos, lineno


def _operator(op: str, balancing: list[str], lineno: int, append: Any) -> bool:
    """An operator token, brackets balanced as Jinja's lexer balances them; False where it would raise."""
    if op in _CLOSING:
        balancing.append(_CLOSING[op])
    elif op in ")]}" and (not balancing or balancing.pop() != op):
        return False  # Jinja's lexer: "unexpected '}'"
    append(_Token(lineno, _lexer.operators[op], op))
    return True


def _value(source: str, pos: int, lineno: int, append: Any, number: bool) -> tuple[int, int] | None:
    """A number (float, integer or name, in Jinja's order) or a string at `pos`."""
    if number:
        m = _lexer.float_re.match(source, pos) or _lexer.integer_re.match(source, pos)
        if m is None:
            m = _lexer.name_re.match(source, pos)
            if m is None or not m.group().isidentifier():
                return None
            append(_Token(lineno, _lexer.TOKEN_NAME, m.group()))
            return m.end(), lineno
        try:  # a number Python does not read (other scripts' digits): Jinja's lexer raises when it gets there
            value: Any = literal_eval(m.group().replace("_", "")) if m.re is _lexer.float_re \
                else int(m.group().replace("_", ""), 0)
        except Exception:  # noqa: BLE001
            return None
        append(_Token(lineno, _lexer.TOKEN_FLOAT if m.re is _lexer.float_re else _lexer.TOKEN_INTEGER, value))
        return m.end(), lineno
    m = _lexer.string_re.match(source, pos)
    if m is None:
        return None
    try:
        value = m.group()[1:-1].encode("ascii", "backslashreplace").decode("unicode-escape")
    except Exception:  # noqa: BLE001 - Jinja's lexer says what is wrong with it
        return None
    append(_Token(lineno, _lexer.TOKEN_STRING, value))
    return m.end(), lineno + m.group().count("\n")


def _other(source: str, pos: int, lineno: int, balancing: list[str], append: Any, end_re: Any,
           end_type: str) -> tuple[int, int] | None:
    """Every rule of Jinja's lexer in its order, at a character `_KINDS` does not classify; the end tag is told
    by a negative offset."""
    ch = source[pos]
    if not balancing and (m := end_re.match(source, pos)) is not None:
        append(_Token(lineno, end_type, m.group()))
        return -m.end(), lineno + m.group().count("\n")
    if (m := _lexer.whitespace_re.match(source, pos)) is not None:
        return m.end(), lineno + m.group().count("\n")
    if ch.isdecimal() or (m := _lexer.name_re.match(source, pos)) is None:
        found = _value(source, pos, lineno, append, ch.isdecimal()) if ch.isdecimal() or ch in "'\"" else None
        if found is not None:
            return found
        if (m := _lexer.operator_re.match(source, pos)) is None or not _operator(m.group(), balancing, lineno, append):
            return None
        return m.end(), lineno
    if not m.group().isidentifier():
        return None
    append(_Token(lineno, _lexer.TOKEN_NAME, m.group()))
    return m.end(), lineno


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
        opener = next((r for r in regions if r.tag == "raw" and not _RAW_END_RE.search(text, r.end)), None)
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
        outcome = _parse(blanked)
        if spans is candidates[-1] or _failure(outcome) != before:
            start, end = spans[0]
            line, column = _line_column(lines, start)
            end_col = column + end - start if _line_column(lines, end)[0] == line else None
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
    return not isinstance(_parse(source), nodes.Template)


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
    scratch = _Scan()
    while pos < n:
        m = _OPEN_RE.search(text, pos)
        if m is None:
            break
        opener = m.group()
        if opener == "{#":
            close = text.find(_COMMENT_END, m.end())
            end = n if close == -1 else close + 2
            tag, closed = "", close != -1
        else:
            scratch.unclosed = False
            end = _scan_code(text, m.end(), opener == "{%", scratch)
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


def _line_column(lines: LineIndex, offset: int) -> tuple[int, int]:
    """The line of an offset and its column in characters, as the facts keep them (the LSP's UTF-16 columns are
    computed from these when a range is made)."""
    line = lines.position(offset).line
    return line, offset - lines.line_start(line)


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
        line, column = _line_column(lines, offset)
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
    fences = [m.start() for m in _FENCE_RE.finditer(text)]
    for i in range(0, len(fences) - 1, 2):
        intervals.append((fences[i], fences[i + 1]))
    return intervals


# --------------------------------------------------------------------------------------------------
# A compact form for worker processes: plain tuples pickle an order of magnitude faster than objects.

WireFacts = tuple


def facts_to_wire(facts: TemplateFacts) -> WireFacts:
    errors = tuple((e.message, e.line, e.column, e.end_column) for e in facts.syntax_errors)
    return (
        tuple((u.name, u.line, u.column, u.offset, u.effect) for u in facts.free_uses),
        tuple((r.kind, r.path, r.line, r.column, r.end_column, r.ignore_missing, r.with_context)
              for r in facts.references),
        errors,
        tuple(facts.local_names),
        tuple(facts.suppressions.items()),
        tuple(facts.delimited),
    )


def facts_from_wire(text: str, wire: WireFacts) -> TemplateFacts:
    uses, refs, errors, local_names, suppressions, delimited = wire
    return TemplateFacts(
        text=text,
        free_uses=[VariableUse(*u) for u in uses],
        references=[TemplateReference(*r) for r in refs],
        syntax_errors=[SyntaxProblem(*e) for e in errors],
        local_names=frozenset(local_names),
        suppressions=dict(suppressions),
        delimited=list(delimited),
    )


def analyze_templates_to_wire(texts: list[str]) -> list[WireFacts]:
    """Worker-process entry point: many templates' facts in the compact form."""
    return [facts_to_wire(analyze_template(text)) for text in texts]
