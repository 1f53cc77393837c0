"""Rendering has a budget (issue 16 item 3): a template whose loops never end in practice stops with a
sentence naming it, in `oscova-lsp preview` and in `oscova-lsp run`, within seconds (a subprocess each)."""

from __future__ import annotations

import json

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
