"""What a test proves: Jinja's own results for an undefined value, so a use that rendering reaches only where a
name is defined (`{% if x | length > 0 %}{{ x }}`, `{% if x.a is defined %}{{ x.b }}`, a loop over `x`) is
guarded. Every entry was read from Jinja 3.1 applying the filter or test to `Undefined`."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any

from jinja2 import nodes

DEFAULT_FILTERS = frozenset({"default", "d"})
DEFINED_TESTS = frozenset({"defined", "undefined"})
ORDERING = frozenset({"lt", "lteq", "gt", "gteq"})


class _Outcome:
    """An evaluation's result that is not a plain value."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


_UNDEFINED = _Outcome("undefined")
"""Jinja's `Undefined`: false, empty, equal only to another undefined value."""
RAISES = _Outcome("raises")
"""The evaluation fails (reading from or computing with an undefined value)."""
_UNKNOWN = _Outcome("unknown")
"""Any value: it depends on what the other names hold."""
_MISSING = _Outcome("missing")
"""Not evaluated yet."""
_EMPTY_ITERATOR = _Outcome("empty iterator")
"""A generator over nothing (`select`, `map`, `unique` … of an undefined value): true, and a loop over it never
runs."""

UNDEFINED_FILTERED: dict[str, object] = {
    **dict.fromkeys(("capitalize", "e", "escape", "forceescape", "format", "join", "lower", "replace", "safe",
                     "string", "striptags", "title", "trim", "upper", "urlencode", "urlize"), ""),
    **dict.fromkeys(("count", "length", "sum", "wordcount"), 0),
    **dict.fromkeys(("groupby", "list", "sort"), ()),
    **dict.fromkeys(("batch", "items", "map", "reject", "rejectattr", "reverse", "select", "selectattr", "unique"),
                    _EMPTY_ITERATOR),
    **dict.fromkeys(("first", "last", "max", "min", "random", "truncate"), _UNDEFINED),
    **dict.fromkeys(("abs", "attr", "dictsort", "filesizeformat", "float", "indent", "int", "round", "tojson",
                     "wordwrap", "xmlattr"), RAISES),
}
"""What a built-in filter makes of an undefined value (`default` is the filters' own case)."""
TESTS_OF_UNDEFINED: dict[str, object] = {
    **dict.fromkeys(("boolean", "defined", "escaped", "false", "filter", "float", "integer", "lower", "mapping",
                     "none", "number", "string", "test", "true", "upper"), False),
    **dict.fromkeys(("callable", "iterable", "sequence", "undefined"), True),
    **dict.fromkeys(("<", "<=", ">", ">=", "divisibleby", "even", "ge", "greaterthan", "gt", "le", "lessthan", "lt",
                     "odd"), RAISES),
}
"""What a built-in test says of an undefined value (equality tests compare, below)."""
_EQUALITY_TESTS = {"==": True, "eq": True, "equalto": True, "!=": False, "ne": False}
_MAX_PROOF_NAMES = 32
"""Names of one test that are evaluated for what it proves (a test naming more proves nothing of the rest)."""


def children(node: nodes.Node) -> list[nodes.Node]:
    """`node.iter_child_nodes()` as a list, in a third of its time: each field's node, or the nodes of its list."""
    out: list[nodes.Node] = []
    for name in node.fields:
        item = getattr(node, name, None)
        if isinstance(item, list):
            out.extend(child for child in item if isinstance(child, nodes.Node))
        elif isinstance(item, nodes.Node):
            out.append(item)
    return out


_NO_NAMES: tuple[frozenset[str], tuple[str, ...]] = (frozenset(), ())
LEAVES = frozenset({nodes.TemplateData, nodes.Const})
"""Node types without children or names: a template's text and its constants."""


