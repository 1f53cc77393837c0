"""Suggestions and the files a check reaches (what a new user hit first): "did you mean" only
when close, an include through a symlink leading out, and `check` of one definition with the templates it
renders. The checker
as a user runs it (the console script), and the engine's diagnostics with their quick fixes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.host_files import UNREACHABLE, models_default

from .support import apply_fix, make_workspace
from .test_cli import oscova

HOST = '[user]\nname = "Alice"\ntimezone = "Europe/Paris"\n\n' + models_default(base_url=UNREACHABLE)


def workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "ws"
    for name, text in {"oscova.toml": HOST, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


# -- item 3: an include through a symlink leading out of the workspace -------------------------------------

def test_an_include_through_a_symlink_leading_out_is_osc040_on_the_include(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"agents/helpdesk.agent.yaml": "id: helpdesk\ninstructions_file: ../templates/main.j2\n",
                                "templates/main.j2": 'Be {% include "templates/partials/tone2.j2" %}.\n'})
    outside = tmp_path / "elsewhere" / "tone.j2"
    outside.parent.mkdir()
    outside.write_text("kind")
    (root / "templates" / "partials").mkdir()
    os.symlink(outside, root / "templates" / "partials" / "tone2.j2")
    expected = ('templates/main.j2:1:15: OSC040 template `templates/partials/tone2.j2` is outside the workspace root; '
                'only files inside it are read')
    for args in (["."], ["templates/main.j2"], ["--no-cache", "templates/main.j2"]):
        result = oscova("check", *args, cwd=root)
        assert result.returncode == 1, (args, result.stdout)
        assert expected in result.stdout.splitlines(), (args, result.stdout)


# -- item 6: a suggestion only when it is close ------------------------------------------------------------

def test_an_unbound_name_with_nothing_close_offers_to_declare_it_first(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ninstructions: 'Tier: {{ customer_tier }}'\n"})
    [diagnostic] = ws.diagnostics("a.agent.yaml", "OSC101")
    assert "did you mean" not in diagnostic.message and "user_timezone" not in diagnostic.message
    assert [f.title for f in diagnostic.fixes] == ["Declare `customer_tier` in `[variables]`"]


def test_a_near_miss_is_still_suggested_first(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ninstructions: 'Zone: {{ user_timezon }}'\n"})
    [diagnostic] = ws.diagnostics("a.agent.yaml", "OSC101")
    assert diagnostic.message.endswith("; did you mean `user_timezone`?")
    assert diagnostic.fixes[0].title == "Use `user_timezone`"


@pytest.mark.parametrize(("word", "choices", "expected"), [
    ("customer_tier", ["user_timezone", "user_name", "agent_name"], None),
    ("user_timezon", ["user_timezone", "user_name"], "user_timezone"),
    ("USER_NAME", ["user_email", "user_name"], "user_name"),        # case only, as rustc prefers
    ("tier_customer", ["customer_tier", "tier"], "customer_tier"),  # the same words in another order
    ("memroy", ["memory", "todo", "vision"], "memory"),             # a transposition
    ("mem", ["memory"], None),                                      # too short to be a typo of it
    ("descripton", ["description", "instructions"], "description"),
    ("ab", ["abc", "xy"], "abc"),
])
def test_did_you_mean_suggests_within_a_third_of_the_length(word: str, choices: list[str],
                                                            expected: str | None) -> None:
    from oscova_lsp.analysis.suggest import did_you_mean

    suggestion = did_you_mean(word, choices)
    assert (suggestion.name if suggestion else None) == expected


# -- item 10: checking a definition checks the templates it renders ----------------------------------------

def test_check_of_a_definition_reports_the_templates_it_renders(tmp_path: Path) -> None:
    root = workspace(tmp_path, {
        "agents/helpdesk.agent.yaml": "id: helpdesk\ninstructions_file: ../templates/helpdesk.j2\n",
        "agents/other.agent.yaml": "id: other\ninstructions_file: ../templates/other.j2\n",
        "templates/helpdesk.j2": 'Hi {{ user_name }}. {% include "templates/partials/tone.j2" %}\n',
        "templates/partials/tone.j2": "Tone: {{ tone }}\n",
        "templates/other.j2": "{{ unrelated }}\n"})
    result = oscova("check", "agents/helpdesk.agent.yaml", cwd=root)
    assert result.returncode == 1, result.stdout
    lines = result.stdout.splitlines()
    assert any(line.startswith("templates/partials/tone.j2:1:10: OSC101 `tone`") for line in lines), lines
    assert not any("other.j2" in line for line in lines), lines
    assert lines[-1] == "Found 1 error in 3 files of 1 workspace checked (agents/helpdesk.agent.yaml and the 2 " \
                        "templates it renders)."


def test_every_did_you_mean_comes_from_the_one_helper() -> None:
    repo = Path(__file__).resolve().parents[2]
    writers = sorted(str(path.relative_to(repo)) for folder in ("server", "runtime")
                     for path in (repo / folder).rglob("*.py") if "did you mean" in path.read_text().lower())
    assert writers == ["server/oscova_lsp/analysis/suggest.py"]


def test_declaring_a_variable_leaves_a_value_to_fill_in_that_is_flagged_until_filled(tmp_path: Path) -> None:
    """The declaration quick fix must not make the problem silent: an empty value renders empty too."""
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ninstructions: 'Plan: {{ customer_tier }}.'\n"})
    [diagnostic] = ws.diagnostics("a.agent.yaml", "OSC101")
    apply_fix(ws, diagnostic.fixes[0])
    assert ws.diagnostics("a.agent.yaml", "OSC101") == []
    [empty] = ws.diagnostics("oscova.toml", "OSC045")
    host = (tmp_path / "oscova.toml").read_text()
    assert host.splitlines()[empty.range.start.line] == 'customer_tier = ""'
    assert empty.message == "`customer_tier` is empty in `[variables]`: every template renders it empty; give it a value"
    (tmp_path / "oscova.toml").write_text(host.replace('customer_tier = ""', 'customer_tier = "Gold"'))
    ws.analysis.update(str(tmp_path / "oscova.toml"), (tmp_path / "oscova.toml").read_text())
    assert ws.diagnostics("oscova.toml", "OSC045") == []
