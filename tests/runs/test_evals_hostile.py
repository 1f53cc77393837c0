"""Evaluations someone else wrote, through the real `oscova-lsp eval` against the local OpenAI-compatible server:
names that are not UTF-8 or hold control characters, assertions and judge replies that would take minutes or
reach the network, a matrix that would never end, and committed results that name files elsewhere or have the
wrong shape. Each is a sentence (or an escaped name), never a traceback, a hang or a lost result."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from tests.support.cli_zygote import module_command
from tests.support.fake_openai import FakeOpenAI, Reply

from .test_cli import cli_env
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


# ------------------------------------------------------------------------------------------- grading


class Tripwire:
    """A listening socket that records every connection made to it (and answers none)."""

    def __init__(self) -> None:
        import socket
        import threading

        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self.listener.close()


def failures(result: subprocess.CompletedProcess[str]) -> list[str]:
    no_traceback(result)
    return [f["message"] for f in json.loads(result.stdout)["evals"][0]["cases"][0]["failures"]]


def test_grading_fetches_no_remote_schema_and_a_schema_cycle_is_a_sentence(tmp_path: Path, fake_openai: FakeOpenAI):
    tripwire = Tripwire()
    try:
        fake_openai.responder = lambda body: Reply(text='{"region": "eu-west"}')
        ws = make_ws(tmp_path / "ws", fake_openai, {"s.eval.yaml": evaluation(
            f'json_schema: {{$ref: "{tripwire.url}/schema.json"}}',
            'json_schema: {$ref: "#"}',
            'json_schema: {type: object, properties: {region: {$ref: "#/properties/region"}}}')})
        result = oscova_eval("--format", "json", cwd=ws)
        assert result.returncode == 1
        remote, cycle, self_cycle = failures(result)
        assert tripwire.connections == 0
        assert remote == (f"run 1: the schema refers to {tripwire.url}/schema.json, which is not fetched: a "
                          "`json_schema` assertion resolves `$ref` only inside its own schema")
        assert cycle == self_cycle == "run 1: the schema refers to itself without end (a `$ref` cycle), so no answer " \
                                      "can be checked against it"
    finally:
        tripwire.close()


BACKTRACKS = "^(a|aa)+$"
"""A pattern whose matching time doubles with each `a` of a text that does not match."""


def test_a_backtracking_regex_or_schema_pattern_fails_its_assertion_within_its_time_budget(
        tmp_path: Path, fake_openai: FakeOpenAI):
    hostile = "a" * 60 + "!"
    fake_openai.responder = lambda body: Reply(text=json.dumps({hostile: hostile}))
    ws = make_ws(tmp_path / "ws", fake_openai, {"r.eval.yaml": evaluation(
        """regex: '^\\{"(a|aa)+":'""",
        f'json_schema: {{type: object, additionalProperties: {{type: string, pattern: "{BACKTRACKS}"}}}}',
        f'json_schema: {{type: object, patternProperties: {{"{BACKTRACKS}": {{}}}}}}',
        'json_schema: {type: object, additionalProperties: false, patternProperties: {"^b": {}}}',
        'regex: "a{3}"')})
    started = time.monotonic()
    result = oscova_eval("--format", "json", cwd=ws)
    assert time.monotonic() - started < 30
    regex, pattern, names, extra = failures(result)
    assert regex == ('run 1: the regex /^\\{"(a|aa)+":/ took longer than 1 s on the answer (130 characters) and was '
                     "stopped")
    assert pattern == (f"run 1: the answer does not validate against the schema: the pattern /{BACKTRACKS}/ took "
                       "longer than 1 s on the answer (61 characters) and was stopped")
    assert names == (f"run 1: the answer does not validate against the schema: the property pattern /{BACKTRACKS}/ "
                     "took longer than 1 s on the answer (61 characters) and was stopped")
    assert extra == (f"run 1: the answer does not validate against the schema: Additional properties are not allowed "
                     f"('{hostile}' was unexpected)")  # and `a{{3}}` matched


def test_a_judge_reply_of_300000_braces_is_a_failed_verdict_at_once(tmp_path: Path, fake_openai: FakeOpenAI):
    def reply(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["content"].startswith("You grade one answer"):
            return Reply(text="{" * 300_000)
        return Reply(text="eu-west")

    fake_openai.responder = reply
    ws = make_ws(tmp_path / "ws", fake_openai, {"j.eval.yaml": evaluation("judge: Names a region.")})
    started = time.monotonic()
    result = oscova_eval("--format", "json", cwd=ws)
    assert time.monotonic() - started < 20
    [message] = failures(result)
    assert message == ("run 1: the judge says it does not meet the rubric: the judge's reply is 300,000 characters, "
                       "over the 20,000 a verdict may take; it was not read")


# ------------------------------------------------------------------------------------------- --rescore


def recorded(tmp_path: Path, fake_openai: FakeOpenAI) -> tuple[Path, Path, dict[str, Any]]:
    """A workspace with one evaluation run and recorded: its folder and its results."""
    fake_openai.responder = lambda body: Reply(text="eu-west")
    ws = make_ws(tmp_path / "ws", fake_openai, {"r.eval.yaml": evaluation("contains: eu-west")})
    assert oscova_eval(cwd=ws).returncode == 0
    [results] = results_of(ws)
    return ws, results, json.loads(results.read_text())


def test_rescore_reads_no_transcript_outside_its_folder(tmp_path: Path, fake_openai: FakeOpenAI):
    ws, results, data = recorded(tmp_path, fake_openai)
    (ws / ".oscova" / "outside").mkdir()
    (ws / ".oscova" / "outside" / "id_rsa").write_text("SECRET-KEY-ONE\n")
    (tmp_path / "id_rsa").write_text("SECRET-KEY-TWO\n")
    (results.parent / "linked.jsonl").symlink_to(tmp_path / "id_rsa")
    run = data["runs"][0]
    data["runs"] = [{**run, "repeat": n + 1, "transcript": name} for n, name in enumerate(
        ["/etc/passwd", "../../outside/id_rsa", "../../../../id_rsa", "linked.jsonl", run["transcript"]])]
    results.write_text(json.dumps(data))
    page = oscova_eval("--rescore", str(results.parent), "--format", "html", cwd=ws)
    no_traceback(page)
    assert page.returncode == 0
    assert "root:" not in page.stdout and "SECRET-KEY" not in page.stdout
    assert page.stdout.count("(the transcript cannot be read: ") == 4
    assert "&quot;record&quot;: &quot;header&quot;" in page.stdout  # the run's own transcript is shown


RUN = {"file": "r.eval.yaml", "case": "c", "model": "default", "repeat": 1}
WRONG_SHAPES: list[Any] = [
    [], None, "runs", 7, {}, {"version": 1, "runs": None}, {"version": 1, "runs": {}}, {"version": 1, "runs": [1]},
    {"version": 1, "runs": [{}]}, {"version": 1, "runs": [{**RUN, "file": 5}]},
    {"version": 1, "runs": [{**RUN, "case": ["c"]}]}, {"version": 1, "runs": [{**RUN, "repeat": "first"}]},
    {"version": 1, "runs": [{**RUN, "tool_calls": "read_file"}]},
    {"version": 1, "runs": [{**RUN, "tool_calls": [{"arguments": 1}]}]},
    {"version": 1, "runs": [{**RUN, "judged": {"r": "pass"}}]}, {"version": 99, "runs": []},
]
"""Sixteen results files of the wrong shape (each but the first five a version-1 file with one thing wrong)."""


def test_a_results_file_of_the_wrong_shape_is_a_sentence(tmp_path: Path, fake_openai: FakeOpenAI):
    ws, results, data = recorded(tmp_path, fake_openai)
    assert len(WRONG_SHAPES) == 16
    shapes = [json.dumps(shape) for shape in WRONG_SHAPES] + ["[" * 100_000, "{not json", "\udcff"]
    for text in shapes:
        results.write_bytes(text.encode("utf-8", "surrogateescape"))
        result = oscova_eval("--rescore", str(results.parent), cwd=ws)
        no_traceback(result)
        assert result.returncode == 2, (text[:80], result.stdout)
        [line] = result.stderr.splitlines()
        shown = os.path.relpath(results, ws)
        assert line.startswith((f"oscova-lsp: {shown} is not the results of an evaluation",
                                f"oscova-lsp: {shown} cannot be read: the file is not valid UTF-8")), (text[:80], line)


# ------------------------------------------------------------------------------------------- the matrix


def test_a_matrix_over_the_limit_is_refused_before_any_run(tmp_path: Path, fake_openai: FakeOpenAI):
    from .test_evals import oscova_eval as run

    fake_openai.responder = lambda body: Reply(text="eu-west")
    models = "".join(f'\n[models.m{n}]\nmodel = "m"\nbase_url = "{fake_openai.base_url}"\n' for n in range(100))
    cases = "".join(f"  - {{name: c{n}, input: hi}}\n" for n in range(100))
    ws = make_ws(tmp_path / "ws", fake_openai, {"small.eval.yaml": evaluation("contains: eu-west")})
    (ws / "oscova.toml").write_text((ws / "oscova.toml").read_text() + models)
    (ws / "wide.eval.yaml").write_text(f"agent: triage\nmodels: [{', '.join(f'm{n}' for n in range(100))}]\n"
                                       f"repeat: 1000\ncases:\n{cases}")
    assert len((ws / "wide.eval.yaml").read_bytes()) < 4096
    checked = subprocess.run(module_command("check", "wide.eval.yaml"), cwd=ws, env=cli_env(), capture_output=True,
                             text=True, timeout=60)
    assert checked.returncode == 1
    assert ("wide.eval.yaml:3:9: OSC057 100 cases × 100 models × 1,000 repeats make 10,000,000 runs, over the "
            "10,000 one evaluation may make") in checked.stdout
    started = time.monotonic()
    for args in (["small.eval.yaml", "--repeat", "100000000"], ["wide.eval.yaml"]):
        result = run(*args, cwd=ws)
        no_traceback(result)
        assert result.returncode == 2
        assert "over the 10,000 one evaluation may make" in result.stderr
    assert "small.eval.yaml: 1 case × 1 model × 100,000,000 repeats make 100,000,000 runs" in \
        run("small.eval.yaml", "--repeat", "100000000", cwd=ws).stderr
    assert time.monotonic() - started < 30 and fake_openai.requests == [] and results_of(ws) == []
