"""Jinja's expression rules over a list of tokens, for `jinja_parser`: each method is Jinja's of the same name
(`jinja2.parser.Parser`), without the token stream's indirections (a token is looked at in the list, a test is a
comparison, not a parsed `"name:if"` string), and an operand that no operator follows is not taken down Jinja's
ten levels of rules; its nodes are made without `Node.__init__`'s checks. Where Jinja would fail, `Unsupported`."""

from __future__ import annotations

from typing import Any

from jinja2 import nodes

_ABSENT: Any = object()
"""A field not given to a node maker."""


def node_maker(cls: type[nodes.Node]) -> Any:
    """`cls(*fields, lineno=...)` as Jinja's `Node.__init__` makes it (the fields, the line, no environment), without
    its checks of what it is given (the parser's tests hold each node equal to Jinja's) in half its time."""
    fields = cls.fields
    new = object.__new__

    def make(*values: Any, lineno: int | None = None) -> Any:
        node = new(cls)
        attributes = dict(zip(fields, values))  # noqa: B905 - none given: the parser sets them after
        attributes["lineno"] = lineno
        attributes["environment"] = None
        node.__dict__ = attributes
        return node

    # The commonest nodes (text, output, names, constants) have one or two fields: their attributes written out
    # as a dict are made in half the time. Given fewer values, `make` leaves the rest unset.
    if len(fields) == 1:
        (first,) = fields

        def make_one(value: Any = _ABSENT, lineno: int | None = None) -> Any:
            if value is _ABSENT:
                return make(lineno=lineno)
            node = new(cls)
            node.__dict__ = {first: value, "lineno": lineno, "environment": None}
            return node

        return make_one
    if len(fields) == 2:
        first, second = fields

        def make_two(value: Any = _ABSENT, other: Any = _ABSENT, lineno: int | None = None) -> Any:
            if other is _ABSENT:
                return make(*(() if value is _ABSENT else (value,)), lineno=lineno)
            node = new(cls)
            node.__dict__ = {first: value, second: other, "lineno": lineno, "environment": None}
            return node

        return make_two
    return make


_And = node_maker(nodes.And)
_Call = node_maker(nodes.Call)
_Compare = node_maker(nodes.Compare)
_Concat = node_maker(nodes.Concat)
_CondExpr = node_maker(nodes.CondExpr)
_Const = node_maker(nodes.Const)
_Dict = node_maker(nodes.Dict)
_Filter = node_maker(nodes.Filter)
_Getattr = node_maker(nodes.Getattr)
_Getitem = node_maker(nodes.Getitem)
_Keyword = node_maker(nodes.Keyword)
_List = node_maker(nodes.List)
_NSRef = node_maker(nodes.NSRef)
_Name = node_maker(nodes.Name)
_Neg = node_maker(nodes.Neg)
_Not = node_maker(nodes.Not)
_Operand = node_maker(nodes.Operand)
_Or = node_maker(nodes.Or)
_Pair = node_maker(nodes.Pair)
_Pos = node_maker(nodes.Pos)
_Pow = node_maker(nodes.Pow)
_Slice = node_maker(nodes.Slice)
_Test = node_maker(nodes.Test)
_Tuple = node_maker(nodes.Tuple)


class Unsupported(Exception):
    """Jinja's parser decides: it fails here, or this parser leaves the construct to it."""


NOT_PLAIN = frozenset({"not", "true", "false", "True", "False", "none", "None"})
"""Names an expression does not read as a variable when alone (`not …`, constants)."""
_COMPARE = frozenset({"eq", "ne", "lt", "lteq", "gt", "gteq"})
_MATH1 = {"add": node_maker(nodes.Add), "sub": node_maker(nodes.Sub)}
_MATH2 = {"mul": node_maker(nodes.Mul), "div": node_maker(nodes.Div), "floordiv": node_maker(nodes.FloorDiv),
          "mod": node_maker(nodes.Mod)}
_GOES_ON = frozenset({"add", "sub", "tilde", "mul", "div", "floordiv", "mod", "pow", *_COMPARE})
"""Operator tokens after an operand that a level of the expression rules above `parse_unary` takes up."""
_GOES_ON_NAMES = frozenset({"if", "or", "and", "in", "not"})
_TUPLE_ENDS = ("variable_end", "block_end", "rparen")
_POSTFIX = frozenset({"dot", "lbracket", "lparen", "pipe"})
"""Tokens after a primary that `parse_postfix` or `parse_filter_expr` take up (besides the name `is`)."""
_TEST_ARGUMENT = frozenset({"name", "string", "integer", "float", "lparen", "lbracket", "lbrace"})


