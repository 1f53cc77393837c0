"""Jinja's parser, over a list of tokens: the tree `jinja2.parser.Parser.subparse` builds from the same tokens,
node for node and line for line, in less than half its time. Each method is Jinja's of the same name; the token
stream and the expressions are `jinja_expressions`'.

Where Jinja's parser would fail, or a construct is left to it (an extension's tag, `autoescape`), `Unsupported`
is raised and the caller asks Jinja: its error is its own to word. `tests/analysis/test_jinja_parser.py`
compares the trees, every node's line included, with Jinja's on every template of the repository and on
generated templates."""

from __future__ import annotations

from typing import Any

from jinja2 import nodes

from .jinja_expressions import NOT_PLAIN, ExpressionParser, Unsupported, node_maker

_Assign = node_maker(nodes.Assign)
_AssignBlock = node_maker(nodes.AssignBlock)
_Block = node_maker(nodes.Block)
_CallBlock = node_maker(nodes.CallBlock)
_Extends = node_maker(nodes.Extends)
_FilterBlock = node_maker(nodes.FilterBlock)
_For = node_maker(nodes.For)
_FromImport = node_maker(nodes.FromImport)
_If = node_maker(nodes.If)
_Import = node_maker(nodes.Import)
_Include = node_maker(nodes.Include)
_Macro = node_maker(nodes.Macro)
_Name = node_maker(nodes.Name)
_Output = node_maker(nodes.Output)
_TemplateData = node_maker(nodes.TemplateData)
_With = node_maker(nodes.With)

_NOT_ASSIGNABLE = frozenset({"true", "false", "none", "True", "False", "None"})
_STATEMENTS = {**{tag: "parse_" + tag for tag in ("for", "if", "block", "extends", "print", "macro", "include", "from",
                                                  "import", "set", "with")},
               "call": "parse_call_block", "filter": "parse_filter_block"}
"""The tags parsed here, each by its method (`autoescape` and unknown tags are left to Jinja)."""


def parse_tokens(tokens: list[tuple[int, str, Any]]) -> list[nodes.Node]:
    """The body of the template whose tokens these are, as Jinja's `Parser.subparse()` makes it."""
    return _Parser(tokens).subparse(None)


