"""The bundled examples, checked through the real command line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import yaml
from oscova_lsp.analysis.rules.registry import RULES
from oscova_runtime.definition import definition_json_schema

from tests.support.cli_zygote import module_command

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(module_command(*args), cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def test_clean_example_workspace_passes() -> None:
    result = run_cli("check", "examples")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("All checks passed")
    assert result.stderr == ""


def test_clean_example_is_realistic() -> None:
    definitions = [yaml.safe_load(p.read_text()) for p in EXAMPLES.glob("agents/*.agent.yaml")]
    assert len(definitions) >= 6
    calling = [d for d in definitions if d.get("agent_tools")]
    assert len(calling) >= 3
    assert any("include" in p.read_text() for p in EXAMPLES.glob("templates/**/*.j2"))
    assert "[providers." in (EXAMPLES / "oscova.toml").read_text()


def test_every_definition_validates_against_the_published_schema() -> None:
    schema = definition_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in EXAMPLES.glob("agents/*.agent.yaml"):
        errors = list(validator.iter_errors(yaml.safe_load(path.read_text())))
        assert not errors, (path, errors)
    broken = yaml.safe_load((EXAMPLES / "broken/agents/schema.agent.yaml").read_text())
    assert list(validator.iter_errors(broken))


EXPECTED_BROKEN = """\
agents/calls.agent.yaml:3:15: OSC020
agents/calls.agent.yaml:3:22: OSC021
agents/duplicate-a.agent.yaml:1:5: OSC005
agents/duplicate-b.agent.yaml:1:5: OSC005
agents/loop-a.agent.yaml:4:15: OSC022
agents/loop-b.agent.yaml:4:15: OSC022
agents/providers.agent.yaml:5:5: OSC010
agents/providers.agent.yaml:6:5: OSC011
agents/providers.agent.yaml:8:16: OSC012
agents/providers.agent.yaml:9:5: OSC013
agents/providers.agent.yaml:10:5: OSC014
agents/schema.agent.yaml:3:1: OSC004
agents/schema.agent.yaml:4:9: OSC002
agents/schema.agent.yaml:5:1: OSC003
agents/syntax.agent.yaml:2:15: OSC001
agents/tools.agent.yaml:2:8: OSC041
agents/tools.agent.yaml:3:20: OSC040
agents/tools.agent.yaml:4:20: OSC030
agents/tools.agent.yaml:4:31: OSC031
agents/workspace-grants.agent.yaml:3:14: OSC043
agents/workspace-grants.agent.yaml:3:14: OSC044
evals/agent.eval.yaml:1:8: OSC050
evals/judge.eval.yaml:2:8: OSC052
evals/judge.eval.yaml:7:9: OSC055
evals/matrix.eval.yaml:2:9: OSC057
evals/tools.eval.yaml:2:19: OSC052
evals/tools.eval.yaml:8:26: OSC051
evals/tools.eval.yaml:9:16: OSC053
evals/tools.eval.yaml:10:22: OSC054
evals/tools.eval.yaml:11:54: OSC056
lint-only/oscova.toml:1:1: OSC042
lint-only/oscova.toml:7:1: OSC045
oscova.toml:3:13: OSC002
oscova.toml:8:1: OSC003
oscova.toml:12:1: OSC004
oscova.toml:26:12: OSC040
templates/agent.j2:1:40: OSC101
templates/agent.j2:2:10: OSC102
templates/agent.j2:3:13: OSC103
templates/agent.j2:3:13: OSC105
templates/agent.j2:4:12: OSC040
templates/cached.j2:3:13: OSC108
templates/environment.j2:1:16: OSC106
templates/memory.j2:1:1: OSC104
templates/orphan.j2:1:1: OSC107
templates/syntax.j2:1:1: OSC100
templates/syntax.j2:1:1: OSC107
"""


def test_broken_example_reports_every_code_at_its_place() -> None:
    result = run_cli("check", ".", cwd=EXAMPLES / "broken")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1].startswith("Found 25 errors, 17 warnings, 3 information, 2 hints in 26 files of 2 workspaces")
    # `path:line:col: CODE message` -> `path:line:col: CODE`
    found = "".join(" ".join(line.split(" ", 2)[:2]) + "\n" for line in lines[:-1])
    assert found == EXPECTED_BROKEN
    assert {line.split()[1] for line in lines[:-1]} == {code for code, rule in RULES.items() if rule.in_check}


def test_editor_only_rules_are_printed_when_selected() -> None:
    hidden = [code for code, rule in RULES.items() if not rule.in_check]
    assert hidden == ["OSC109"]
    result = run_cli("check", ".", "--select", "OSC109", cwd=EXAMPLES / "broken")
    assert result.stdout.splitlines()[0].startswith("templates/agent.j2:5:12: OSC109 `region` is not bound by the `personal` "
                                                    "provider that renders this template (for agent `templated` "
                                                    "instructions): the default always applies"), result.stdout


def test_json_output_carries_lsp_ranges_and_fixes() -> None:
    result = run_cli("check", "--format", "json", "examples/broken")
    assert result.returncode == 1
    items = json.loads(result.stdout)
    null_entry = next(i for i in items if i["code"] == "OSC010")
    assert null_entry["range"] == {"start": {"line": 4, "character": 4}, "end": {"line": 4, "character": 8}}
    assert null_entry["severity"] == "error" and null_entry["source"] == "oscova"
    assert null_entry["fixes"][0]["title"] == "Remove the null entry"
    duplicate = next(i for i in items if i["code"] == "OSC004" and i["path"].endswith(".yaml"))
    assert duplicate["relatedInformation"][0]["range"]["start"]["line"] == 1
