"""Rendering has a budget: a template whose loops never end in practice stops with a
sentence naming it, in `oscova-lsp preview` and in `oscova-lsp run`, within seconds (a subprocess each)."""

from __future__ import annotations

import json

import pytest

from tests.support.fake_openai import Reply
from tests.support.run_workspace import AGENTS

from .conftest import make_workspace
from .test_cli import oscova

ENDLESS = "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}"
"""10^8 iterations: minutes of work before rendering had a budget."""
TOO_LONG = "took too long to render (more than 1,000,000 loop steps and calls: a loop too large, or recursion"


def test_preview_stops_an_endless_instructions_template(tmp_path, fake_openai):
    root = make_workspace(tmp_path / "ws", fake_openai.base_url,
                          agents={**AGENTS, "endless": f'id: endless\ninstructions: "{ENDLESS}"\n'})
    result = oscova("preview", "endless", cwd=root)
    assert result.returncode == 1
    assert f"The instructions {TOO_LONG}" in result.stderr and "Traceback" not in result.stderr


def test_a_run_stops_an_endless_environment_template_before_asking_the_model(tmp_path, fake_openai):
    root = make_workspace(tmp_path / "ws", fake_openai.base_url)
    (root / "templates").mkdir()
    (root / "templates" / "env.j2").write_text(ENDLESS + "{{ os }}")
    host = (root / "oscova.toml").read_text().replace(
        "[environment]\n", '[environment]\ntemplate = "templates/env.j2"\n')
    (root / "oscova.toml").write_text(host)
    fake_openai.enqueue(Reply(text="never asked"))
    result = oscova("run", "echo", "--input", "hi", "--json", cwd=root)
    final = json.loads(result.stdout.splitlines()[-1])
    assert result.returncode == 1 and final["kind"] == "failed", result.stderr
    assert final["error"].startswith(f"The template templates/env.j2 {TOO_LONG}")
    assert fake_openai.requests == []


def test_a_large_but_bounded_loop_still_renders(tmp_path, fake_openai):
    loop = "{% for i in range(300) %}{% for j in range(300) %}{% endfor %}{% endfor %}ok {{ 'ab' * 3 }}"
    root = make_workspace(tmp_path / "ws", fake_openai.base_url,
                          agents={**AGENTS, "big": f'id: big\ninstructions: "{loop}"\n'})
    result = oscova("preview", "big", "--json", cwd=root)
    assert result.returncode == 0, result.stderr
    assert "ok ababab" in json.loads(result.stdout)["instructions"]


def test_a_giant_value_from_a_method_or_filter_is_refused_with_a_reason(tmp_path, fake_openai):
    """A giant value built by a method or a filter (not `*`) was refused with an empty reason
    ("Rendering instructions failed: ", from a MemoryError), or built (5 GB) where memory allowed it."""
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, agents={
        **AGENTS, "method": "id: method\ninstructions: \"{{ 'x'.center(5000000000) }}\"\n",
        "filter": "id: filter\ninstructions: \"{{ 'a\\nb'|indent(6000000) }}\"\n"})
    for agent, how in (("method", "`center`"), ("filter", "`|indent`")):
        result = oscova("preview", agent, cwd=root)
        assert result.returncode == 1
        assert ("The instructions took too long to render (it builds a value of more than 10,000,000 characters "
                f"with {how})") in result.stderr, result.stderr


@pytest.mark.parametrize(("failure", "reason"), [
    (MemoryError(), "The instructions could not be rendered: it builds a value too large to hold in memory"),
    (LookupError(), "Rendering instructions failed: LookupError"),  # an exception without words
    (ValueError("  "), "Rendering instructions failed: ValueError"),
])
def test_a_refusal_always_says_why(failure: Exception, reason: str):
    from oscova_runtime.templates import TemplateError, TemplateRenderer

    class Failing:
        def __str__(self) -> str:
            raise failure

    with pytest.raises(TemplateError) as refused:
        TemplateRenderer(".").render_string("{{ value }}", {"value": Failing()})
    assert str(refused.value) == reason


def test_small_padding_still_renders():
    from oscova_runtime.templates import TemplateRenderer

    assert TemplateRenderer(".").render_string("[{{ 'ab'.center(6) }}|{{ 'x\ny'|indent(2, first=true) }}]", {}) == \
        "[  ab  |  x\n  y]"


GROWN = "{% set ns = namespace(x='ab') %}{% for i in range(24) %}{% set ns.x = ns.x OP ns.x %}{% endfor %}{{ ns.x|length }}"
"""Doubles a string 24 times: 33 million characters from 24 loop steps (the doubling goes on to gigabytes)."""


@pytest.mark.parametrize(("template", "how"), [
    ("{{ '{:>20000000}'.format('x') }}", "`format`"),
    ("{{ '{:{w}}'.format('x', w=20000000) }}", "`format`"),
    ("{{ '{:.20000000f}'.format(1.5) }}", "`format`"),
    ("{{ '%20000000s' % 'x' }}", "`%`"),
    ("{{ '%*s' % (20000000, 'x') }}", "`%`"),
    ("{{ '%20000000s'|format('x') }}", "`|format`"),
    (GROWN.replace("OP", "~"), "`~`"),
    (GROWN.replace("OP", "+"), "`+`"),
])
def test_a_giant_value_from_a_format_width_or_a_growing_join_is_refused(template: str, how: str):
    """The render budget bounds what `*`, padding methods and `|indent` build; a width in a format string and a
    string doubled by `~` or `+` in a loop built gigabytes in few steps (the loop budget never saw them)."""
    from oscova_runtime.templates import RenderBudgetExceeded, TemplateRenderer

    with pytest.raises(RenderBudgetExceeded) as refused:
        TemplateRenderer(".").render_string(template, {}, name="instructions")
    assert (f"The instructions took too long to render (it builds a value of more than 10,000,000 characters "
            f"with {how})") == str(refused.value)


def test_small_formats_and_joins_still_render():
    from oscova_runtime.templates import TemplateRenderer

    rendered = TemplateRenderer(".").render_string(
        "{{ '{:>4}|{:.2f}|{:{w}}'.format('x', 1.5, 'y', w=3) }} {{ '%3s|%-*s' % ('a', 2, 'b') }} "
        "{{ '%s!'|format('hi') }} {{ 'a' ~ 1 ~ 'b' }} {{ [1] + [2] }} {{ 'c' + 'd' }} {{ 7 % 4 }} "
        + GROWN.replace("OP", "~").replace("range(24)", "range(3)"), {})
    assert rendered == "   x|1.50|y   " + "  a|b " + " hi! a1b [1, 2] cd 3 16"
