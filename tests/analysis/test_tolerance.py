"""Parsing never fails: a broken construct costs its own line, never the diagnostics of the others.

Templates report every syntax error with its own range and still get the checks of docs/rules.md on the rest;
definitions and the host configuration keep what can be read, and other files see a file's last good facts
while nothing of it can be read.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oscova_lsp.analysis.diagnostics import Diagnostic
from oscova_lsp.analysis.engine import Analysis
from oscova_lsp.analysis.jinja_recovery import parse_tolerant
from oscova_lsp.analysis.jinja_source import analyze_template

from .support import BASE_HOST, make_workspace, strip_marks

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _codes_at(diagnostics: list[Diagnostic], code: str) -> list[tuple[int, int, int, int]]:
    return [(d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
            for d in diagnostics if d.code == code]


def _ranges(marks: list) -> list[tuple[int, int, int, int]]:  # noqa: ANN001 - Range list
    return [(r.start.line, r.start.character, r.end.line, r.end.character) for r in marks]


# ------------------------------------------------------------------------------------------- templates


LOCAL_HOST = BASE_HOST + 'base_url = "http://127.0.0.1:8080/v1"\n'
"""A local model: it caches any prefix, so `current_time` in instructions is reported (OSC102) however short."""


def test_every_syntax_error_is_reported_with_its_own_range(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, host=LOCAL_HOST, files={
        "a.agent.yaml": "id: a\ninstructions_file: t.j2\n",
        "t.j2": """\
            Hello {{ ⟨region⟩ }}.
            ⟨{{ agent_name | }}⟩ and ⟨{% for x in %}⟩
            {{ user_name }} at {{ ⟨current_time⟩ }}
            ⟨{% endif %}⟩
            Sign as ⟨{{ agent_name |⟩
            """,
    })
    marks = ws.marked("t.j2")
    diagnostics = ws.diagnostics("t.j2")
    assert _codes_at(diagnostics, "OSC100") == _ranges([marks[1], marks[2], marks[4], marks[5]])
    # The checks of docs/rules.md still run on the rest of the template.
    assert _codes_at(diagnostics, "OSC101") == _ranges([marks[0]])
    assert _codes_at(diagnostics, "OSC102") == _ranges([marks[3]])


def test_an_unclosed_block_is_reported_at_its_opener(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ninstructions_file: t.j2\n",
        "t.j2": """\
            {% if user_name %}
            ⟨{% for item in items %}⟩
            {{ ⟨zone⟩ }}
            {% endif %}
            """,
    })
    marks = ws.marked("t.j2")
    assert _codes_at(ws.diagnostics("t.j2"), "OSC100") == _ranges([marks[0]])
    assert _codes_at(ws.diagnostics("t.j2"), "OSC101") == _ranges([marks[1]])


def test_a_broken_opener_takes_its_end_tag_along(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ninstructions_file: t.j2\n",
        "t.j2": "⟨{% if %}⟩\nHi {{ ⟨zone⟩ }}\n{% endif %}\n",
    })
    marks = ws.marked("t.j2")
    assert _codes_at(ws.diagnostics("t.j2"), "OSC100") == _ranges([marks[0]])
    assert _codes_at(ws.diagnostics("t.j2"), "OSC101") == _ranges([marks[1]])


def test_includes_of_a_broken_template_are_still_checked(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ninstructions_file: t.j2\n",
        "t.j2": "{% include ⟨'missing.j2'⟩ %}\n{% include 'part.j2' %}\n{{ agent_name |\n",
        "part.j2": "{{ ⟨zone⟩ }}\n",
    })
    assert _codes_at(ws.diagnostics("t.j2"), "OSC040") == _ranges(ws.marked("t.j2"))
    # The graph still runs through the broken includer: part.j2 is rendered for agent `a`.
    assert _codes_at(ws.diagnostics("part.j2"), "OSC101") == _ranges(ws.marked("part.j2"))
    assert "OSC107" not in ws.codes("part.j2")


def test_inline_instructions_report_every_error_and_check_the_rest(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": """\
            id: a
            instructions: |
              Hello {{ ⟨zone⟩ }}
              ⟨{{ agent_name |⟩
              ⟨{% for %}⟩
            """,
    })
    marks = ws.marked("a.agent.yaml")
    diagnostics = ws.diagnostics("a.agent.yaml")
    assert [r[0] for r in _codes_at(diagnostics, "OSC100")] == [marks[1].start.line, marks[2].start.line]
    assert _codes_at(diagnostics, "OSC101") == _ranges([marks[0]])


def test_valid_templates_parse_once_as_before() -> None:
    for path in sorted(EXAMPLES.rglob("*.j2")):
        text = path.read_text()
        tree, parsed, errors = parse_tolerant(text)
        if "syntax" in path.name:
            continue
        assert tree is not None and parsed == text and errors == [], path


def test_the_number_of_recoveries_is_bounded() -> None:
    facts = analyze_template("{{ a | }}\n" * 500 + "{{ zone }}\n")
    assert 0 < len(facts.syntax_errors) <= 65


# ------------------------------------------- property: a broken line leaves the other lines' diagnostics alone

VARIABLES = ["agent_name", "user_name", "current_time", "team", "zone", "region", "user_context"]
# Fragments broken in themselves, and block openers left open (typed before their end tag: the lines edited
# since the template last parsed tell which opener is new when it sits inside a block of its kind).
BROKEN = ["{{ x |", "{{ agent_", "{{ }}", "{% if %}", "{% for x in %}", "{{ a b }}", "{% set %}", "{{ 'abc }}",
          "{%", "{{", "{{ x } y", "{% if a", "{{ agent_name | upper", "{% endfor", "{{ (a }}", "{% for %}",
          "{{ user_name | default( }}", "{% set x = %}", "{% if ok %}", "{% for item in items %}"]


@st.composite
def valid_templates(draw: st.DrawFn) -> list[str]:
    """Lines of a template that parses: text, expressions, sets, and balanced if/for blocks."""
    lines: list[str] = []
    open_blocks: list[str] = []
    for _ in range(draw(st.integers(1, 14))):
        var = draw(st.sampled_from(VARIABLES))
        kind = draw(st.sampled_from(["text", "expr", "filter", "set", "if", "for", "close", "comment"]))
        if kind == "text":
            lines.append(draw(st.sampled_from(["Hello.", "", "Be brief:", "<data>", "</data>"])))
        elif kind == "expr":
            lines.append(f"Say {{{{ {var} }}}} now")
        elif kind == "filter":
            lines.append(f"{{{{ {var} | upper }}}}")
        elif kind == "set":
            lines.append(f"{{% set {draw(st.sampled_from(['zone', 'tone']))} = {var} %}}")
        elif kind == "if":
            lines.append(f"{{% if {var} %}}")
            open_blocks.append("endif")
        elif kind == "for":
            lines.append(f"{{% for item in {var} %}}{{{{ item }}}}")
            open_blocks.append("endfor")
        elif kind == "close" and open_blocks:
            lines.append(f"{{% {open_blocks.pop()} %}}")
        elif kind == "comment":
            lines.append("{# a note #}")
    lines.extend(f"{{% {end} %}}" for end in reversed(open_blocks))
    return lines or ["Hello."]


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    root = tmp_path_factory.mktemp("tolerance")
    (root / "oscova.toml").write_text(BASE_HOST)
    (root / "a.agent.yaml").write_text("id: a\ninstructions_file: t.j2\n")
    (root / "t.j2").write_text("")
    result = Analysis(str(root))
    result.load(jobs=1)
    return result


def _by_line(found: list[Diagnostic], skip: int, shift_from: int, shift: int) -> list[tuple]:
    out = []
    for d in found:
        line = d.range.start.line
        if line == skip:
            continue
        line -= shift if line >= shift_from else 0
        out.append((d.code, line, d.range.start.character, d.range.end.character, d.message))
    return sorted(out)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow,
                                                                                     HealthCheck.function_scoped_fixture])
@given(valid_templates(), st.sampled_from(BROKEN), st.integers(0, 100), st.booleans())
def test_a_broken_fragment_leaves_the_other_lines_unchanged(analysis: Analysis, lines: list[str], fragment: str,
                                                            where: int, own_line: bool) -> None:
    path = str(Path(analysis.root) / "t.j2")
    original = "\n".join(lines) + "\n"
    analysis.update(path, original)
    assert "OSC100" not in [d.code for d in analysis.diagnostics(path)], original
    before = analysis.diagnostics(path)
    at = where % (len(lines) + 1) if own_line else where % len(lines)
    if own_line:  # the fragment on a line of its own
        edited = [*lines[:at], fragment, *lines[at:]]
        shift = 1
    else:  # the fragment typed at the end of a line
        edited = [*lines[:at], lines[at] + " " + fragment, *lines[at + 1:]]
        shift = 0
    analysis.update(path, "\n".join(edited) + "\n")
    after = analysis.diagnostics(path)
    assert [d.range.start.line for d in after if d.code == "OSC100"] == [at], edited
    assert _by_line(after, at, at + 1, shift) == _by_line(before, at if not own_line else -1, at, 0), edited


def test_replaying_a_typed_line_keeps_the_diagnostics_above(tmp_path: Path) -> None:
    """The issue's own replay: typing `Sign as {{ agent_name | upper }} for {{ company }}.` at the end."""
    head, _ = strip_marks(textwrap.dedent("""\
        Hello {{ region }}.
        Time: {{ current_time }}
        """))
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ninstructions_file: t.j2\n", "t.j2": head}, host=LOCAL_HOST)
    baseline = [(d.code, d.range.start.line) for d in ws.diagnostics("t.j2")]
    assert ("OSC101", 0) in baseline and ("OSC102", 1) in baseline
    line = "Sign as {{ agent_name | upper }} for {{ company }}."
    broken_states = 0
    for n in range(len(line) + 1):
        ws.analysis.update(ws.path("t.j2"), head + line[:n])
        found = [(d.code, d.range.start.line) for d in ws.diagnostics("t.j2")]
        assert [c for c in found if c[1] < 2] == baseline, line[:n]
        assert all(where == 2 for code, where in found if code == "OSC100"), line[:n]
        broken_states += any(code == "OSC100" for code, _ in found)
    assert broken_states > 20


# ------------------------------------------------------------------------------- definitions and oscova.toml

AGENTS = {
    "helper.agent.yaml": "id: helper\nexposed_as_tool: true\ninstructions_file: helper.j2\n",
    "helper.j2": "Hi {{ team }}\n",
    "boss.agent.yaml": "id: boss\nagent_tools:\n  - helper\n",
}


def _all(ws) -> dict[str, list[tuple[str, int]]]:  # noqa: ANN001 - the fixture workspace
    return {name: sorted((d.code, d.range.start.line) for d in ws.diagnostics(name))
            for name in ("helper.agent.yaml", "helper.j2", "boss.agent.yaml")}


@pytest.mark.parametrize("broken", [
    'id: "helper\nexposed_as_tool: true\ninstructions_file: helper.j2\n',  # nothing can be read
    "id: helper\nexposed_as_tool: true\ninstructions_file: helper.j2\nagent_tools: [boss, ",  # the last line
    "id: helper\nexposed_as_tool: [true\ninstructions_file: helper.j2\n",  # a key other files read
    "id: helper\nexposed_as_tool: true\ninstructions_file: helper.j2\n  model: : x\n",
])
def test_a_broken_definition_keeps_its_dependents_as_they_were(tmp_path: Path, broken: str) -> None:
    ws = make_workspace(tmp_path, AGENTS)
    before = _all(ws)
    ws.write("helper.agent.yaml", broken)
    after = _all(ws)
    assert after["boss.agent.yaml"] == before["boss.agent.yaml"]
    assert after["helper.j2"] == before["helper.j2"]
    assert [code for code, _ in after["helper.agent.yaml"]].count("OSC001") == 1
    ws.write("helper.agent.yaml", AGENTS["helper.agent.yaml"])
    assert _all(ws) == before


def test_a_definition_with_a_broken_line_keeps_the_diagnostics_of_its_other_lines(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {**AGENTS, "boss.agent.yaml": "id: boss\nmodel: fast\nagent_tools:\n  - helper\n"})
    assert ("OSC041", 1) in _all(ws)["boss.agent.yaml"]
    ws.write("boss.agent.yaml", 'id: boss\nmodel: fast\nagent_tools:\n  - helper\n  - "nob\n')
    found = _all(ws)["boss.agent.yaml"]
    assert ("OSC041", 1) in found and ("OSC001", 4) in found
    assert "OSC020" not in [code for code, _ in found]


def test_a_broken_host_configuration_stands_in_with_its_last_good_facts(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {**AGENTS, "boss.agent.yaml": "id: boss\nmodel: default\nagent_tools: [helper]\n"})
    before = _all(ws)
    ws.write("oscova.toml", BASE_HOST + "\n[models.other\nmodel = \"x\"\n")
    assert _all(ws) == before
    assert "OSC001" in ws.codes("oscova.toml")


def test_a_host_configuration_broken_from_the_start_keeps_its_other_tables(tmp_path: Path) -> None:
    host = BASE_HOST + "\n[providers.tickets\nclass = \"x:Y\"\n"
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\nmodel: default\ninstructions: 'For {{ team }}'\n"},
                        host=host)
    assert [(d.code, d.range.start.line) for d in ws.diagnostics("oscova.toml")] == [("OSC001", 11)]
    assert ws.codes("a.agent.yaml") == []  # `default` is still a configured model, `team` a variable


def test_an_include_being_typed_keeps_the_included_template_in_the_graph(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ninstructions_file: t.j2\n",
        "t.j2": "Hello.\n{% include 'part.j2' %}\n",
        "part.j2": "{{ team }} and {{ ⟨zone⟩ }}\n",
    })
    before = ws.diagnostics("part.j2")
    assert [d.range for d in before] == ws.marked("part.j2")
    for typed in ("{% include 'part.j2' with", "{% include 'part.j2'", "{% include 'part.j2' %}{{ x |"):
        ws.write("t.j2", f"Hello.\n{typed}\n")
        assert ws.diagnostics("part.j2") == before, typed
        assert [d.range.start.line for d in ws.diagnostics("t.j2") if d.code == "OSC100"] == [1]


def test_an_opener_typed_inside_a_block_of_its_kind_is_the_one_left_open(tmp_path: Path) -> None:
    """The text alone cannot tell which of two nested `{% if %}` lacks its end (Jinja blames the outer one);
    the lines edited since the template last parsed can."""
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ninstructions_file: t.j2\n",
        "t.j2": "{% if user_name %}\nHi {{ zone }}\n{% endif %}\n",
    })
    for typed in ("{% if team %}", "{% if team %}\nmore {{ region }}"):
        ws.write("t.j2", "{% if user_name %}\n" + typed + "\nHi {{ zone }}\n{% endif %}\n")
        found = [(d.code, d.range.start.line) for d in ws.diagnostics("t.j2")]
        assert ("OSC100", 1) in found and ("OSC100", 0) not in found, typed
        assert ("OSC101", typed.count("\n") + 2) in found, typed
