"""The checker's parser of Jinja's tokens (`jinja_parser.parse_tokens`) builds exactly the tree Jinja's own parser
builds, every node's fields and line included, or leaves the template to Jinja (`Unsupported`) where Jinja fails
or the construct is left to it: on every template of the repository and on generated templates, well-formed or
not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2 import Environment, nodes
from oscova_lsp.analysis import jinja_parse
from oscova_lsp.analysis.jinja_parser import Unsupported, parse_tokens

from .test_jinja_tokens import FRAGMENTS

ROOT = Path(__file__).resolve().parents[2]
JINJA = Environment(autoescape=False)


def dump(node: Any) -> Any:
    """A node as nested tuples: its type, line and every field (what `repr` leaves out, the lines, included)."""
    if isinstance(node, nodes.Node):
        return (type(node).__name__, node.lineno, *((name, dump(getattr(node, name, "<unset>")))
                                                    for name in node.fields))
    if isinstance(node, list | tuple):
        return type(node).__name__, *(dump(item) for item in node)
    return type(node).__name__, node


def jinjas(source: str) -> Any:
    """Jinja's tree as dumped, or None where Jinja fails."""
    try:
        return dump(JINJA.parse(source).body)
    except Exception:  # noqa: BLE001
        return None


def agrees(source: str) -> bool:
    """Ours is Jinja's tree, or ours leaves the template to Jinja (always where Jinja fails); whether ours made it."""
    made = jinja_parse.token_tuples(source)
    if made is None:
        return False
    expected = jinjas(source)
    try:
        ours = dump(parse_tokens(made))
    except Unsupported:
        assert expected is None or "autoescape" in source, repr(source)
        return False
    assert ours == expected, repr(source)
    return True


def test_every_template_of_the_repository():
    templates = [p for p in ROOT.rglob("*.j2") if ".venv" not in p.parts and "node_modules" not in p.parts]
    assert len(templates) >= 20
    made = sum(agrees(p.read_text(errors="replace")) for p in templates)
    assert made >= len(templates) * 0.9


CONSTRUCTS = [
    "{{ a }}", "{{ a.b }}", "{{ a[0] }}", "{{ a.0 }}", "{{ a[1:2] }}", "{{ a[::2] }}", "{{ a[:] }}", "{{ a[b, c] }}",
    "{{ a(b, c=1, *d, **e) }}", "{{ a | f }}", "{{ a | f(1) | g.h }}", "{{ a is defined }}", "{{ a is not none }}",
    "{{ a is divisibleby 3 }}", "{{ a is sameas b.c }}", "{{ a is eq(1) }}", "{{ not a }}", "{{ not not a }}",
    "{{ a and b or c }}", "{{ a or b and not c }}", "{{ a == b }}", "{{ a < b <= c }}", "{{ a in b }}",
    "{{ a not in b }}", "{{ a + b - c }}", "{{ a ~ b ~ c }}", "{{ a * b / c // d % e }}", "{{ a ** b ** c }}",
    "{{ -a }}", "{{ +a.b }}", "{{ - a | f }}", "{{ a if b }}", "{{ a if b else c }}", "{{ a if b else c if d else e }}",
    "{{ (a, b) }}", "{{ () }}", "{{ (a) }}", "{{ a, b }}", "{{ [a, b,] }}", "{{ {'a': 1, b: c,} }}", "{{ 'a' 'b' }}",
    "{{ true }}", "{{ None }}", "{{ 1.5e3 }}", "{{ a\n.\nb\n(\nc\n) }}", "{{ a\n+\nb\n*\nc }}", "{{ a\nif\nb\nelse\nc }}",
    "{% if a %}x{% elif b %}y{% else %}z{% endif %}", "{% if a, b %}{% endif %}", "{% for a in b %}{% endfor %}",
    "{% for a, b in c if a recursive %}{{ loop(a) }}{% else %}e{% endfor %}", "{% for a in b, c %}{% endfor %}",
    "{% set a = 1 %}", "{% set a, b = c %}", "{% set (a, b) = c %}", "{% set ns.a = 1 %}", "{% set a %}x{% endset %}",
    "{% set a | upper %}x{% endset %}", "{% macro m(a, b=1) %}{{ a }}{% endmacro %}", "{% macro m() %}{% endmacro %}",
    "{% call m(1) %}x{% endcall %}", "{% call(a, b=2) m(1) %}{{ a }}{% endcall %}", "{% filter upper | trim %}x{% endfilter %}",
    "{% include 'a' %}", "{% include ['a', b] ignore missing without context %}", "{% include 'a' with context %}",
    "{% import 'a' as b %}", "{% import 'a' as b with context %}", "{% from 'a' import b, c as d %}",
    "{% from 'a' import b with context %}", "{% from 'a' import b, %}", "{% extends 'a' %}",
    "{% block a %}x{% endblock %}", "{% block a scoped required %} {% endblock a %}", "{% with a = 1, b = a %}{% endwith %}",
    "{% print a, b %}", "{% autoescape true %}x{% endautoescape %}", "{% if a: %}{% endif %}", "a\n{{ b }}\n{# c #}\nd",
    "{%- if a -%}\n  x\n{%- endif %}", "{% raw %}{{ a }}{% endraw %}", "{% for true in a %}{% endfor %}",
    "{% macro true() %}{% endmacro %}", "{% import 'a' as none %}", "{% from 'a' import _b %}", "{% macro m(a=1, b) %}",
    "{% call m %}{% endcall %}", "{% block a-b %}{% endblock %}", "{% block a required %}x{% endblock %}", "{{ a is is b }}",
    "{{ a(b=1, c) }}", "{{ a(*b, *c) }}", "{{ a(**b, c=1) }}", "{{ a.'b' }}", "{% set 1 = a %}", "{% do a %}", "{% if a %}",
    "{% endif %}", "{{ }}", "{% %}", "{{ a b }}", "{% for a in %}{% endfor %}", "{% set a = %}", "{{ a | 1 }}", "{{ (a }}",
    "{{ a[ }}", "{% from 'a' import 1 %}", "{% from 'a' import b c %}", "{% include 'a' ignore %}", "{{ a if }}", "{{ a.b. }}",
    "{% break %}", "{% for a in b %}{% break %}{% endfor %}", "{% with %}{% endwith %}", "{% with a.b = 1 %}{% endwith %}",
    "{{ not a == b }}", "{{ not a.b | f }}", "{{ not -a }}", "{{ not\nnot\na }}", "{{ not a if b else c }}",
    "{{ not a and b }}", "{{ not in }}", "{{ not a not in b }}", "{{ not (a) }}", "{{ not a is b }}", "{{ not }}",
    "{{ 'é ü' }}", "{{ 'a\\nb' }}", "{{ \"\\u00e9\" ~ 'x' }}", "{{ 'a\nb' }}", "{{ '\\N{BULLET}' }}",
]