def _truth(value: object) -> bool | None:
    """The truth of a value, None when it is unknown; `RAISES` has none (callers check it first)."""
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

    def __init__(self, name: str | None, proofs: Proofs) -> None:
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
        if RAISES in items:
            return RAISES
        return tuple(items) if all(_plain(item) for item in items) else _UNKNOWN

    _Tuple = _List

    def _Not(self, node: nodes.Not) -> object:  # noqa: N802
        value = self.value(node.node)
        truth = None if value is RAISES else _truth(value)
        return value if value is RAISES else _UNKNOWN if truth is None else not truth

    def _And(self, node: nodes.And) -> object:  # noqa: N802
        return self._short_circuit(node, stops_on=False)

    def _Or(self, node: nodes.Or) -> object:  # noqa: N802
        return self._short_circuit(node, stops_on=True)

    def _short_circuit(self, node: nodes.And | nodes.Or, stops_on: bool) -> object:
        left = self.value(node.left)
        if left is RAISES:
            return RAISES
        truth = _truth(left)
        if truth is stops_on:
            return left
        right = self.value(node.right)
        if truth is not None:
            return right
        # The left side may go either way: the result is the right's truth only when it is that of a stop too.
        return stops_on if right is not RAISES and _truth(right) is stops_on else _UNKNOWN

    def _CondExpr(self, node: nodes.CondExpr) -> object:  # noqa: N802
        test = self.value(node.test)
        truth = None if test is RAISES else _truth(test)
        if test is RAISES or truth is None:
            return test if test is RAISES else _UNKNOWN
        if truth:
            return self.value(node.expr1)
        return _UNDEFINED if node.expr2 is None else self.value(node.expr2)

    def _reads(self, node: nodes.Getattr | nodes.Getitem | nodes.Call) -> object:
        subject = self.value(node.node)
        return RAISES if subject is _UNDEFINED or subject is RAISES else _UNKNOWN

    def _Getattr(self, node: nodes.Getattr) -> object:  # noqa: N802
        return self._reads(node)

    def _Getitem(self, node: nodes.Getitem) -> object:  # noqa: N802
        read, key = self._reads(node), self.value(node.arg)
        if read is RAISES or key is RAISES:
            return RAISES
        return _UNDEFINED if key is _UNDEFINED else read  # no container holds an undefined key: Jinja's lookup fails

    def _Call(self, node: nodes.Call) -> object:  # noqa: N802
        read = self._reads(node)
        if read is RAISES or self._arguments_raise(node):
            return RAISES
        if isinstance(node.node, nodes.Name) and node.node.name == "range" and not node.kwargs:
            bounds = [self.value(arg) for arg in node.args]  # `range(xs | length)`: empty for an undefined `xs`
            numbers = [b for b in bounds if type(b) is int]
            if len(numbers) == len(bounds) and 1 <= len(numbers) <= 3 and numbers[2:] != [0]:
                return () if len(range(*numbers)) == 0 else _UNKNOWN
        return read

    def _arguments_raise(self, node: nodes.Call | nodes.Filter | nodes.Test) -> bool:
        return any(self.value(arg) is RAISES for arg in [*node.args, *(kw.value for kw in node.kwargs)])

    def _computes(self, node: nodes.BinExpr | nodes.UnaryExpr) -> object:
        operands = [self.value(child) for child in children(node)]
        return RAISES if any(v is _UNDEFINED or v is RAISES for v in operands) else _UNKNOWN

    _Add = _Sub = _Mul = _Div = _FloorDiv = _Mod = _Pow = _Neg = _Pos = _computes

    def _Concat(self, node: nodes.Concat) -> object:  # noqa: N802
        parts = [self.value(child) for child in node.nodes]
        if RAISES in parts:
            return RAISES
        if all(p is _UNDEFINED or isinstance(p, str | int | float) for p in parts):
            return "".join("" if p is _UNDEFINED else str(p) for p in parts)
        return _UNKNOWN

    def _Filter(self, node: nodes.Filter) -> object:  # noqa: N802
        if node.node is None:  # a `{% filter %}` block's filter
            return _UNKNOWN
        subject = self.value(node.node)
        if subject is RAISES or self._arguments_raise(node):
            return RAISES
        if node.name in DEFAULT_FILTERS:
            fallback = self.value(node.args[0]) if node.args else ""
            if subject is _UNDEFINED:
                return fallback
            always = len(node.args) > 1 or any(kw.key == "boolean" for kw in node.kwargs)
            return subject if _plain(subject) and not always else _UNKNOWN
        if subject is _UNDEFINED:
            return UNDEFINED_FILTERED.get(node.name, _UNKNOWN)
        if node.name in ("length", "count") and isinstance(subject, str | tuple):
            return len(subject)
        if node.name == "list" and (subject is _EMPTY_ITERATOR or isinstance(subject, tuple)):
            return () if subject is _EMPTY_ITERATOR else subject
        return _UNKNOWN

    def _Test(self, node: nodes.Test) -> object:  # noqa: N802
        subject = self.value(node.node)
        if subject is RAISES or self._arguments_raise(node):
            return RAISES
        if node.name in _EQUALITY_TESTS and len(node.args) == 1 and not node.kwargs:
            equal = _equal(subject, self.value(node.args[0]))
            return equal if equal is _UNKNOWN else equal is _EQUALITY_TESTS[node.name]
        if subject is _UNDEFINED:
            return TESTS_OF_UNDEFINED.get(node.name, _UNKNOWN)
        if node.name in DEFINED_TESTS and subject is not _UNKNOWN:
            return node.name == "defined"  # a plain value or an empty iterator is defined
        return _UNKNOWN

    def _Compare(self, node: nodes.Compare) -> object:  # noqa: N802
        left = self.value(node.expr)
        if left is RAISES:
            return RAISES
        if len(node.ops) != 1:  # a chain: only its first operands are certain to be evaluated
            return RAISES if self.value(node.ops[0].expr) is RAISES else _UNKNOWN
        op = node.ops[0].op
        right = self.value(node.ops[0].expr)
        if right is RAISES:
            return RAISES
        if op in ("eq", "ne"):
            equal = _equal(left, right)
            return equal if equal is _UNKNOWN else equal is (op == "eq")
        if op in ORDERING:
            if left is _UNDEFINED or right is _UNDEFINED:
                return RAISES
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
        return RAISES


