"""Unknown codes are errors: a typo in `--select`, `--ignore`, `[lint]` or an editor setting
never passes for "All checks passed". At the command line: exit 2 with a sentence; in `oscova.toml`: an OSC002
on the offending entry, which no `select` or `ignore` can hide; in a setting: a warning (`Settings.problems`,
shown as `window/showMessage` by the server) while the setting's valid codes still apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oscova_lsp.analysis.diagnostics import Severity
from oscova_lsp.analysis.lint import LintOptions
from oscova_lsp.lsp.settings import Settings

from .support import make_workspace
from .test_ci_trust import MODELS, oscova

FILES = {"oscova.toml": MODELS, "a.agent.yaml": "id: a\ninstructions: Hi {{ nobody }}\nmemory: maybe\n"}  # OSC101, OSC002
UNKNOWN = "unknown code `E501` (codes look like OSC101 or OSC1)"


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize("args", [("--select", "E501"), ("--ignore", "E501"), ("--select", "OSC1,E501"),
                                  ("--ignore", "osc107,E501")])
def test_an_unknown_code_on_the_command_line_exits_2_with_a_sentence(tmp_path: Path, args: tuple[str, ...]) -> None:
    write(tmp_path, FILES)
    result = oscova("check", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert UNKNOWN in result.stderr
    assert result.stdout == "" and "All checks passed" not in result.stderr


@pytest.mark.parametrize("code", ["OSC999", "OSC9", "OSCX", "OSC1O1"])
def test_codes_that_look_right_but_name_no_rule_are_unknown_too(tmp_path: Path, code: str) -> None:
    write(tmp_path, FILES)
    result = oscova("check", "--select", code, cwd=tmp_path)
    assert result.returncode == 2 and f"unknown code `{code}`" in result.stderr


def test_an_empty_selection_is_refused(tmp_path: Path) -> None:
    write(tmp_path, FILES)
    result = oscova("check", "--select", " , ", cwd=tmp_path)
    assert result.returncode == 2 and "no code given" in result.stderr


def test_known_codes_and_prefixes_are_still_taken(tmp_path: Path) -> None:
    write(tmp_path, FILES)
    for args in (("--select", "osc1"), ("--select", "OSC101"), ("--ignore", "OSC0"), ("--select", "OSC")):
        result = oscova("check", *args, cwd=tmp_path)
        assert result.returncode == 1 and "OSC101" in result.stdout, (args, result.stderr)


def test_unknown_codes_in_lint_are_errors_on_their_entries(tmp_path: Path) -> None:
    host = MODELS + '[lint]\nselect = ["OSC1", ⟨"E501"⟩]\nignore = [⟨"W291"⟩, "OSC107"]\n[lint.severity]\n⟨OSC9⟩ = "error"\n'
    ws = make_workspace(tmp_path, {"oscova.toml": host, "a.agent.yaml": FILES["a.agent.yaml"]}, host=None)
    found = ws.diagnostics("oscova.toml", "OSC002")
    assert [d.range for d in found] == ws.marked("oscova.toml")
    assert [d.message for d in found] == [
        "unknown code `E501` in `[lint] select` (codes look like OSC101 or OSC1)",
        "unknown code `W291` in `[lint] ignore` (codes look like OSC101 or OSC1)",
        "unknown code `OSC9` in `[lint.severity]` (codes look like OSC101 or OSC1)"]
    assert all(d.severity is Severity.ERROR for d in found)
    # `select` does not hide its own error, and its valid codes still apply
    assert ws.codes("a.agent.yaml") == ["OSC101"]


def test_a_lint_select_of_only_unknown_codes_blanks_nothing(tmp_path: Path) -> None:
    write(tmp_path, dict(FILES, **{"oscova.toml": MODELS + '[lint]\nselect = ["E501"]\n'}))
    result = oscova("check", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1
    found = {(d["path"], d["code"]) for d in json.loads(result.stdout)}
    assert found == {("oscova.toml", "OSC002"), ("a.agent.yaml", "OSC002"), ("a.agent.yaml", "OSC101")}


def test_an_unknown_code_in_pyproject_is_reported_there(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.oscova.models.default]\nmodel = \"m\"\n\n"
                                             "[tool.oscova.lint]\nignore = [\"E501\"]\n")
    (tmp_path / "a.agent.yaml").write_text("id: a\ninstructions: Hi.\n")
    result = oscova("check", cwd=tmp_path)
    assert result.returncode == 1
    assert "pyproject.toml:5:11: OSC002 unknown code `E501` in `[lint] ignore`" in result.stdout


def test_a_setting_with_unknown_codes_keeps_its_valid_ones_and_says_so() -> None:
    settings = Settings.parse({"oscova": {"select": ["E501", "OSC101"], "ignore": ["osc9"],
                                          "severity": {"X1": "error", "OSC1": "warning"}}})
    assert settings.lint_options() == LintOptions(select=frozenset({"OSC101"}), ignore=frozenset(),
                                                  severity={"OSC1": "warning"})
    assert settings.problems == (
        "the setting `oscova.select` has an unknown code `E501` (codes look like OSC101 or OSC1); it is left out",
        "the setting `oscova.ignore` has an unknown code `osc9` (codes look like OSC101 or OSC1); it is left out",
        "the setting `oscova.severity` has an unknown code `X1` (codes look like OSC101 or OSC1); it is left out")


def test_a_select_setting_of_only_unknown_codes_selects_everything_and_says_so() -> None:
    settings = Settings.parse({"select": ["E501"]})
    assert settings.lint_options() is None  # every code reported: never an editor blanked by a typo
    assert settings.problems[-1] == "the setting `oscova.select` names no known code, so it is not applied"


@pytest.mark.parametrize(("value", "problem"), [
    ({"select": "OSC1"}, "the setting `oscova.select` must be a list of codes, not a string; it is not applied"),
    ({"ignore": {"OSC1": True}}, "the setting `oscova.ignore` must be a list of codes, not an object; it is not applied"),
    ({"debounce": "fast"}, "the setting `oscova.debounce` must be a number of milliseconds from 0 to 10000, not a "
                           "string; the default 150 applies"),
])
def test_a_setting_of_the_wrong_type_says_so(value: dict, problem: str) -> None:
    assert Settings.parse(value).problems == (problem,)
