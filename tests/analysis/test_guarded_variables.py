"""OSC101 follows what Jinja renders: a use guarded by `default`, an `is defined` / `is undefined` test or a
branch such a test guards is not an error; every other use of an unbound name is, with words that say what
happens on its line. The oracle is Jinja itself: a name is needed when rendering with `StrictUndefined` (which
raises wherever the default `Undefined` would silently stand in) fails without it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from jinja2 import StrictUndefined, UndefinedError
from jinja2.sandbox import SandboxedEnvironment
from oscova_runtime.catalogue import PERSONAL_VARIABLES

from .support import make_workspace

AGENT = """\
id: guarded
name: Guarded
description: Optional values, the Jinja way.
instructions_file: ../templates/guarded.j2
"""

GUARDED = """\
Region: {{ region | default("EU") }}. {% if vip is defined %}VIP!{% endif %}
Tone: {{ tone if tone is defined else "neutral" }}
{% if plan is defined and plan %}Plan: {{ plan }}{% endif %}
Hello {{ nickname | d(user_name) }}.
{% for s in steps | default([]) %}- {{ s }}
{% endfor %}
{% with t = region | default("EU") %}{{ t }}{% endwith %}
{% if channel is undefined %}no channel{% else %}via {{ channel }}{% endif %}
{% if locale is not defined %}en{% elif locale == "fr" %}bonjour{% else %}{{ locale }}{% endif %}
{% set shown = limit | default(10) %}{{ shown }}
{% if mode is defined %}{% if mode == "strict" %}strict{% endif %}{% endif %}
{{ (budget if budget is defined else 0) }}
{% if escalate %}Escalate to {{ escalate }}.{% endif %}
Ticket: {{ ticket_id }}
{% for item in items %}{{ item }}{% endfor %}
{{ customer.name }}
"""
"""Twelve names used only under guards, four that rendering needs (`escalate`, `ticket_id`, `items`,
`customer`), each used the way a different message describes."""


class _Anything(str):
    """A bound value every use accepts: truthy, printable, iterable once, with any attribute or item."""

    def __new__(cls) -> _Anything:
        return super().__new__(cls, "v")

    def __getattr__(self, name: str) -> Any:
        return _Anything()

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        return _Anything()

    def __iter__(self) -> Any:  # type: ignore[override]
        return iter([_Anything()])


def needed_names(text: str) -> set[str]:
    """The names that rendering with `StrictUndefined` fails without, the personal provider's bound."""
    env = SandboxedEnvironment(undefined=StrictUndefined)
    template = env.from_string(text)
    context: dict[str, Any] = {v.name: _Anything() for v in PERSONAL_VARIABLES}
    needed: set[str] = set()
    for _ in range(100):
        try:
            template.render(context)
        except UndefinedError as missing:
            found = re.match(r"'(\w+)' is undefined", str(missing))
            assert found, missing
            needed.add(found.group(1))
            context[found.group(1)] = _Anything()
        else:
            return needed
    raise AssertionError("the oracle did not settle")


def test_the_oracle_sees_four_needed_names() -> None:
    assert needed_names(GUARDED) == {"escalate", "ticket_id", "items", "customer"}


def test_osc101_reports_exactly_what_rendering_needs(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"agents/guarded.agent.yaml": AGENT, "templates/guarded.j2": GUARDED})
    reported = {d.message.split("`")[1] for d in ws.diagnostics("templates/guarded.j2", "OSC101")}
    assert reported == needed_names(GUARDED)
    errors = [d for d in ws.diagnostics("templates/guarded.j2") if d.severity.label in ("error", "warning")]
    assert {d.message.split("`")[1] for d in errors} == needed_names(GUARDED), [d.message for d in errors]


def test_each_message_says_what_renders_on_its_line(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"agents/guarded.agent.yaml": AGENT, "templates/guarded.j2": GUARDED})
    found = {d.message.split("`")[1]: d for d in ws.diagnostics("templates/guarded.j2", "OSC101")}
    assert found["escalate"].message.endswith("so the test is false and its block never renders")
    assert found["escalate"].range.start.line == 12 and found["escalate"].range.start.character == 6
    assert found["ticket_id"].message.endswith(": it renders empty")
    assert found["items"].message.endswith("so the loop never runs")
    assert found["customer"].message.endswith("using it here fails the rendering")


def test_the_messages_are_what_jinja_does(tmp_path: Path) -> None:
    """Each effect the messages name, checked against the runtime's own renderer."""
    from oscova_runtime.templates import TemplateError, TemplateRenderer

    renderer = TemplateRenderer(tmp_path)
    assert renderer.render_string("[{% if escalate %}block{% endif %}]", {}) == "[]"
    assert renderer.render_string("[{{ ticket_id }}]", {}) == "[]"
    assert renderer.render_string("[{% for i in items %}x{% endfor %}]", {}) == "[]"
    try:
        renderer.render_string("{{ customer.name }}", {})
    except TemplateError as failed:
        assert "customer" in str(failed)
    else:
        raise AssertionError("reading from an undefined value rendered")
    assert renderer.render_string(GUARDED.split("\n")[0], {}) == "Region: EU. "


def test_a_guarded_name_nothing_binds_is_a_hint_saying_the_default_applies(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"agents/guarded.agent.yaml": AGENT, "templates/guarded.j2": GUARDED})
    hints = {(d.message.split("`")[1], d.range.start.line): d for d in ws.diagnostics("templates/guarded.j2", "OSC109")}
    assert hints[("region", 0)].message.endswith("the default always applies")
    assert hints[("vip", 0)].message.endswith("the test always finds it undefined")
    assert hints[("channel", 7)].severity.label == "hint"
    # `plan` in the body and after `and` is guarded by its test: one hint, at the test.
    assert [line for name, line in hints if name == "plan"] == [2]


def test_a_guarded_name_a_provider_binds_is_not_reported_at_all(tmp_path: Path) -> None:
    host = '[host]\nuser_id = "alice"\n\n[variables]\nregion = "US"\nvip = "yes"\n'
    ws = make_workspace(tmp_path, {"agents/guarded.agent.yaml": AGENT, "templates/guarded.j2": GUARDED}, host=host)
    names = {d.message.split("`")[1] for d in ws.diagnostics("templates/guarded.j2") if d.code in ("OSC101", "OSC109")}
    assert names and "region" not in names and "vip" not in names


def test_inline_instructions_follow_the_same_guards(tmp_path: Path) -> None:
    agent = (
        "id: inline\nname: Inline\ndescription: Inline instructions.\ninstructions: |\n"
        "  Region: {{ region | default('EU') }}\n  {% if vip is defined %}VIP {{ vip }}{% endif %}\n"
        "  Ticket: {{ ticket_id }}\n"
    )
    ws = make_workspace(tmp_path, {"agents/inline.agent.yaml": agent})
    errors = ws.diagnostics("agents/inline.agent.yaml", "OSC101")
    assert [d.message.split("`")[1] for d in errors] == ["ticket_id"]
    assert errors[0].range.start.line == 6
