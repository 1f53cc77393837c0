"""A checker CI can trust: every workspace under the paths is checked, nothing checked is never
success, codes and prefixes are honoured everywhere, and the model and path messages say what to do."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from oscova_lsp.analysis.diagnostics import Severity
from oscova_lsp.analysis.engine import Analysis
from oscova_lsp.analysis.lint import LintOptions
from oscova_lsp.lsp.settings import Settings

from tests.support.cli_zygote import script_command
from tests.support.host_files import UNREACHABLE, models_default

from .support import make_workspace

MODELS = models_default(base_url=UNREACHABLE)


def oscova(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("oscova-lsp", path=str(Path(sys.executable).parent))
    assert exe, "the console script `oscova-lsp` is installed"
    return subprocess.run(script_command(exe, *args), cwd=cwd, capture_output=True, text=True, timeout=60)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


# -- item 1: nested workspaces, and nothing checked is never success ----------------------------------------

def test_check_from_a_folder_without_oscova_toml_checks_the_workspace_below(tmp_path: Path) -> None:
    write(tmp_path, {"team-a/oscova.toml": MODELS, "team-a/agents/a.agent.yaml": "id: a\nmemory: maybe\n",
                     "README.md": "# not a workspace\n"})
    for args in (("check",), ("check", ".")):
        result = oscova(*args, cwd=tmp_path)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "team-a/agents/a.agent.yaml:2:9: OSC002" in result.stdout
        assert "All checks passed" not in result.stdout


def test_three_nested_workspaces_one_broken_exits_1_and_names_it(tmp_path: Path) -> None:
    write(tmp_path, {
        "oscova.toml": MODELS,
        "agents/top.agent.yaml": "id: top\n",
        "services/billing/oscova.toml": MODELS,
        "services/billing/agents/bill.agent.yaml": "id: bill\n",
        "services/billing/support/oscova.toml": MODELS,
        "services/billing/support/agents/help.agent.yaml": "id: help\ncontext_providers: [null]\n",
        "tools/oscova.toml": MODELS,
        "tools/agents/tool.agent.yaml": "id: tool\n",
    })
    result = oscova("check", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[:-1] == [line for line in lines[:-1] if line.startswith("services/billing/support/agents/help")]
    assert "OSC010" in lines[0]
    assert lines[-1] == ("Found 1 error in 8 files of 4 workspaces checked; errors in services/billing/support.")
    clean = oscova("check", "services/billing", "tools", cwd=tmp_path)  # a nested one is checked on its own
    assert clean.returncode == 1 and "errors in services/billing/support" in clean.stdout
    assert oscova("check", "tools", cwd=tmp_path).stdout == "All checks passed (2 files of 1 workspace checked).\n"


def test_an_excluded_folder_holds_no_workspace_to_check(tmp_path: Path) -> None:
    write(tmp_path, {"oscova.toml": '[host]\nexclude = ["fixtures"]\n' + MODELS,
                     "agents/a.agent.yaml": "id: a\n",
                     "fixtures/bad/oscova.toml": MODELS, "fixtures/bad/x.agent.yaml": "id: [\n"})
    result = oscova("check", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert oscova("check", "fixtures/bad", cwd=tmp_path).returncode == 1  # named: checked


def test_a_tree_with_no_workspace_exits_2_with_a_sentence(tmp_path: Path) -> None:
    write(tmp_path, {"README.md": "hello\n", "src/app.py": "print('hi')\n", "conf/settings.yaml": "a: 1\n"})
    for fmt in ("text", "json", "sarif", "github"):
        result = oscova("check", "--format", fmt, cwd=tmp_path)
        assert result.returncode == 2, result.stdout
        assert result.stdout == ""
        assert "nothing to check" in result.stderr and "Traceback" not in result.stderr


def test_a_file_that_is_not_checked_exits_2(tmp_path: Path) -> None:
    write(tmp_path, {"oscova.toml": MODELS, "notes.txt": "x\n"})
    result = oscova("check", "notes.txt", cwd=tmp_path)
    assert result.returncode == 2 and "nothing to check" in result.stderr


# -- item 2: prefixes wherever codes are taken ------------------------------------------------------------

PREFIX_FILES = {"oscova.toml": MODELS,
                "a.agent.yaml": "id: a\ninstructions: Hi {{ nobody }}\nmemory: maybe\n"}  # OSC101 + OSC002


def test_ignore_prefixes_on_the_command_line(tmp_path: Path) -> None:
    write(tmp_path, PREFIX_FILES)
    assert oscova("check", cwd=tmp_path).returncode == 1
    only_002 = oscova("check", "--ignore", "OSC1", cwd=tmp_path)
    assert "OSC101" not in only_002.stdout and "OSC002" in only_002.stdout
    none = oscova("check", "--ignore", "OSC0,OSC1", cwd=tmp_path)
    assert none.returncode == 0 and "OSC" not in none.stdout, none.stdout
    selected = oscova("check", "--select", "osc1", cwd=tmp_path)
    assert "OSC101" in selected.stdout and "OSC002" not in selected.stdout


def test_lint_ignore_and_severity_take_prefixes(tmp_path: Path) -> None:
    files = dict(PREFIX_FILES, **{"oscova.toml": MODELS + '[lint]\nignore = ["OSC1"]\n'})
    write(tmp_path, files)
    result = oscova("check", "--format", "json", cwd=tmp_path)
    assert {d["code"] for d in json.loads(result.stdout)} == {"OSC002"}
    (tmp_path / "oscova.toml").write_text(MODELS + '[lint.severity]\nOSC0 = "warning"\nOSC002 = "hint"\n'
                                          'OSC10 = "information"\n')
    found = {d["code"]: d["severity"] for d in json.loads(oscova("check", "--format", "json", cwd=tmp_path).stdout)}
    assert found == {"OSC002": "hint", "OSC101": "information"}  # the most specific entry wins


def test_editor_settings_take_prefixes(tmp_path: Path) -> None:
    write(tmp_path, PREFIX_FILES)
    settings = Settings.parse({"oscova": {"ignore": ["OSC1"], "severity": {"OSC0": "warning"}}})
    analysis = Analysis(str(tmp_path), settings.lint_options())
    analysis.load(jobs=1)
    found = analysis.diagnostics(str(tmp_path / "a.agent.yaml"))
    assert [(d.code, d.severity) for d in found] == [("OSC002", Severity.WARNING)]
    selecting = Settings.parse({"lint": {"select": ["osc10"]}}).lint_options()
    assert selecting == LintOptions(select=frozenset({"OSC10"}), severity={})


def test_suppression_comments_take_prefixes(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\nmemory: maybe  # oscova: ignore[OSC0]\n"})
    assert ws.codes("a.agent.yaml") == []


# -- item 3: OSC041 where a model is named, OSC042 once for a host without [models] --------------------------

def test_a_lint_only_host_reports_one_information_not_an_error_per_agent(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "oscova.toml": '[lint]\nignore = ["OSC107"]\n',
        "a.agent.yaml": "id: a\n",
        "b.agent.yaml": "id: b\n",
        "named.agent.yaml": "id: named\nmodel: local\n",
    }, host=None)
    assert ws.codes("a.agent.yaml") == [] and ws.codes("b.agent.yaml") == []
    [named] = ws.diagnostics("named.agent.yaml")
    assert named.code == "OSC041" and (named.range.start.line, named.range.start.character) == (1, 7)
    assert "has no `[models]`" in named.message and "[models.local]" in named.message
    [host] = ws.diagnostics("oscova.toml")
    assert host.code == "OSC042" and host.severity is Severity.INFORMATION
    result = oscova("check", cwd=tmp_path)
    assert result.stdout.count("OSC042") == 1 and result.stdout.count("OSC041") == 1


def test_the_implicit_default_model_is_reported_when_models_lacks_it(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"oscova.toml": '[models.local]\nmodel = "m"\n', "a.agent.yaml": "id: a\n"},
                        host=None)
    [diagnostic] = ws.diagnostics("a.agent.yaml")
    assert diagnostic.code == "OSC041" and "no `model` is set" in diagnostic.message
    assert ws.codes("oscova.toml") == []


# -- item 7: instructions_file is relative to the definition ----------------------------------------------

def test_instructions_file_message_says_what_it_is_relative_to(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "agents/x.agent.yaml": "id: x\ninstructions_file: templates/billing.j2\n",
        "agents/y.agent.yaml": "id: y\ninstructions_file: ../templates/billing.j2\n",
        "templates/billing.j2": "Bill {{ user_name }}.\n",
    })
    [missing] = ws.diagnostics("agents/x.agent.yaml")
    assert missing.code == "OSC040"
    assert missing.message == ("template `templates/billing.j2` does not exist "
                               "(relative to the definition file agents/x.agent.yaml)")
    assert ws.codes("agents/y.agent.yaml") == []


# -- item 9: the CLI text has the editor's suggestion; the OSC011 fix and message --------------------------

def test_osc101_text_has_the_did_you_mean_of_the_quick_fix(tmp_path: Path) -> None:
    write(tmp_path, {"oscova.toml": MODELS, "a.agent.yaml": "id: a\ninstructions: Hello {{ usr_name }}\n"})
    result = oscova("check", cwd=tmp_path)
    assert "OSC101 `usr_name` is not bound" in result.stdout and "did you mean `user_name`?" in result.stdout


def test_osc011_fix_proposes_the_free_class_name_and_names_the_earlier_entry(tmp_path: Path) -> None:
    host = MODELS + textwrap.dedent("""\
        [providers.ledger]
        class = "billing:LedgerProvider"
        state_keys = ["Billing"]
        [providers.invoice]
        class = "billing:InvoiceProvider"
        state_keys = ["Billing"]
        """)
    ws = make_workspace(tmp_path, {"oscova.toml": host,
                                   "a.agent.yaml": "id: a\ncontext_providers:\n  - ledger\n  - invoice\n"}, host=None)
    [clash] = [d for d in ws.diagnostics("a.agent.yaml") if d.code == "OSC011"]
    assert "the earlier entry `ledger`" in clash.message
    assert [f.title for f in clash.fixes] == ["Set `[providers.invoice] state_keys` to `InvoiceProvider`"]
