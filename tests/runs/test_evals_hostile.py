"""Evaluations someone else wrote, through the real `oscova-lsp eval` against the local OpenAI-compatible server:
names that are not UTF-8 or hold control characters, assertions and judge replies that would take minutes or
reach the network, a matrix that would never end, and committed results that name files elsewhere or have the
wrong shape. Each is a sentence (or an escaped name), never a traceback, a hang or a lost result."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from xml.etree import ElementTree

from tests.support.fake_openai import FakeOpenAI, Reply

from .test_evals import make_ws, oscova_eval

CASE = "agent: triage\ncases:\n  - name: {name}\n    input: hi\n    expect:\n{expect}"


def evaluation(*expect: str, name: str = "c", head: str = "") -> str:
    return head + CASE.format(name=name, expect="".join(f"      - {line}\n" for line in expect))


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr


def results_of(ws: Path) -> list[Path]:
    return sorted((ws / ".oscova" / "evals").glob("*/results.json"))


# ------------------------------------------------------------------------------------------- names


def test_an_evaluation_file_named_with_a_byte_that_is_not_utf8_keeps_its_results(tmp_path: Path,
                                                                                 fake_openai: FakeOpenAI):
    fake_openai.responder = lambda body: Reply(text="eu-west")
    ws = make_ws(tmp_path / "ws", fake_openai, {})
    (ws / os.fsdecode(b"bad\xffname.eval.yaml")).write_text(evaluation("contains: eu-west", head="repeat: 2\n"))
    result = oscova_eval("--format", "json", cwd=ws)
    no_traceback(result)
    assert result.returncode == 0, result.stdout
    assert json.loads(result.stdout)["evals"][0]["file"] == "bad\\xffname.eval.yaml"
    [results] = results_of(ws)
    assert len(json.loads(results.read_bytes().decode("utf-8"))["runs"]) == 2  # valid UTF-8, the runs kept
    again = oscova_eval("--rescore", str(results.parent), "--format", "json", cwd=ws)
    no_traceback(again)
    assert again.returncode == 0 and json.loads(again.stdout)["passed"] == 1  # the name found again


def test_control_characters_in_model_and_case_names_are_escaped_in_the_matrix_and_junit(tmp_path: Path,
                                                                                      fake_openai: FakeOpenAI):
    fake_openai.responder = lambda body: Reply(text="eu-west")
    model = 'evil\\u001b]0;retitled\\u0007'  # as TOML writes it
    extra = f'\n[models."{model}"]\nmodel = "m"\nbase_url = "{fake_openai.base_url}"\n'
    ws = make_ws(tmp_path / "ws", fake_openai, {}, local=None)
    (ws / "oscova.toml").write_text((ws / "oscova.toml").read_text() + extra)
    (ws / "c.eval.yaml").write_text(evaluation("contains: nowhere", name='"bad\\x01case\\e[2J"',
                                               head='models: ["evil\\e]0;retitled\\a", default]\n'))
    text = oscova_eval(cwd=ws)
    no_traceback(text)
    assert text.returncode == 1
    assert "\x1b" not in text.stdout and "\x07" not in text.stdout and "\x01" not in text.stdout
    assert "evil\\x1b]0;retitled\\x07" in text.stdout.splitlines()[1]  # the matrix header
    junit = oscova_eval("--format", "junit", cwd=ws)
    suite = ElementTree.fromstring(junit.stdout)  # well-formed XML
    names = sorted(case.get("name") or "" for case in suite.iter("testcase"))
    assert names == ["bad\\x01case\\x1b[2J [default]", "bad\\x01case\\x1b[2J [evil\\x1b]0;retitled\\x07]"]
