"""Jinja scoping as Jinja renders it: one fixture per case, each with its rendered proof.

Each fixture marks with ⟨ ⟩ the reads the checker must report as unbound (the rendering provider must bind
them). The proof renders the template with `jinja2.StrictUndefined` and exactly the names the checker reports:
it must render; and without any one reported name, it must fail to render.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
import pytest
from oscova_lsp.analysis.jinja_source import analyze_template
from oscova_lsp.analysis.text import LineIndex

from .support import make_workspace, strip_marks


def _render_macro_caller(caller: Any = None) -> str:
    return caller() if caller else ""


# (id, template with the unbound reads marked, a value for each name the checker says the renderer must bind)
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("set-reads-itself", "{% set name = ⟨name⟩ | upper %}{{ name }}", {"name": "ada"}),
    ("read-before-set", "{{ ⟨x⟩ }}{% set x = 1 %}{{ x }}", {"x": "v"}),
    ("read-before-set-in-later-if", "{{ ⟨x⟩ }}{% if ⟨c⟩ %}{% set x = 1 %}{% endif %}{{ x }}", {"x": "v", "c": 1}),
    ("call-before-macro-definition",
     "{% call ⟨m⟩() %}hi{% endcall %}{% macro m() %}{{ caller() }}{% endmacro %}", {"m": _render_macro_caller}),
    ("block-bodies-have-their-own-scope",
     "{% set t = 1 %}{% block a %}{% set y = 2 %}{{ t }}{{ y }}{% endblock %}{% block b %}{{ ⟨y⟩ }}{% endblock %}",
     {"y": "v"}),
    ("top-level-import-and-macro-visible-in-blocks",
     "{% import 'self.j2' as lib %}{% macro m() %}m{% endmacro %}{% block a %}{{ m() }}{{ lib is defined }}"
     "{% endblock %}", {}),
    ("block-does-not-see-the-loop-around-it",
     "{% for x in ⟨xs⟩ %}{% block b %}{{ ⟨x⟩ }}{% endblock %}{% endfor %}", {"xs": "ab", "x": "v"}),
    ("macro-default-reads-earlier-argument", "{% macro m(a, b=a) %}{{ b }}{% endmacro %}{{ m(1) }}", {}),
    ("macro-body-sees-later-top-level-set",
     "{% macro m() %}{{ g }}{% endmacro %}{% set g = 1 %}{{ m() }}", {}),
    ("loop-outside-for", "{% for i in ⟨items⟩ %}{{ loop.index }}{% endfor %}{{ ⟨loop⟩ }}",
     {"items": "ab", "loop": "v"}),
    ("loop-in-for-else", "{% for i in ⟨items⟩ %}{{ i }}{% else %}{{ ⟨loop⟩ }}{% endfor %}",
     {"items": "", "loop": "v"}),
    ("caller-outside-macro",
     "{% macro m() %}{{ caller() }}{% endmacro %}{% call m() %}x{% endcall %}{{ ⟨caller⟩ }}", {"caller": "v"}),
    ("varargs-kwargs-outside-macro",
     "{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, k=2) }}{{ ⟨varargs⟩ }}{{ ⟨kwargs⟩ }}",
     {"varargs": "v", "kwargs": "w"}),
    ("set-on-every-branch-bound-after",
     "{% if ⟨c⟩ %}{% set x = 1 %}{% elif ⟨d⟩ %}{% set x = 2 %}{% else %}{% set x = 3 %}{% endif %}{{ x }}",
     {"c": "", "d": ""}),
    ("set-on-some-branches-unreported",
     "{% if ⟨c⟩ %}{% set x = 1 %}{% endif %}{% if ⟨c⟩ %}{{ x }}{% endif %}", {"c": 1}),
    ("branch-does-not-see-another-branch",
     "{% if ⟨c⟩ %}{% set x = 1 %}{% else %}{{ ⟨x⟩ }}{% endif %}", {"c": "", "x": "v"}),
    ("for-body-set-not-visible-after", "{% for i in ⟨xs⟩ %}{% set z = i %}{% endfor %}{{ ⟨z⟩ }}",
     {"xs": "ab", "z": "v"}),
    ("with-value-read-outside", "{% with a = ⟨a⟩ %}{{ a }}{% endwith %}", {"a": "v"}),
    # A scoped block hands the names it sees to the blocks inside it, scoped or not.
    ("nbconvert-null-blocks-in-a-loop",  # nbconvert's null.j2, condensed: the false OSC101 on `cell`
     "{%- for cell in ⟨nb⟩.cells -%}{%- block any_cell scoped -%}{%- if cell.cell_type == 'code' -%}"
     "{%- block codecell scoped -%}{%- if cell.outputs -%}{%- block output_group -%}"
     "{%- block outputs scoped -%}{%- for output in cell.outputs -%}{%- block output scoped -%}"
     "{{ output }}{{ cell.execution_count }}{%- endblock output -%}{%- endfor -%}{%- endblock outputs -%}"
     "{%- endblock output_group -%}{%- endif -%}{%- endblock codecell -%}{%- endif -%}"
     "{%- endblock any_cell -%}{%- endfor -%}",
     {"nb": {"cells": [{"cell_type": "code", "outputs": ["o"], "execution_count": 1}]}}),
    ("unscoped-block-inside-a-scoped-one-sees-the-loop",
     "{% for cell in ⟨cells⟩ %}{% block a scoped %}{% block b %}{{ cell }}{{ loop.index }}{% endblock %}"
     "{% endblock %}{% endfor %}", {"cells": "ab"}),
    ("unscoped-block-inside-a-scoped-one-does-not-see-its-set",
     "{% block a scoped %}{% set z = 1 %}{% block b %}{{ ⟨z⟩ }}{% endblock %}{% endblock %}", {"z": "v"}),
    ("unscoped-block-inside-a-scoped-one-does-not-see-a-loop-inside-it",
     "{% block a scoped %}{% for x in ⟨xs⟩ %}{% block b %}{{ ⟨x⟩ }}{% endblock %}{% endfor %}{% endblock %}",
     {"xs": "ab", "x": "v"}),
    ("scoped-block-inside-an-unscoped-one-does-not-see-the-outer-loop",
     "{% for cell in ⟨cells⟩ %}{% block a %}{% for y in ⟨ys⟩ %}{% block b scoped %}{{ y }}{{ ⟨cell⟩ }}"
     "{% endblock %}{% endfor %}{% endblock %}{% endfor %}", {"cells": "a", "ys": "b", "cell": "v"}),
]


def _env() -> jinja2.Environment:
    return jinja2.Environment(undefined=jinja2.StrictUndefined,
                              loader=jinja2.DictLoader({"self.j2": "{% macro f() %}{% endmacro %}"}))


@pytest.mark.parametrize(("template", "context"), [(t, c) for _, t, c in CASES], ids=[i for i, _, _ in CASES])
def test_unbound_reads_are_exactly_what_jinja_cannot_render(template: str, context: dict[str, Any]) -> None:
    text, marks = strip_marks(template)
    facts = analyze_template(text)
    assert not facts.syntax_errors
    lines = LineIndex(text)
    reported = [(u.name, lines.range(u.offset, u.offset + len(u.name))) for u in facts.free_uses]
    assert [rng for _, rng in reported] == marks
    assert {name for name, _ in reported} == set(context)
    # The proof: the names the checker reports are enough to render...
    _env().from_string(text).render(**context)
    # ...and each of them is needed.
    for name in context:
        with pytest.raises(jinja2.UndefinedError):
            _env().from_string(text).render(**{k: v for k, v in context.items() if k != name})


def test_lone_carriage_returns_end_lines(tmp_path: Path) -> None:
    """LSP, like Jinja, breaks lines at \\r\\n, \\r and \\n: a free variable after bare \\r gets its own line."""
    text = "Hello\rfrom {{ ⟨region⟩ }}\r\n{{ ⟨zone⟩ }}\n"
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ninstructions_file: t.j2\n"})
    body, marks = strip_marks(text)
    (tmp_path / "t.j2").write_bytes(body.encode())
    ws.analysis.update(ws.path("t.j2"), body)
    found = [d.range for d in ws.diagnostics("t.j2", "OSC101")]
    assert found == marks
    assert [m.start.line for m in marks] == [1, 2]
    broken = "Hello {{ ⟨missing⟩ }}\r{{ agent_name |\rbye"
    body, marks = strip_marks(broken)
    ws.analysis.update(ws.path("t.j2"), body)
    assert [d.range for d in ws.diagnostics("t.j2", "OSC101")] == marks
    assert [d.range.start.line for d in ws.diagnostics("t.j2", "OSC100")] == [1]