def test_each_construct_and_each_mistake():
    made = [source for source in CONSTRUCTS if agrees(source)]
    assert len(made) >= len(CONSTRUCTS) // 2
    assert agrees("{{ a }}\n{% if b %}\n{{ c }}\n{% endif %}\n")


def test_the_benchmarks_template():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from workspace_gen import TEMPLATE

    assert agrees(TEMPLATE.format(partial=1, extra="x"))


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS + ["{{ a", "}}\n", "{% if a %}", "{% endif %}", "{% for x in y %}",
                                             "{% endfor %}", "(", ")", "a | b", "is", "and", "not in", "if", "else"]),
                max_size=40))
def test_generated_fragments(parts: list[str]):
    agrees("".join(parts))


_NAMES = st.sampled_from(["a", "b", "loop", "x", "none", "true", "in", "is", "if"])
_ATOMS = st.one_of(_NAMES, st.sampled_from(["1", "2.5", "'s'", '"t" "u"', "[]", "{}", "()", "[a, 1]", "{'k': v}"]))


def _expressions() -> st.SearchStrategy[str]:
    return st.recursive(_ATOMS, lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from([" + ", " - ", " * ", " / ", " // ", " % ", " ** ", " ~ ", " and ", " or ",
                                          " == ", " != ", " < ", " >= ", " in ", " not in ", "\n"]), inner).map("".join),
        st.tuples(st.sampled_from(["not ", "-", "+", "(", "["]), inner, st.sampled_from(["", ")", "]"])).map("".join),
        st.tuples(inner, st.sampled_from([".b", "[0]", "[1:]", "(x)", "(k=1)", " | f", " | f(1)", " is defined",
                                          " is not none", " is eq 1", " is eq(1)"])).map("".join),
        st.tuples(inner, st.just(" if "), inner, st.sampled_from(["", " else "]), inner).map("".join),
        st.tuples(inner, st.just(", "), inner).map("".join)), max_leaves=8)


_TAGS = st.sampled_from(["{{ %s }}", "{%% if %s %%}x{%% endif %%}", "{%% for a in %s %%}{{ a }}{%% endfor %%}",
                         "{%% set a = %s %%}", "{%% include %s %%}", "{%% macro m(a=%s) %%}{%% endmacro %%}",
                         "{%% with a = %s %%}{%% endwith %%}", "{%% if a %%}{%% elif %s %%}\n{%% endif %%}"])


@settings(max_examples=800, deadline=None)
@given(st.lists(st.tuples(_TAGS, _expressions()), min_size=1, max_size=4))
def test_generated_expressions(parts: list[tuple[str, str]]):
    agrees("\n".join(tag % expr for tag, expr in parts))


def test_the_walks_child_nodes_are_jinjas():
    """`jinja_truth.children`, which the scope walk and the proofs use, lists `iter_child_nodes()` of every node."""
    from oscova_lsp.analysis.jinja_truth import children

    sources = [p.read_text(errors="replace") for p in ROOT.rglob("*.j2")
               if ".venv" not in p.parts and "node_modules" not in p.parts]
    seen = 0
    for source in [*sources, *CONSTRUCTS]:
        tree = jinja_parse.parse(source)
        if isinstance(tree, nodes.Template):
            for node in [tree, *tree.find_all(nodes.Node)]:
                assert [id(child) for child in children(node)] == [id(child) for child in node.iter_child_nodes()]
                seen += 1
    assert seen > 500