class ExpressionParser:
    """The token stream and Jinja's expression rules; `jinja_parser._Parser` adds the statements."""

    __slots__ = ("toks", "i")

    def __init__(self, tokens: list[tuple[int, str, Any]]) -> None:
        self.toks = [*tokens, (tokens[-1][0] if tokens else 1, "eof", "")]
        self.i = 0

    # The token stream: `current` is `self.toks[self.i]`, which stays on the end token once there.

    def next(self) -> tuple[int, str, Any]:
        token = self.toks[self.i]
        if token[1] != "eof":
            self.i += 1
        return token

    def look(self) -> tuple[int, str, Any]:
        return self.toks[min(self.i + 1, len(self.toks) - 1)]

    def is_name(self, value: str) -> bool:
        token = self.toks[self.i]
        return token[1] == "name" and token[2] == value

    def skip_if(self, kind: str, value: str | None = None) -> bool:
        token = self.toks[self.i]
        if token[1] == kind and (value is None or token[2] == value):
            self.next()
            return True
        return False

    def expect(self, kind: str, value: str | None = None) -> tuple[int, str, Any]:
        token = self.toks[self.i]
        if token[1] != kind or (value is not None and token[2] != value):
            raise Unsupported
        return self.next()

    def is_tuple_end(self, extra_end_rules: tuple[str, ...] | None) -> bool:
        token = self.toks[self.i]
        if token[1] in _TUPLE_ENDS:
            return True
        return extra_end_rules is not None and token[1] == "name" and token[2] in extra_end_rules

    def parse_filter(self, node: nodes.Expr | None, start_inline: bool = False) -> Any:
        while self.toks[self.i][1] == "pipe" or start_inline:
            if not start_inline:
                self.next()
            token = self.expect("name")
            name = token[2]
            while self.toks[self.i][1] == "dot":
                self.next()
                name += "." + self.expect("name")[2]
            if self.toks[self.i][1] == "lparen":
                args, kwargs, dyn_args, dyn_kwargs = self.parse_call_args()
            else:
                args, kwargs, dyn_args, dyn_kwargs = [], [], None, None
            node = _Filter(node, name, args, kwargs, dyn_args, dyn_kwargs, lineno=token[0])
            start_inline = False
        return node

    # Expressions. `first`: the first operand, already parsed (at `lineno`) and followed by an operator.

    def parse_expression(self, with_condexpr: bool = True) -> nodes.Expr:
        token = self.toks[self.i]
        if token[1] == "name" and token[2] == "not":
            # `not … x` alone is each `not` around the operand; an operator after it: back, the rules decide.
            start = self.i
            nots = []
            while self.is_name("not"):
                nots.append(self.next()[0])
            node = self.parse_unary()
            after = self.toks[self.i]
            if after[1] not in _GOES_ON and not (after[1] == "name" and after[2] in _GOES_ON_NAMES):
                for lineno in reversed(nots):
                    node = _Not(node, lineno=lineno)
                return node
            self.i = start
            return self.parse_condexpr() if with_condexpr else self.parse_or()
        lineno = token[0]
        first = self.parse_unary()
        after = self.toks[self.i]
        if after[1] not in _GOES_ON and not (after[1] == "name" and after[2] in _GOES_ON_NAMES):
            return first  # every level between here and `parse_unary` would return it as it is
        return self.parse_condexpr(first, lineno) if with_condexpr else self.parse_or(first, lineno)

    def parse_condexpr(self, first: nodes.Expr | None = None, lineno: int = 0) -> nodes.Expr:
        if first is None:
            lineno = self.toks[self.i][0]
        expr1 = self.parse_or(first, lineno)
        while self.skip_if("name", "if"):
            expr2 = self.parse_or()
            expr3 = self.parse_condexpr() if self.skip_if("name", "else") else None
            expr1 = _CondExpr(expr2, expr1, expr3, lineno=lineno)
            lineno = self.toks[self.i][0]
        return expr1

    def parse_or(self, first: nodes.Expr | None = None, lineno: int = 0) -> nodes.Expr:
        if first is None:
            lineno = self.toks[self.i][0]
        left = self.parse_and(first, lineno)
        while self.skip_if("name", "or"):
            left = _Or(left, self.parse_and(), lineno=lineno)
            lineno = self.toks[self.i][0]
        return left

    def parse_and(self, first: nodes.Expr | None = None, lineno: int = 0) -> nodes.Expr:
        if first is None:
            lineno = self.toks[self.i][0]
        left = self.parse_not(first, lineno)
        while self.skip_if("name", "and"):
            left = _And(left, self.parse_not(), lineno=lineno)
            lineno = self.toks[self.i][0]
        return left

    def parse_not(self, first: nodes.Expr | None = None, lineno: int = 0) -> nodes.Expr:
        if first is None and self.is_name("not"):
            lineno = self.next()[0]
            return _Not(self.parse_not(), lineno=lineno)
        return self.parse_compare(first, lineno)

    def parse_compare(self, first: nodes.Expr | None = None, lineno: int = 0) -> nodes.Expr:
        if first is None:
            lineno = self.toks[self.i][0]
        expr = self.parse_math1(first, lineno)
        ops = []
        while True:
            token = self.toks[self.i]
            if token[1] in _COMPARE:
                self.next()
                ops.append(_Operand(token[1], self.parse_math1()))
            elif self.skip_if("name", "in"):
                ops.append(_Operand("in", self.parse_math1()))
            elif token[1] == "name" and token[2] == "not" and self.look()[1:] == ("name", "in"):
                self.next()
                self.next()
                ops.append(_Operand("notin", self.parse_math1()))
            else:
                break
            lineno = self.toks[self.i][0]
        if not ops:
            return expr
        return _Compare(expr, ops, lineno=lineno)

    def parse_math1(self, first: nodes.Expr | None = None, lineno: int = 0) -> nodes.Expr:
        if first is None:
            lineno = self.toks[self.i][0]
        left = self.parse_concat(first, lineno)
        while self.toks[self.i][1] in _MATH1:
            cls = _MATH1[self.next()[1]]
            left = cls(left, self.parse_concat(), lineno=lineno)
            lineno = self.toks[self.i][0]
        return left

    def parse_concat(self, first: nodes.Expr | None = None, lineno: int = 0) -> nodes.Expr:
        if first is None:
            lineno = self.toks[self.i][0]
        args = [self.parse_math2(first, lineno)]
        while self.toks[self.i][1] == "tilde":
            self.next()
            args.append(self.parse_math2())
        if len(args) == 1:
            return args[0]
        return _Concat(args, lineno=lineno)

    def parse_math2(self, first: nodes.Expr | None = None, lineno: int = 0) -> nodes.Expr:
        if first is None:
            lineno = self.toks[self.i][0]
        left = self.parse_pow(first, lineno)
        while self.toks[self.i][1] in _MATH2:
            cls = _MATH2[self.next()[1]]
            left = cls(left, self.parse_pow(), lineno=lineno)
            lineno = self.toks[self.i][0]
        return left

    def parse_pow(self, first: nodes.Expr | None = None, lineno: int = 0) -> nodes.Expr:
        if first is None:
            lineno = self.toks[self.i][0]
        left = first if first is not None else self.parse_unary()
        while self.toks[self.i][1] == "pow":
            self.next()
            left = _Pow(left, self.parse_unary(), lineno=lineno)
            lineno = self.toks[self.i][0]
        return left

    def parse_unary(self, with_filter: bool = True) -> nodes.Expr:
        token = self.toks[self.i]
        node: nodes.Expr
        if token[1] == "sub":
            self.next()
            node = _Neg(self.parse_unary(False), lineno=token[0])
        elif token[1] == "add":
            self.next()
            node = _Pos(self.parse_unary(False), lineno=token[0])
        else:
            node = self.parse_primary()
        after = self.toks[self.i]
        if after[1] in _POSTFIX or (after[1] == "name" and after[2] == "is"):  # else both would return it
            node = self.parse_postfix(node)
            if with_filter:
                node = self.parse_filter_expr(node)
        return node

    def parse_primary(self, with_namespace: bool = False) -> nodes.Expr:
        token = self.toks[self.i]
        kind = token[1]
        node: nodes.Expr
        if kind == "name":
            self.next()
            value = token[2]
            if value in ("true", "false", "True", "False"):
                node = _Const(value in ("true", "True"), lineno=token[0])
            elif value in ("none", "None"):
                node = _Const(None, lineno=token[0])
            elif with_namespace and self.toks[self.i][1] == "dot":
                self.next()
                node = _NSRef(value, self.expect("name")[2], lineno=token[0])
            else:
                node = _Name(value, "load", lineno=token[0])
        elif kind == "string":
            self.next()
            buf = [token[2]]
            while self.toks[self.i][1] == "string":
                buf.append(self.next()[2])
            node = _Const("".join(buf), lineno=token[0])
        elif kind in ("integer", "float"):
            self.next()
            node = _Const(token[2], lineno=token[0])
        elif kind == "lparen":
            self.next()
            node = self.parse_tuple(explicit_parentheses=True)
            self.expect("rparen")
        elif kind == "lbracket":
            node = self.parse_list()
        elif kind == "lbrace":
            node = self.parse_dict()
        else:
            raise Unsupported  # Jinja: unexpected token
        return node

    def parse_tuple(self, simplified: bool = False, with_condexpr: bool = True,
                    extra_end_rules: tuple[str, ...] | None = None, explicit_parentheses: bool = False,
                    with_namespace: bool = False) -> nodes.Expr:
        token = self.toks[self.i]
        if token[1] == "name" and not simplified and token[2] not in NOT_PLAIN and \
                self.look()[1] in ("variable_end", "block_end") and \
                not (extra_end_rules is not None and token[2] in extra_end_rules):
            self.next()  # one variable alone before the tag's end (as `jinja_parse._Parser` shortcuts it)
            return _Name(token[2], "load", lineno=token[0])
        lineno = token[0]
        args: list[nodes.Expr] = []
        is_tuple = False
        while True:
            if args:
                self.expect("comma")
            if self.is_tuple_end(extra_end_rules):
                break
            if simplified:
                args.append(self.parse_primary(with_namespace))
            else:
                args.append(self.parse_expression(with_condexpr))
            if self.toks[self.i][1] == "comma":
                is_tuple = True
            else:
                break
            lineno = self.toks[self.i][0]
        if not is_tuple:
            if args:
                return args[0]
            if not explicit_parentheses:
                raise Unsupported  # Jinja: expected an expression
        return _Tuple(args, "load", lineno=lineno)

    def parse_list(self) -> nodes.Expr:
        token = self.expect("lbracket")
        items: list[nodes.Expr] = []
        while self.toks[self.i][1] != "rbracket":
            if items:
                self.expect("comma")
            if self.toks[self.i][1] == "rbracket":
                break
            items.append(self.parse_expression())
        self.expect("rbracket")
        return _List(items, lineno=token[0])

    def parse_dict(self) -> nodes.Expr:
        token = self.expect("lbrace")
        items: list[nodes.Pair] = []
        while self.toks[self.i][1] != "rbrace":
            if items:
                self.expect("comma")
            if self.toks[self.i][1] == "rbrace":
                break
            key = self.parse_expression()
            self.expect("colon")
            value = self.parse_expression()
            items.append(_Pair(key, value, lineno=key.lineno))
        self.expect("rbrace")
        return _Dict(items, lineno=token[0])

    def parse_postfix(self, node: nodes.Expr) -> nodes.Expr:
        while True:
            kind = self.toks[self.i][1]
            if kind == "dot" or kind == "lbracket":
                node = self.parse_subscript(node)
            elif kind == "lparen":
                node = self.parse_call(node)
            else:
                return node

    def parse_filter_expr(self, node: nodes.Expr) -> nodes.Expr:
        while True:
            token = self.toks[self.i]
            if token[1] == "pipe":
                node = self.parse_filter(node)
            elif token[1] == "name" and token[2] == "is":
                node = self.parse_test(node)
            elif token[1] == "lparen":
                node = self.parse_call(node)
            else:
                return node

    def parse_subscript(self, node: nodes.Expr) -> nodes.Expr:
        token = self.next()
        if token[1] == "dot":
            attr = self.next()
            if attr[1] == "name":
                return _Getattr(node, attr[2], "load", lineno=token[0])
            if attr[1] != "integer":
                raise Unsupported  # Jinja: expected name or number
            return _Getitem(node, _Const(attr[2], lineno=attr[0]), "load", lineno=token[0])
        args: list[nodes.Expr] = []  # `[`: `parse_postfix` comes here for a dot or a bracket only
        while self.toks[self.i][1] != "rbracket":
            if args:
                self.expect("comma")
            args.append(self.parse_subscribed())
        self.expect("rbracket")
        arg = args[0] if len(args) == 1 else _Tuple(args, "load", lineno=token[0])
        return _Getitem(node, arg, "load", lineno=token[0])

    def parse_subscribed(self) -> nodes.Expr:
        lineno = self.toks[self.i][0]
        args: list[nodes.Expr | None]
        if self.toks[self.i][1] == "colon":
            self.next()
            args = [None]
        else:
            node = self.parse_expression()
            if self.toks[self.i][1] != "colon":
                return node
            self.next()
            args = [node]
        kind = self.toks[self.i][1]
        if kind == "colon":
            args.append(None)
        elif kind not in ("rbracket", "comma"):
            args.append(self.parse_expression())
        else:
            args.append(None)
        if self.toks[self.i][1] == "colon":
            self.next()
            args.append(self.parse_expression() if self.toks[self.i][1] not in ("rbracket", "comma") else None)
        else:
            args.append(None)
        return _Slice(*args, lineno=lineno)

    def parse_call_args(self) -> tuple[list[nodes.Expr], list[nodes.Keyword], nodes.Expr | None, nodes.Expr | None]:
        self.expect("lparen")
        args: list[nodes.Expr] = []
        kwargs: list[nodes.Keyword] = []
        dyn_args: nodes.Expr | None = None
        dyn_kwargs: nodes.Expr | None = None
        require_comma = False
        while self.toks[self.i][1] != "rparen":
            if require_comma:
                self.expect("comma")
                if self.toks[self.i][1] == "rparen":
                    break
            token = self.toks[self.i]
            if token[1] == "mul":
                if dyn_args is not None or dyn_kwargs is not None:
                    raise Unsupported  # Jinja: invalid syntax for a call
                self.next()
                dyn_args = self.parse_expression()
            elif token[1] == "pow":
                if dyn_kwargs is not None:
                    raise Unsupported
                self.next()
                dyn_kwargs = self.parse_expression()
            elif token[1] == "name" and self.look()[1] == "assign":
                if dyn_kwargs is not None:
                    raise Unsupported
                self.next()
                self.next()
                value = self.parse_expression()
                kwargs.append(_Keyword(token[2], value, lineno=value.lineno))
            else:
                if dyn_args is not None or dyn_kwargs is not None or kwargs:
                    raise Unsupported
                args.append(self.parse_expression())
            require_comma = True
        self.expect("rparen")
        return args, kwargs, dyn_args, dyn_kwargs

    def parse_call(self, node: nodes.Expr) -> nodes.Expr:
        lineno = self.toks[self.i][0]
        args, kwargs, dyn_args, dyn_kwargs = self.parse_call_args()
        return _Call(node, args, kwargs, dyn_args, dyn_kwargs, lineno=lineno)

    def parse_test(self, node: nodes.Expr) -> nodes.Expr:
        token = self.next()
        negated = self.skip_if("name", "not")
        name = self.expect("name")[2]
        while self.toks[self.i][1] == "dot":
            self.next()
            name += "." + self.expect("name")[2]
        dyn_args = dyn_kwargs = None
        kwargs: list[nodes.Keyword] = []
        current = self.toks[self.i]
        if current[1] == "lparen":
            args, kwargs, dyn_args, dyn_kwargs = self.parse_call_args()
        elif current[1] in _TEST_ARGUMENT and not (current[1] == "name" and current[2] in ("else", "or", "and")):
            if current[1] == "name" and current[2] == "is":
                raise Unsupported  # Jinja: you cannot chain multiple tests with is
            args = [self.parse_postfix(self.parse_primary())]
        else:
            args = []
        node = _Test(node, name, args, kwargs, dyn_args, dyn_kwargs, lineno=token[0])
        if negated:
            node = _Not(node, lineno=token[0])
        return node
