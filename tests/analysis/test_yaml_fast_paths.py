"""The YAML reader's fast paths give what the general ones give, on hostile and mutated text alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oscova_lsp.analysis import yaml_source
from oscova_lsp.analysis.text import LineIndex
from oscova_lsp.analysis.yaml_source import YamlDocument, _Budget, _Builder, _compose, _Composer, _Loader

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEEDS = [p.read_text() for p in sorted(EXAMPLES.rglob("*.agent.yaml"))]
HOSTILE = [
    "", "---\n", "a\n", "- 1\n- 2\n", "[1, 2, {a: b}]\n", "id: a\nid: b\n", "1: one\n2: two\n1: uno\n",
    "true: t\nyes: y\nTrue: T\nnull: n\n~: tilde\n: empty\n", "? [a, b]\n: complex\n? {x: 1}\n: map\n",
    "a: &x {k: v, j: [1, 2]}\nb: *x\nc: *x\n", "base: &b\n  x: 1\nd:\n  <<: *b\n  y: 3\n",
    "base: &b {x: 1}\nother: &o {z: 2}\nd:\n  <<: [*b, *o]\n", "'<<': {a: 1}\n\"<<\": 2\n<<: {c: 1}\n", "<<: 5\n",
    "a: &a [*a]\n", "a: !!int '12'\nb: !!str 12\nc: !!float 1\nd: !custom x\ne: ! 12\nf: !!bool yes\ng: !!null x\n",
    "a: 0x1F\nb: 017\nc: 1_000\nd: 190:20:30\ne: .inf\nf: -.Inf\ng: .NaN\nh: 1e3\ni: 1.5e+3\nj: +12\nk: 2001-12-14\n",
    "a: =\nb: '='\nc: yes\nd: No\ne: on\nf: OFF\ng: y\nh: Null\ni: NULL\nj: nul\nk: 0b101\nl: 12:30\n",
    "a: |\n  l1\n  l2\nb: >\n  f\nc: |-\n  x\nd: |+\n  y\n\ne: |2\n    indented\n",
    "a: 'q ''x'''\nb: \"d \\\"q\\\" \\n \\x41 \\u00e9 \\U0001F600\"\nc: plain # comment\nd: b\n  c\n",
    "%TAG !e! tag:example.com,2000:\n---\na: !e!foo x\nb: !<tag:yaml.org,2002:int> 3\n", "a: 1\n---\nb: 2\n",
    "a: [1, 2\nb: 3\n", "a: 'open\n", "a: b: c\n", "a: *nowhere\n", "a: &x 1\na: &x 2\nb: *x\n", "&a a: *a\n",
    "a: {x: 1, x: 2}\nb: [{y: 1, y: 2}]\n", "id: é\nname: 😀 Agent\n😀: [é, ü]\n", "a: 1\r\nb: 2\r\n", "a: 1\rb: 2\r",
    "\ufeffid: bom\n", "{[a, b]: c, {d: e}: f}\n", "a: !!set {x, y}\nb: !!omap [x: 1]\nc: !!binary aGk=\n",
    "a: !!int x\nb: !!float y\nc: !!bool TRUE\n",
]
edits = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 8),
                           st.text(alphabet=st.sampled_from("{}[]#:-|>&*!'\"\n \t~,?<=.0123456789yntf") |
                                   st.characters(exclude_categories=("Cs",)), max_size=6)), max_size=10)


def mutate(seed: str, changes: list[tuple[int, int, str]]) -> str:
    for position, delete, insert in changes:
        at = position % (len(seed) + 1)
        seed = seed[:at] + insert + seed[at + delete:]
    return seed


def _tree(node: Any, seen: dict[int, int]) -> Any:
    """A node as plain data: its kind, tag, style, marks and children, an alias as the number of its first place."""
    if node is None:
        return None
    if id(node) in seen:
        return ("alias", seen[id(node)])
    seen[id(node)] = len(seen)
    marks = tuple((m.index, m.line, m.column) for m in (node.start_mark, node.end_mark))
    head = (type(node).__name__, node.tag, marks, getattr(node, "style", None), getattr(node, "flow_style", None))
    if isinstance(node, yaml.ScalarNode):
        return (*head, node.value)
    if isinstance(node, yaml.SequenceNode):
        return (*head, [_tree(item, seen) for item in node.value])
    return (*head, [(_tree(k, seen), _tree(v, seen)) for k, v in node.value])


def _composed(text: str, loader: Any) -> Any:
    try:
        return _tree(yaml.compose(text, Loader=loader), {})
    except (yaml.YAMLError, RecursionError, ValueError) as error:
        return type(error), str(error)


def _same_nodes(text: str) -> None:
    yaml_source._PLAIN_TAGS.clear()
    fresh = _composed(text, _Composer)
    assert fresh == _composed(text, _Loader)
    assert _composed(text, _Composer) == fresh  # and again with the tags remembered


@pytest.mark.parametrize("text", HOSTILE)
def test_composer_gives_the_safe_loaders_nodes(text: str) -> None:
    _same_nodes(text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SEEDS + HOSTILE), edits)
def test_composer_gives_the_safe_loaders_nodes_on_mutated_text(seed: str, changes: list[tuple[int, int, str]]) -> None:
    _same_nodes(mutate(seed, changes))


def test_plain_tags_stay_bounded() -> None:
    yaml_source._PLAIN_TAGS.clear()
    long_value = "y" * (yaml_source._PLAIN_TAG_LENGTH + 1)
    _Composer("").resolve(yaml.ScalarNode, long_value, (True, False))
    assert long_value not in yaml_source._PLAIN_TAGS
    for n in range(yaml_source._PLAIN_TAGS_BOUND + 10):
        assert _Composer("").resolve(yaml.ScalarNode, str(n), (True, False)) == "tag:yaml.org,2002:int"
    assert len(yaml_source._PLAIN_TAGS) <= yaml_source._PLAIN_TAGS_BOUND


def _built(text: str, aliased: bool) -> Any:
    doc = YamlDocument(text=text, lines=LineIndex(text))
    try:
        node = _compose(text)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    try:
        value = _Builder(doc, aliased).build(node, (), None, 0) if node is not None else None
    except _Budget as budget:
        return str(budget)
    return repr(value), repr(doc.spans), repr(doc.problems)


def _same_tree(text: str) -> None:
    if "&" not in text:  # with an anchor, a node may be reached twice: the bookkeeping is not optional
        assert _built(text, aliased=False) == _built(text, aliased=True)


@pytest.mark.parametrize("text", HOSTILE)
def test_a_text_without_anchors_builds_the_same_without_alias_bookkeeping(text: str) -> None:
    _same_tree(text)
    _same_tree(text.replace("&", "_"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SEEDS + HOSTILE), edits)
def test_a_mutated_text_builds_the_same_without_alias_bookkeeping(seed: str,
                                                                  changes: list[tuple[int, int, str]]) -> None:
    _same_tree(mutate(seed, changes).replace("&", "_"))


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="a pure-Python PyYAML build")
def test_libyaml_reads_the_text_when_pyyaml_has_it() -> None:
    # The pure-Python loader counts marks differently (a BOM is one more character): falling back silently would
    # move every span of a file that starts with one.
    assert _Loader is yaml.CSafeLoader
    assert isinstance(_Composer(""), yaml.cyaml.CParser)


@pytest.mark.parametrize("text", ["a: [yes, No, ON, off, y, n, !!bool True, !!bool FALSE]\n", "a: !!bool maybe\n"])
def test_flags_read_as_the_safe_constructor_reads_them(text: str) -> None:
    try:
        expected: Any = yaml.load(text, Loader=_Loader)
    except KeyError as error:  # a `!!bool` the constructor does not know fails alike
        with pytest.raises(KeyError, match=str(error)):
            yaml_source.parse_yaml(text)
        return
    assert yaml_source.parse_yaml(text).value == expected
