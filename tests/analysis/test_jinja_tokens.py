"""The checker's tokenizer of Jinja templates (`jinja_parse.tokens`) makes exactly the tokens of Jinja's own
lexer, line numbers and value types included, or leaves the template to it; and its parser (`parse`) makes
Jinja's tree, or fails with Jinja's error: on every template of the repository and on generated fragments of
Jinja's syntax, well-formed or not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2 import Environment, TemplateSyntaxError
from oscova_lsp.analysis import jinja_parse

ROOT = Path(__file__).resolve().parents[2]
JINJA = Environment(autoescape=False)

FRAGMENTS = ["{{", "}}", "{%", "%}", "{#", "#}", "{{-", "-}}", "{%-", "-%}", "{%+", "+%}", "{#-", "-#}", "-", "+",
             " ", "  ", "\n", "\t", "x", "user_name", "if", "endif", "for", "in", "endfor", "set", "=", "==", "'a'",
             '"b\\n"', "'\\x41'", "'\\N{'", "1", "1.5", "1e3", "0x1f", "0b2", "1_000", "07", ".5", "(", ")", "[", "]",
             "{", "}", ",", ".", "|", ":", "~", "*", "**", "//", "raw", "endraw", "é", "ñame", "·", "\u0660", "\r",
             "\u00a0", "include", "macro", "call", "not", "is", "defined", "$", "?", "\\", "text ", ".\n", "true",
             "None", "recursive", "ns", "with", "endwith", "else", "elif", "block", "endblock"]


def jinja_tokens(source: str) -> list[tuple[int, str, Any, type]] | None:
    """Jinja's own tokens, or None where its lexer raises (a number Python cannot read raises SyntaxError)."""
    try:
        return [(t.lineno, t.type, t.value, type(t.value)) for t in JINJA.lexer.tokenize(source)]
    except (TemplateSyntaxError, SyntaxError, ValueError):
        return None


def ours(source: str) -> list[tuple[int, str, Any, type]] | None:
    found = jinja_parse.tokens(source)
    return None if found is None else [(t.lineno, t.type, t.value, type(t.value)) for t in found]


def described(outcome: Any) -> str:
    """A tree as text, or an error's kind, line and message."""
    if isinstance(outcome, Exception):
        return f"{type(outcome).__name__} {getattr(outcome, 'lineno', None)} {getattr(outcome, 'message', outcome)}"
    return repr(outcome)


def jinja_tree(source: str) -> str:
    try:
        return described(JINJA.parse(source))
    except Exception as error:  # noqa: BLE001
        return described(error)


def agrees(source: str) -> bool:
    """Ours is Jinja's, or ours leaves the template to Jinja; whether ours made them. The trees too."""
    made = ours(source)
    if made is not None:
        assert made == jinja_tokens(source), repr(source)
    assert described(jinja_parse.parse(source)) == jinja_tree(source), repr(source)
    return made is not None


def test_every_template_of_the_repository():
    templates = [p for p in ROOT.rglob("*.j2") if ".venv" not in p.parts and "node_modules" not in p.parts]
    assert len(templates) >= 20
    made = sum(agrees(p.read_text(errors="replace")) for p in templates)
    assert made >= len(templates) * 0.9  # only a few are left to Jinja (`raw`, CR line breaks, errors)


def test_the_benchmarks_template_and_examples_of_each_construct():
    sys_path = ROOT / "benchmarks"
    import sys

    sys.path.insert(0, str(sys_path))
    from workspace_gen import TEMPLATE

    for source in [TEMPLATE.format(partial=1, extra="x"), "", "\n", "text\n\n", "{{ a }}\n", "{{ a -}}  \n  b",
                   "a  {{- b }}", "{# c\n #}\n{{ d }}", "{#- c -#}  x", "{% if a %}\n{% endif %}", "{{ {'a': [1, (2)]} }}",
                   "{{ 'it''s' }}", "{{ \"a\\tb\" }}", "{% set x = 1.5e3 + 0x1F - 1_0 %}", "{{ a.b[c](d=1) | e(f) }}",
                   "{% for x in y -%}\n {{ x }}\n{%- endfor %}", "{{ x }}{{ y }}", "{{ x", "{% if %}", "{{ }} }}",
                   "{{ not }}", "{{ true }}", "{% for x in recursive %}{% endfor %}", "{{ in }}", "{% if if %}",
                   "{% for x in y recursive %}{{ loop(x) }}{% endfor %}", "{% set ns.a = b %}"]:
        assert agrees(source) or jinja_tokens(source) is None or "raw" in source or "\r" in source


def test_regions_on_one_line_near_the_first_closer():
    """The regions taken in one match up to their first closer (`_plain_code`), and those it leaves to the general
    way: a closer inside a string or a bracket, a sign before the closer, numbers, names going on in other scripts."""
    for source in ["{% set x = 'a%}b' %}", '{{ "}}" }}', "{{ {'a': 1}}}", "{{ {'a': 1} }}", "{{ a }}}", "{{ a -}}\n b",
                   "{{ x +}}", "{% x +%}", "{%-%}", "{{ a --}}", "{% a %%}", "{{ f(a, [b, 'c'], d=0) | g }}", "{{ 00 }}",
                   "{{ 12 }}", "{{ 1.x }}", "{{ 1e3 }}", "{{ x.0 }}", "{{ aé }}", "{{ a\u00a0}}", "{{ a\tb }}",
                   "{{ a ]}}", "{{ (a }}", "{{ a\n}}", "{% if a == 'b' and c != d %}{% endif %}", "{{ a // b ** c }}"]:
        assert agrees(source) or jinja_tokens(source) is None


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40))
def test_generated_fragments(parts: list[str]):
    agrees("".join(parts))


def test_the_trees_are_jinjas():
    """With those tokens, Jinja's parser builds the tree `Environment.parse` builds (nodes compared as dumped)."""
    source = (ROOT / "benchmarks" / "workspace_gen.py").read_text().split('TEMPLATE = """\\\n')[1].split('"""')[0]
    source = source.format(partial=0, extra="z").replace("{{{{", "{{").replace("}}}}", "}}")
    ours_tree = jinja_parse.parse(source)
    assert repr(ours_tree) == repr(JINJA.parse(source))
