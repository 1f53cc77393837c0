"""One home per rule: each OSC rule's code, severity, words, fix title and check sit in one family
module under `analysis/rules/`, and everything else that shows a rule (`oscova-lsp rule`, `docs/rules.md`,
hover, the codes `[lint]`, `--select` and the settings take) is made from the registry of those modules.

The modules under test are imported inside each test, so that each one fails on its own where they are
missing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from .support import make_workspace

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "server" / "oscova_lsp"
RULES_PACKAGE = SERVER / "analysis" / "rules"
CODE = re.compile(r"OSC\d{3}")


def _code_literals(path: Path) -> list[tuple[int, str]]:
    """(line, code) for each string in the module that is exactly a code (docstrings and prose are not)."""
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.fullmatch(node.value)]


def test_no_module_outside_the_rule_families_writes_a_code() -> None:
    # A code written as a value anywhere else is a second home for its rule (OSC001 was raised in five files).
    offenders = [f"{path.relative_to(ROOT)}:{line} {code}"
                 for path in sorted(SERVER.rglob("*.py")) if path.parent != RULES_PACKAGE
                 for line, code in _code_literals(path)]
    assert offenders == []


def test_each_code_is_written_once_where_its_rule_is_made() -> None:
    from oscova_lsp.analysis.rules.registry import FAMILIES, RULES, family_rules

    written = [code for path in sorted(RULES_PACKAGE.glob("*.py")) for _, code in _code_literals(path)]
    assert sorted(written) == sorted(RULES)
    assert sorted(rule.code for family in FAMILIES for rule in family_rules(family)) == sorted(RULES)


def test_each_rule_sits_beside_the_check_that_reports_it() -> None:
    from oscova_lsp.analysis.rules.registry import FAMILIES, family_rules

    for family in FAMILIES:
        tree = ast.parse(Path(family.__file__ or "").read_text(encoding="utf-8"))
        names = {name for name, value in vars(family).items() if any(value is rule for rule in family_rules(family))}
        used = {node.id for function in ast.walk(tree) if isinstance(function, ast.FunctionDef)
                for node in ast.walk(function) if isinstance(node, ast.Name)}
        assert names and names <= used, (family.__name__, names - used)


def test_the_rules_reference_is_the_registry() -> None:
    from oscova_lsp.analysis.rules.registry import RULES, markdown_page, markdown_table

    page = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert page == markdown_page(), ("docs/rules.md is made from the rule modules: write it again with "
                                     "`python -m oscova_lsp.analysis.rules.registry > docs/rules.md`")
    assert markdown_table() in page and len(markdown_table().splitlines()) == len(RULES) + 2
    for rule in RULES.values():  # a section per rule, with its explanation
        assert f"\n## {rule.code}\n\n**{rule.summary}**\n" in page and rule.explanation.strip() in page
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "| OSC001 |" not in readme and "docs/rules.md" in readme  # one table, in the reference


def test_oscova_lsp_rule_lists_and_documents_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    from oscova_lsp.analysis.rules.registry import RULES, listing
    from oscova_lsp.cli import main

    assert main(["rule"]) == 0
    assert capsys.readouterr().out.splitlines() == listing()
    assert [line.split()[0] for line in listing()] == sorted(RULES)
    assert main(["rule", " osc105"]) == 0  # a code is taken as everywhere else: any case, spaces around
    assert capsys.readouterr().out == RULES["OSC105"].documentation() + "\n"


def test_a_file_whose_checks_fail_gets_one_sentence_from_the_engine_and_the_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oscova_lsp.analysis import engine
    from oscova_lsp.analysis.checks import Checker
    from oscova_lsp.analysis.host import AnalysisHost
    from oscova_lsp.lsp.publisher import DiagnosticsPublisher

    make_workspace(tmp_path, {"a.agent.yaml": "id: a\n"})
    path = str(tmp_path / "a.agent.yaml")
    host = AnalysisHost([str(tmp_path)])
    root = host.root_of(path)
    host.install(root, host.load(root))

    def too_deep(*args: object, **kwargs: object) -> list[object]:
        raise RecursionError("maximum recursion depth exceeded")

    with monkeypatch.context() as patch:  # a check fails: the engine's last resort
        patch.setattr(Checker, "check", too_deep)
        by_engine = host.snapshot().diagnostics(path)
    with monkeypatch.context() as patch:  # the lint step after the checks fails: the publisher's
        patch.setattr(engine, "apply_lint", too_deep)
        by_server = DiagnosticsPublisher(None, lambda: host, None, None).diagnostics(path)  # type: ignore[arg-type]
    assert [(d.code, d.message) for d in by_engine] == [("OSC001", "the file could not be checked (it nests too deeply)")]
    assert [(d.code, d.message, d.severity) for d in by_server] == [(d.code, d.message, d.severity) for d in by_engine]


def test_a_finding_of_the_parse_carries_its_fix_as_a_fix(tmp_path: Path) -> None:
    from oscova_lsp.analysis.diagnostics import Fix, TextEdit
    from oscova_lsp.analysis.files import parse_definition
    from oscova_lsp.analysis.text import Range

    path = str(tmp_path / "a.agent.yaml")
    [problem] = parse_definition(path, "id: a\ndescripton: typo\n").problems
    assert problem.code == "OSC003"
    assert problem.fix == Fix("Rename to `description`", (TextEdit(path, Range.of(1, 0, 1, 10), "description"),))


CODES = ["osc1", " OSC101 ", "Osc0", "OSC", "osc105", "E501", "OSC999", "OSC1O1", "OSCX", "OSC 1"]


@pytest.mark.parametrize("code", CODES)
def test_a_code_is_taken_alike_by_the_command_line_the_settings_and_lint(tmp_path: Path, code: str) -> None:
    import argparse

    from oscova_lsp.cli.common import codes_argument as _codes
    from oscova_lsp.lsp.settings import Settings

    try:
        by_cli: frozenset[str] | None = _codes(code)
    except argparse.ArgumentTypeError:
        by_cli = None
    settings = Settings.parse({"ignore": [code]})
    by_settings = settings.ignore if not settings.problems else None
    host = f'[models.default]\nmodel = "m"\n[lint]\nignore = ["{code}"]\n'
    ws = make_workspace(tmp_path, {"oscova.toml": host}, host=None)
    refused_in_lint = [d.message for d in ws.diagnostics("oscova.toml", "OSC002")]
    assert by_cli == by_settings
    assert (by_cli is None) == bool(refused_in_lint)
    if by_cli is not None:
        assert by_cli == {code.strip().upper()}


def test_the_engine_key_covers_every_module_that_computes_facts_or_checks() -> None:
    # Cached facts and results are reused only under the same engine key: a rule module edited in place must
    # change it, wherever the module sits in the analysis package.
    from oscova_lsp.analysis.cache_keys import engine_sources

    sources = {Path(p).resolve() for p in engine_sources()}
    analysis = {p.resolve() for p in (SERVER / "analysis").rglob("*.py")}
    assert analysis <= sources
    assert (ROOT / "runtime" / "oscova_runtime" / "catalogue.py").resolve() in sources


def test_strongly_connected_components_of_a_deep_ring_and_a_tail() -> None:
    from oscova_lsp.analysis.graph import path_between, strongly_connected_components

    ring = [f"a{i}" for i in range(5000)]  # deeper than the recursion limit
    edges = {node: [ring[(i + 1) % len(ring)]] for i, node in enumerate(ring)}
    edges["tail"] = ["a0"]
    components = strongly_connected_components(edges)
    assert len({components[node] for node in ring}) == 1
    assert components["tail"] != components["a0"]
    assert path_between(edges, "tail", "a2") == ["tail", "a0", "a1", "a2"]
    assert path_between(edges, "a0", "tail") is None
