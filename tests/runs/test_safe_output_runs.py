"""Runs' terminal output is safe to print: control characters from definitions, models and
tools are escaped (`\\x1b`) in `preview`, `run` (streamed deltas too, newlines, tabs and multi-byte characters
kept), `test`, `diff` and replay; `--json` lines are valid UTF-8 whatever the model sends."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.cli_zygote import module_command
from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall

from .conftest import make_workspace
from .test_cli import cli_env

RAW = (b"\x1b", b"\x07", b"\xc2\x9b")
HOSTILE = {
    "hostile": '''\
        id: hostile
        name: "Hos\\e[1Atile"
        instructions: "Be \\e]0;pwned\\a brief.\\e[2K"
        tools: [read_file]
        workspaces: [data]
        ''',
}


def oscova(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(module_command(*args), cwd=cwd, env=cli_env(), input=b"",
                          capture_output=True, timeout=60)


def safe(result: subprocess.CompletedProcess[bytes]) -> tuple[str, str]:
    """stdout and stderr, which must be valid UTF-8 without a raw control character."""
    for stream in (result.stdout, result.stderr):
        assert not any(c in stream for c in RAW), stream
    return result.stdout.decode("utf-8"), result.stderr.decode("utf-8")


@pytest.fixture
def root(tmp_path: Path, fake_openai: FakeOpenAI) -> Path:
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, agents=HOSTILE)
    (root / "data" / "notes.txt").write_text("Tuesday\x1b]0;from a file\x07.\n")
    return root


def test_preview_escapes_what_the_definition_holds(root: Path):
    out, _ = safe(oscova("preview", "hostile", cwd=root))
    assert "Be \\x1b]0;pwned\\x07 brief.\\x1b[2K" in out


def test_run_escapes_streamed_text_tool_arguments_and_results(root: Path, fake_openai: FakeOpenAI):
    answer = "héllo \x1b]0;title\x07 wörld ✓\n\tnext \x9b2J"
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "notes\x1b[2K.txt"}, "c1")]),
                        Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "c2")]),
                        Reply(text=answer, chunk_size=1))  # one character a chunk: escapes split across deltas
    out, err = safe(oscova("run", "hostile", "--input", "hi", cwd=root))
    assert out == "héllo \\x1b]0;title\\x07 wörld ✓\n\tnext \\x9b2J\n"
    assert '→ read_file(path="notes\\u001b[2K.txt")' in err
    assert "← read_file: Tuesday\\x1b]0;from a file\\x07." in err
    assert "Hos\\x1b[1Atile" in err


def test_run_json_is_valid_utf8_whatever_the_model_sends(root: Path, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(text="half a pair \ud800 and \x9b"))
    result = oscova("run", "hostile", "--input", "hi", "--json", cwd=root)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]
    assert "".join(e["text"] for e in events if e["kind"] == "delta") == "half a pair \\ud800 and \x9b"
    fake_openai.enqueue(Reply(text="half a pair \ud800"))
    out, _ = safe(oscova("run", "hostile", "--input", "hi", cwd=root))
    assert out == "half a pair \\ud800\n"


def test_test_diff_and_replay_escape_the_recorded_text(root: Path, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(text="\x1b]0;first\x07"))
    first = json.loads(oscova("run", "hostile", "--input", "hi", "--json", cwd=root).stdout.splitlines()[0])["runId"]
    assert oscova("test", "--save", first, cwd=root).returncode == 0
    fake_openai.enqueue(Reply(text="\x1b]0;second\x07"))
    second = json.loads(oscova("run", "hostile", "--input", "hi", "--json", cwd=root).stdout.splitlines()[0])["runId"]
    definition = root / "agents" / "hostile.agent.yaml"
    definition.write_text(definition.read_text().replace("brief.", "brief!"))

    result = oscova("test", cwd=root)
    out, _ = safe(result)
    assert result.returncode == 1 and "+Be \\x1b]0;pwned\\x07 brief!\\x1b[2K" in out
    result = oscova("diff", first, second, cwd=root)
    out, _ = safe(result)
    assert result.returncode == 1 and "\\x1b]0;second\\x07" in out
    result = oscova("run", "hostile", "--replay", first, cwd=root)
    _, err = safe(result)
    assert result.returncode == 1 and "brief!\\x1b[2K" in err