class _Parser(ExpressionParser):
    __slots__ = ()

    # Statements

    def subparse(self, end_names: tuple[str, ...] | None) -> list[nodes.Node]:
        body: list[nodes.Node] = []
        data: list[nodes.Node] = []
        toks = self.toks
        while True:
            token = toks[self.i]
            kind = token[1]
            if kind == "data":
                if token[2]:
                    data.append(_TemplateData(token[2], lineno=token[0]))
                self.i += 1
            elif kind == "variable_begin":
                current = toks[self.i + 1]
                if current[1] == "name" and toks[self.i + 2][1] == "variable_end" and current[2] not in NOT_PLAIN:
                    # One variable alone (`{{ name }}`), the commonest output: the node `parse_tuple` makes of it.
                    data.append(_Name(current[2], "load", lineno=current[0]))
                    self.i += 3
                    continue
                self.i += 1
                data.append(self.parse_tuple(with_condexpr=True))
                self.expect("variable_end")
            elif kind == "block_begin":
                if data:
                    body.append(_Output(data, lineno=data[0].lineno))
                    data = []
                self.i += 1
                current = toks[self.i]
                if end_names is not None and current[1] == "name" and current[2] in end_names:
                    return body
                body.append(self.parse_statement())
                self.expect("block_end")
            elif kind == "eof":
                break
            else:
                raise Unsupported  # Jinja: "internal parsing error"
        if data:
            body.append(_Output(data, lineno=data[0].lineno))
        return body

    def parse_statement(self) -> nodes.Node:
        token = self.toks[self.i]
        if token[1] != "name" or token[2] not in _STATEMENTS:
            raise Unsupported
        method: Any = getattr(self, _STATEMENTS[token[2]])
        node: nodes.Node = method()
        return node

    def parse_statements(self, end_names: tuple[str, ...], drop_needle: bool = False) -> list[nodes.Node]:
        self.skip_if("colon")
        self.expect("block_end")
        result = self.subparse(end_names)
        if self.toks[self.i][1] == "eof":
            raise Unsupported  # Jinja: unexpected end of template
        if drop_needle:
            self.next()
        return result

    def parse_set(self) -> nodes.Node:
        lineno = self.next()[0]
        target = self.parse_assign_target(with_namespace=True)
        if self.skip_if("assign"):
            return _Assign(target, self.parse_tuple(), lineno=lineno)
        filter_node = self.parse_filter(None)
        body = self.parse_statements(("endset",), drop_needle=True)
        return _AssignBlock(target, filter_node, body, lineno=lineno)

    def parse_for(self) -> nodes.Node:
        lineno = self.expect("name", "for")[0]
        target = self.parse_assign_target(extra_end_rules=("in",))
        self.expect("name", "in")
        iter_ = self.parse_tuple(with_condexpr=False, extra_end_rules=("recursive",))
        test = None
        if self.skip_if("name", "if"):
            test = self.parse_expression()
        recursive = self.skip_if("name", "recursive")
        body = self.parse_statements(("endfor", "else"))
        if self.next()[2] == "endfor":
            else_ = []
        else:
            else_ = self.parse_statements(("endfor",), drop_needle=True)
        return _For(target, iter_, body, else_, test, recursive, lineno=lineno)

    def parse_if(self) -> nodes.Node:
        node = result = _If(lineno=self.expect("name", "if")[0])
        while True:
            node.test = self.parse_tuple(with_condexpr=False)
            node.body = self.parse_statements(("elif", "else", "endif"))
            node.elif_ = []
            node.else_ = []
            token = self.next()
            if token[1] == "name" and token[2] == "elif":
                node = _If(lineno=self.toks[self.i][0])
                result.elif_.append(node)
                continue
            if token[1] == "name" and token[2] == "else":
                result.else_ = self.parse_statements(("endif",), drop_needle=True)
            break
        return result

    def parse_with(self) -> nodes.Node:
        node = _With(lineno=self.next()[0])
        targets: list[nodes.Expr] = []
        values: list[nodes.Expr] = []
        while self.toks[self.i][1] != "block_end":
            if targets:
                self.expect("comma")
            target = self.parse_assign_target()
            target.set_ctx("param")
            targets.append(target)
            self.expect("assign")
            values.append(self.parse_expression())
        node.targets = targets
        node.values = values
        node.body = self.parse_statements(("endwith",), drop_needle=True)
        return node

    def parse_block(self) -> nodes.Node:
        node = _Block(lineno=self.next()[0])
        node.name = self.expect("name")[2]
        node.scoped = self.skip_if("name", "scoped")
        node.required = self.skip_if("name", "required")
        if self.toks[self.i][1] == "sub":
            raise Unsupported  # Jinja: a block name with a hyphen
        node.body = self.parse_statements(("endblock",), drop_needle=True)
        if node.required and any(not isinstance(body_node, nodes.Output) or any(
                not isinstance(output_node, nodes.TemplateData) or not output_node.data.isspace()
                for output_node in body_node.nodes) for body_node in node.body):
            raise Unsupported  # Jinja: a required block holds more than whitespace
        self.skip_if("name", node.name)
        return node

    def parse_extends(self) -> nodes.Node:
        node = _Extends(lineno=self.next()[0])
        node.template = self.parse_expression()
        return node

    def parse_import_context(self, node: nodes.Include | nodes.Import, default: bool) -> nodes.Node:
        token = self.toks[self.i]
        if token[1] == "name" and token[2] in ("with", "without") and self.look()[1:] == ("name", "context"):
            node.with_context = self.next()[2] == "with"
            self.next()
        else:
            node.with_context = default
        return node

    def parse_include(self) -> nodes.Node:
        node = _Include(lineno=self.next()[0])
        node.template = self.parse_expression()
        if self.is_name("ignore") and self.look()[1:] == ("name", "missing"):
            node.ignore_missing = True
            self.next()
            self.next()
        else:
            node.ignore_missing = False
        return self.parse_import_context(node, True)

    def parse_import(self) -> nodes.Node:
        node = _Import(lineno=self.next()[0])
        node.template = self.parse_expression()
        self.expect("name", "as")
        node.target = self.parse_name_target().name
        return self.parse_import_context(node, False)

    def parse_from(self) -> nodes.Node:
        node = _FromImport(lineno=self.next()[0])
        node.template = self.parse_expression()
        self.expect("name", "import")
        node.names = []

        def parse_context() -> bool:
            if self.toks[self.i][2] in ("with", "without") and self.look()[1:] == ("name", "context"):
                node.with_context = self.next()[2] == "with"
                self.next()
                return True
            return False

        while True:
            if node.names:
                self.expect("comma")
            if self.toks[self.i][1] != "name":
                raise Unsupported
            if parse_context():
                break
            target = self.parse_name_target()
            if target.name.startswith("_"):
                raise Unsupported  # Jinja: names starting with an underline cannot be imported
            if self.skip_if("name", "as"):
                node.names.append((target.name, self.parse_name_target().name))
            else:
                node.names.append(target.name)
            if parse_context() or self.toks[self.i][1] != "comma":
                break
        if not hasattr(node, "with_context"):
            node.with_context = False
        return node

    def parse_signature(self, node: nodes.Macro | nodes.CallBlock) -> None:
        args: list[nodes.Name] = []
        defaults: list[nodes.Expr] = []
        node.args = args
        node.defaults = defaults
        self.expect("lparen")
        while self.toks[self.i][1] != "rparen":
            if args:
                self.expect("comma")
            arg = self.parse_name_target()
            arg.set_ctx("param")
            if self.skip_if("assign"):
                defaults.append(self.parse_expression())
            elif defaults:
                raise Unsupported  # Jinja: a non-default argument follows a default argument
            args.append(arg)
        self.expect("rparen")

    def parse_call_block(self) -> nodes.Node:
        node = _CallBlock(lineno=self.next()[0])
        if self.toks[self.i][1] == "lparen":
            self.parse_signature(node)
        else:
            node.args = []
            node.defaults = []
        call_node = self.parse_expression()
        if not isinstance(call_node, nodes.Call):
            raise Unsupported  # Jinja: expected call
        node.call = call_node
        node.body = self.parse_statements(("endcall",), drop_needle=True)
        return node

    def parse_filter_block(self) -> nodes.Node:
        node = _FilterBlock(lineno=self.next()[0])
        node.filter = self.parse_filter(None, start_inline=True)
        node.body = self.parse_statements(("endfilter",), drop_needle=True)
        return node

    def parse_macro(self) -> nodes.Node:
        node = _Macro(lineno=self.next()[0])
        node.name = self.parse_name_target().name
        self.parse_signature(node)
        node.body = self.parse_statements(("endmacro",), drop_needle=True)
        return node

    def parse_print(self) -> nodes.Node:
        node = _Output(lineno=self.next()[0])
        node.nodes = []
        while self.toks[self.i][1] != "block_end":
            if node.nodes:
                self.expect("comma")
            node.nodes.append(self.parse_expression())
        return node

    def parse_name_target(self) -> nodes.Name:  # Jinja's `parse_assign_target(name_only=True)`
        token = self.expect("name")
        if token[2] in _NOT_ASSIGNABLE:
            raise Unsupported  # Jinja: can't assign to it
        return _Name(token[2], "store", lineno=token[0])

    def parse_assign_target(self, extra_end_rules: tuple[str, ...] | None = None,
                            with_namespace: bool = False) -> nodes.Expr:
        target = self.parse_tuple(simplified=True, extra_end_rules=extra_end_rules, with_namespace=with_namespace)
        target.set_ctx("store")
        if not target.can_assign():
            raise Unsupported  # Jinja: can't assign to it
        return target
