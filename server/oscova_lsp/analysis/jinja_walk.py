"""The scope walk over Jinja's tree: every name in source order, whether an enclosing template scope binds it,
and what rendering does at it when it is undefined."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from jinja2 import nodes

from .jinja_facts import (
    COMPARED,
    DEFAULT,
    DEFINED_TEST,
    EMPTY,
    FAILS,
    GUARDED,
    IF_TEST,
    LOOP,
    PASSES,
    TEST,
    VALUE,
)
from .jinja_truth import (
    DEFAULT_FILTERS,
    DEFINED_TESTS,
    LEAVES,
    ORDERING,
    RAISES,
    TESTS_OF_UNDEFINED,
    UNDEFINED_FILTERED,
    Proofs,
    children,
)


def _names_in(node: nodes.Node) -> list[nodes.Name]:
    """The Name nodes of an assignment target, the node itself included."""
    if isinstance(node, nodes.Name):
        return [node]
    return list(node.find_all(nodes.Name))


class Walker:
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
        self.bodies: list[list[Any]] = []
        """Each enclosing body, and once a macro asks, every name it assigns (`[children]`, `[children, names]`)."""
        self.bound_anywhere: set[str] = set()
        self.proofs = Proofs()

    def bound(self, name: str) -> bool:
        for scope in self.scopes:
            if name in scope:
                return True
        return False

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
        kind = type(node)
        if kind in LEAVES:
            return  # nothing in it to record (and no visitor reads the role a child was visited with)
        self.role = role
        method = _VISITORS.get(kind, _UNSEEN)
        if method is _UNSEEN:
            method = _VISITORS[kind] = getattr(Walker, "visit_" + kind.__name__, None)
        if method is not None:
            method(self, node)
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
        for names in self.guards:
            if name in names:
                return GUARDED
        return self.role

    def generic(self, node: nodes.Node) -> None:
        for child in children(node):
            self.visit(child)

    def body(self, children: list[nodes.Node]) -> None:
        self.bodies.append([children])
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
            if type(child) not in LEAVES:  # text, the most of an output: `visit` would return at once
                self.visit(child, EMPTY)

    def visit_Filter(self, node: nodes.Filter) -> None:
        if node.node is not None:  # None: a `{% filter %}` block's filter, applied to the block's text
            if node.name in DEFAULT_FILTERS:
                role = DEFAULT
            elif UNDEFINED_FILTERED.get(node.name) is RAISES:  # `indent`, `int`, `tojson` … of undefined fail
                role = FAILS
            else:
                role = EMPTY if self.role == EMPTY and node.name in _TEXT_FILTERS else VALUE
            self.visit(node.node, role)
        self._arguments(node)

    def visit_Test(self, node: nodes.Test) -> None:
        if node.name in DEFINED_TESTS:
            role = DEFINED_TEST
        else:
            of_undefined = TESTS_OF_UNDEFINED.get(node.name)
            role = FAILS if of_undefined is RAISES else PASSES if of_undefined is True else TEST
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
        role = FAILS if ops & ORDERING else COMPARED if ops <= {"eq", "ne"} else VALUE
        self.visit(node.expr, role)
        for op in node.ops:
            self.visit(op.expr, role)

    def _computes(self, node: nodes.Node) -> None:
        for child in children(node):
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
        later: set[str] = set()
        for body in self.bodies:  # asked of a body for its first macro only: most bodies hold none
            if len(body) == 1:
                body.append(_assigned(body[0]))
            later |= body[1]
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


_VISITORS: dict[type, Any] = {}
"""Each node type's `visit_` method of the walker, or None (its children are visited)."""
_UNSEEN = object()
_ALWAYS_BOUND = frozenset({"self", "super"})
"""Special names bound everywhere; `loop`, `caller`, `varargs` and `kwargs` are bound by their construct."""
_TEXT_FILTERS = frozenset({"capitalize", "e", "escape", "forceescape", "lower", "safe", "string", "striptags", "title",
                           "trim", "truncate", "upper"})
"""Filters that turn an undefined value into empty text (`{{ x | upper }}` renders empty)."""


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
