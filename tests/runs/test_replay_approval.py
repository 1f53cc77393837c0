"""Approval is never taken from a file: a recording's approvals are not answers. A live
tool that needs approval asks, in a replay as in a run (`run --replay --live-tools` at a terminal: the
`[y/N]` prompt), and is refused where nobody can answer (stdin not a terminal)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from oscova_lsp.runs import RunService

from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall
from tests.support.terminal import answer_at_a_terminal

from .test_cli import cli_env, oscova


async def record_approved_write(workspace: Path, fake: FakeOpenAI) -> str:
    """A recording marked approved: `write_file` ran with the user's yes; the file it wrote is removed."""
    fake.enqueue(Reply(tool_calls=[ToolCall("write_file", {"path": "data/out.txt", "content": "from the model"}, "w1")]),
                 Reply(text="Written."))

    async def yes(request: dict) -> bool:
        return True

    service = RunService(workspace)
    try:
        result = await service.run("helper", "write it", approve=yes)
    finally:
        await service.aclose()
    assert result["status"] == "completed" and (workspace / "data" / "out.txt").exists()
    header = json.loads(Path(result["transcript"]).read_text().splitlines()[0])
    assert header["record"] == "header" and header["approvals"] is True
    (workspace / "data" / "out.txt").unlink()
    return str(result["transcript"])


async def test_a_replay_without_a_terminal_refuses_the_tool_the_recording_approved(workspace, fake_openai):
    transcript = await record_approved_write(workspace, fake_openai)
    result = oscova("run", "helper", "--replay", transcript, "--live-tools", cwd=workspace)
    assert not (workspace / "data" / "out.txt").exists(), "the recorded approval was not taken as an answer"
    assert result.returncode == 1, result.stderr
    assert "write_file needs approval and there is no terminal to ask: refused" in result.stderr
    assert "← write_file: denied" in result.stderr
    # the recorded results still stand in without --live-tools: nothing runs, nothing is asked
    result = oscova("run", "helper", "--replay", transcript, cwd=workspace)
    assert result.returncode == 0, result.stderr
    assert not (workspace / "data" / "out.txt").exists() and "approval" not in result.stderr


def _replay_at_a_terminal(workspace: Path, transcript: str, answer: bytes) -> tuple[int, str]:
    """`run --replay --live-tools` with a terminal on stdin; `answer` is typed once the prompt shows."""
    code, _, err = answer_at_a_terminal([sys.executable, "-m", "oscova_lsp", "run", "helper", "--replay", transcript,
                                         "--live-tools"], workspace, cli_env(), answer)
    return code, err


async def test_a_replay_at_a_terminal_asks_as_a_run_does(workspace, fake_openai):
    transcript = await record_approved_write(workspace, fake_openai)
    code, err = _replay_at_a_terminal(workspace, transcript, b"n\n")
    assert "? Allow write_file(path=\"data/out.txt\", content=\"from the model\")? [y/N]" in err
    assert code == 1 and not (workspace / "data" / "out.txt").exists()
    code, err = _replay_at_a_terminal(workspace, transcript, b"y\n")
    assert code == 0, err
    assert (workspace / "data" / "out.txt").read_text() == "from the model"