def _contains(container: object, item: object) -> object:
    """`item in container`: nothing is in an undefined value (it iterates as empty); an undefined value is in no
    list, and asking a string for it fails."""
    if container is _UNDEFINED or container is _EMPTY_ITERATOR:
        return False
    if item is _UNDEFINED and isinstance(container, tuple):
        return False
    if item is _UNDEFINED and isinstance(container, str):
        return RAISES
    if isinstance(container, str | tuple) and _plain(item):
        try:
            return item in container  # type: ignore[operator]
        except TypeError:
            return RAISES
    return _UNKNOWN


class Proofs:
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
        if type(node) in LEAVES:
            return _NO_NAMES
        found = self.names.get(id(node))
        if found is None:
            if isinstance(node, nodes.Name):
                found = (frozenset({node.name}), (node.name,)) if node.ctx == "load" else _NO_NAMES
            else:
                # A node with one child that reads names reads what that child reads: its answer is shared.
                found = _NO_NAMES
                every: set[str] | None = None
                first: dict[str, None] = {}
                for child in children(node):
                    names, ordered = self.names_of(child)
                    if not names:
                        continue
                    if found is _NO_NAMES:
                        found = (names, ordered)
                        continue
                    if every is None:
                        every = set(found[0])
                        first = dict.fromkeys(found[1])
                    every |= names
                    first.update(dict.fromkeys(ordered[:_MAX_PROOF_NAMES - len(first)]))
                if every is not None:
                    found = (frozenset(every), tuple(first))
            self.names[id(node)] = found
        return found

    def reads(self, body: Sequence[nodes.Node]) -> frozenset[str]:
        """The names the nodes of a body read."""
        if len(body) < 2:  # an empty `else`, or a body of one node, as most are: no union to make
            return self.names_of(body[0])[0] if body else _NO_NAMES[0]
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
        return None if value is RAISES else _truth(value)

    def implied(self, test: nodes.Node, outcome: bool, among: frozenset[str] | None = None) -> frozenset[str]:
        """The names that are defined wherever `test` has the truth value `outcome`: those with which, undefined,
        the test would fail or have the other value (`x`, `x is defined`, `x == "a"`, `x | length > 0`,
        `x.a is defined` when true; `x is undefined` when false; `x[0] == "a"` either way). `among`: only these."""
        if among is not None and not among:  # no name to ask about (an `if` whose branches read none)
            return _NO_NAMES[0]
        return frozenset(name for name, value in self._values(test, among)
                         if value is RAISES or _truth(value) is (not outcome))

    def iterates_nothing(self, iterable: nodes.Node, among: frozenset[str] | None = None) -> frozenset[str]:
        """The names that are defined wherever a loop over `iterable` runs its body: those with which, undefined,
        evaluating it fails or gives nothing to iterate (`xs`, `xs | selectattr(...)`, `x.items()`). `among`: only
        these."""
        return frozenset(name for name, value in self._values(iterable, among)
                         if value in (RAISES, _UNDEFINED, _EMPTY_ITERATOR)
                         or (isinstance(value, str | tuple) and not value))
