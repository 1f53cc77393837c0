"""No input makes the engine raise or hang: random and mutated YAML, TOML and Jinja text."""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oscova_lsp.analysis.engine import Analysis
from oscova_lsp.analysis.files import parse_definition, parse_host, parse_template
from oscova_lsp.analysis.jinja_source import analyze_template

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEEDS = {
    "definition": [p.read_text() for p in sorted(EXAMPLES.rglob("*.agent.yaml"))],
    "template": [p.read_text() for p in sorted(EXAMPLES.rglob("*.j2"))],
    "host": [(EXAMPLES / "oscova.toml").read_text(), (EXAMPLES / "broken/oscova.toml").read_text()],
}
SYNTAX = "{}[]%#:-|>&*!'\"\n \t~,?<=.()"


def mutate(seed: str, edits: list[tuple[int, int, str]]) -> str:
    text = seed
    for position, delete, insert in edits:
        if not text:
            return insert
        at = position % (len(text) + 1)
        text = text[:at] + insert + text[at + delete:]
    return text


def _edits(characters: st.SearchStrategy[str]) -> st.SearchStrategy[list[tuple[int, int, str]]]:
    return st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 8),
                              st.text(alphabet=st.sampled_from(SYNTAX) | characters, max_size=6)), max_size=12)


edits = _edits(st.characters())
# What a file can hold: no lone surrogates (UTF-8 cannot encode them, so writing one fails in the test,
# not in the product).
file_edits = _edits(st.characters(exclude_categories=["Cs"]))
FAST = settings(max_examples=150, deadline=2000, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.sampled_from(SEEDS["definition"]), edits)
def test_mutated_definitions_never_raise(seed: str, changes: list[tuple[int, int, str]]) -> None:
    parse_definition("x.agent.yaml", mutate(seed, changes))


@FAST
@given(st.sampled_from(SEEDS["template"]), edits)
def test_mutated_templates_never_raise(seed: str, changes: list[tuple[int, int, str]]) -> None:
    facts = analyze_template(mutate(seed, changes))
    text = facts.text
    for use in facts.free_uses:  # every reported position holds the variable's name
        assert text[use.offset:use.offset + len(use.name)] == use.name


@FAST
@given(st.sampled_from(SEEDS["host"]), edits)
def test_mutated_host_configuration_never_raises(seed: str, changes: list[tuple[int, int, str]]) -> None:
    parse_host("oscova.toml", mutate(seed, changes))


@FAST
@given(st.text(max_size=400))
def test_random_text_never_raises(text: str) -> None:
    parse_definition("x.agent.yaml", text)
    parse_template("x.j2", text)
    parse_host("oscova.toml", text)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.sampled_from(SEEDS["definition"]), st.sampled_from(SEEDS["template"]), st.sampled_from(SEEDS["host"]),
       file_edits)
def test_whole_workspace_with_mutated_files_never_raises(tmp_path_factory, definition: str, template: str,
                                                         host: str, changes: list[tuple[int, int, str]]) -> None:
    root = tmp_path_factory.mktemp("ws")
    (root / "oscova.toml").write_text(mutate(host, changes[:3]), encoding="utf-8")
    (root / "a.agent.yaml").write_text(mutate(definition, changes[3:6]), encoding="utf-8")
    (root / "t.j2").write_text(mutate(template, changes[6:]), encoding="utf-8")
    analysis = Analysis(str(root))
    analysis.load(jobs=1)
    for path in analysis.workspace.files:
        analysis.diagnostics(path)
    analysis.update(str(root / "a.agent.yaml"), mutate(definition, changes))
    for path in analysis.workspace.files:
        analysis.diagnostics(path)


HANG_GUARD = 30.0
"""Seconds a hostile document may take to parse here: a bound against blow-ups (an expanded alias bomb takes
minutes), not a speed budget; that (under 1 s) is measured by benchmarks/responsiveness_bench.py `yaml`."""


def _osc001_without_blowing_up(text: str) -> str:
    start = time.perf_counter()
    parsed = parse_definition("x.agent.yaml", text)
    elapsed = time.perf_counter() - start
    assert elapsed < HANG_GUARD, f"took {elapsed:.2f}s"
    problems = [p for p in parsed.problems if p.code == "OSC001"]
    assert problems, parsed.problems
    return problems[0].message


def test_alias_bomb_is_osc001() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        prev, name = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    assert "alias" in _osc001_without_blowing_up("id: x\n" + "\n".join(lines) + "\n")


def test_recursive_alias_is_osc001() -> None:
    _osc001_without_blowing_up("id: x\nchat_options: &a\n  self: *a\n")


def test_200_levels_of_block_nesting_is_osc001() -> None:
    text = "id: x\nchat_options:\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(200)) + " " * 201 + "v\n"
    assert "nests deeper" in _osc001_without_blowing_up(text)


def test_200_levels_of_flow_nesting_is_osc001() -> None:
    assert "nests deeper" in _osc001_without_blowing_up("id: x\nchat_options: {a: " + "[" * 200 + "]" * 200 + "}\n")
    assert "nests deeper" in _osc001_without_blowing_up("[" * 100_000)


def test_deeply_nested_jinja_does_not_raise() -> None:
    facts = analyze_template("{{ " + "(" * 2000 + "x" + ")" * 2000 + " }}")
    assert facts.syntax_error is not None or facts.free_uses
    facts = analyze_template("{% if a %}" * 500 + "{% endif %}" * 500)
    assert facts is not None
