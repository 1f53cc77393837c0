"""`oscova-lsp test`, `run --replay` and `diff` on files an attacker or a careless user leaves in a workspace: a
FIFO, links to `/proc/self/fd/0`, `/dev/zero`, `/etc/shadow` or any file
outside the workspace, a `.oscova/tests` folder leading out, a full disk and a read-only `.oscova/runs/`.

Each refused file gets a sentence and every other case keeps its result; nothing hangs (every command has a
deadline, and stdin is a pipe kept open, so a reader of `/proc/self/fd/0` would wait forever), nothing is
read whole, nothing is written (or re-moded) outside the workspace.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli_zygote import module_command
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.run_workspace import write_workspace
from tests.support.special_files import READ_ONLY_WORDS, mounted_tmpfs, read_only

from .conftest import host_toml
from .test_cli import cli_env

DEADLINE = 30
"""Seconds any one command may take; on the unchanged code a FIFO or stdin link hung until killed."""
LEADS_OUT = "it is a symlink that leads outside the workspace root"
RUN_ID = "f00dcafe0001"
TRANSCRIPT = f"20260101T000000-echo-{RUN_ID}.jsonl"


def oscova(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command line with stdin a pipe that stays open: a read of the process's stdin never ends."""
    read_end, write_end = os.pipe()
    try:
        return subprocess.run(module_command(*args), cwd=cwd, env=cli_env(), stdin=read_end,
                              capture_output=True, text=True, timeout=DEADLINE)
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, _server: FakeOpenAI) -> Path:
    """A workspace with one recorded run of `echo` (`.oscova/runs/TRANSCRIPT`) saved as the case `good`."""
    root = write_workspace(tmp_path_factory.mktemp("recorded") / "ws", host_toml(_server.base_url))
    _server.reset()
    _server.enqueue(Reply(text="hello"))
    run = oscova("run", "echo", "--input", "Say hello", "--json", cwd=root)
    assert run.returncode == 0, run.stderr
    made = Path(json.loads(run.stdout.splitlines()[0])["transcript"])
    made.rename(made.with_name(TRANSCRIPT))
    saved = oscova("test", "--save", RUN_ID, "--name", "good", cwd=root)
    assert saved.returncode == 0, saved.stderr
    return root


@pytest.fixture
def ws(recorded: Path, tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(recorded, root, symlinks=True)
    return root


def _outside_copy(path: Path) -> None:
    """A link to a good transcript that lies outside the workspace."""
    outside = path.parents[3] / "outside.jsonl"
    shutil.copyfile(path.parents[1] / "runs" / TRANSCRIPT, outside)
    os.symlink(outside, path)


HOSTILE: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (lambda p: os.mkfifo(p), "it is a FIFO, not a regular file"),
    "stdin": (lambda p: os.symlink("/proc/self/fd/0", p), LEADS_OUT),
    "zero": (lambda p: os.symlink("/dev/zero", p), LEADS_OUT),
    "shadow": (lambda p: os.symlink("/etc/shadow", p), LEADS_OUT),
    "outside": (_outside_copy, LEADS_OUT),
}


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    text = result.stdout + result.stderr
    assert "Traceback" not in text and "internal error" not in text, text


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_test_refuses_a_hostile_case_with_its_reason_and_keeps_every_other_result(kind: str, ws: Path):
    make, reason = HOSTILE[kind]
    make(ws / ".oscova" / "tests" / f"{kind}.jsonl")
    result = oscova("test", cwd=ws)
    no_traceback(result)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "PASS good (echo)" in lines
    refused = lines.index(f"ERROR {kind}")
    assert reason in lines[refused + 1], lines
    assert lines[-1] == "2 cases: 1 passed, 1 could not run"


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_replay_and_diff_refuse_a_hostile_transcript_with_a_sentence(kind: str, ws: Path):
    make, reason = HOSTILE[kind]
    hostile = ws / ".oscova" / "runs" / f"20260101T000001-echo-{kind}.jsonl"
    make(hostile)
    replay = oscova("run", "echo", "--replay", str(hostile), cwd=ws)
    no_traceback(replay)
    assert replay.returncode == 2 and reason in replay.stderr, replay.stderr
    said = [line for line in replay.stderr.splitlines() if not line.startswith("replaying ")]
    assert len(said) == 1, replay.stderr  # one sentence
    diff = oscova("diff", RUN_ID, str(hostile), cwd=ws)
    no_traceback(diff)
    assert diff.returncode == 2 and reason in diff.stderr, diff.stderr


def test_a_case_too_large_is_refused_by_its_size_without_being_read(ws: Path):
    huge = ws / ".oscova" / "tests" / "huge.jsonl"
    with huge.open("wb") as handle:  # sparse: 200 MB that take no disk
        handle.truncate(200_000_000)
    result = oscova("test", cwd=ws)
    no_traceback(result)
    lines = result.stdout.splitlines()
    assert "PASS good (echo)" in lines
    assert "larger than" in lines[lines.index("ERROR huge") + 1] and "200,000,000 bytes" in result.stdout


def test_a_header_root_that_is_not_a_path_is_a_sentence_and_the_other_cases_run(ws: Path):
    good = (ws / ".oscova" / "tests" / "good.jsonl").read_text().splitlines()
    header = json.loads(good[0])
    header["root"] = ":"
    (ws / ".oscova" / "tests" / "colon.jsonl").write_text("\n".join([json.dumps(header), *good[1:]]) + "\n")
    result = oscova("test", cwd=ws)
    no_traceback(result)
    assert "JSONDecodeError" not in result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "PASS good (echo)" in lines
    assert "the header's `root` is not an absolute path" in lines[lines.index("ERROR colon") + 1], lines
    assert lines[-1] == "2 cases: 1 passed, 1 could not run"


# ----------------------------------------------------------------------------------------- writes


def _fingerprint(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) for p in sorted(folder.iterdir())}


@pytest.fixture
def tests_leading_out(ws: Path, tmp_path: Path) -> Path:
    """`.oscova/tests` replaced by a link to a folder outside the workspace holding the same case (mode 0644);
    the agent then drifts from it, so `--update` would rewrite it."""
    outside = tmp_path / "outside-tests"
    shutil.move(str(ws / ".oscova" / "tests"), outside)
    (outside / "good.jsonl").chmod(0o644)
    os.symlink(outside, ws / ".oscova" / "tests")
    definition = ws / "agents" / "echo.agent.yaml"
    definition.write_text(definition.read_text().replace("Repeat the query.", "Repeat the query twice."))
    return outside


def test_save_refuses_a_tests_folder_that_leads_out(ws: Path, tests_leading_out: Path):
    before = _fingerprint(tests_leading_out)
    result = oscova("test", "--save", RUN_ID, "--name", "copy", cwd=ws)
    no_traceback(result)
    assert result.returncode == 2 and "outside the workspace root" in result.stderr, result.stderr
    assert _fingerprint(tests_leading_out) == before


@pytest.mark.parametrize("how", ["the workspace", "the case file"])
def test_update_refuses_a_tests_folder_that_leads_out(how: str, ws: Path, tests_leading_out: Path):
    before = _fingerprint(tests_leading_out)
    paths = [] if how == "the workspace" else [".oscova/tests/good.jsonl"]
    result = oscova("test", *paths, "--update", cwd=ws)
    no_traceback(result)
    assert result.returncode != 0 and "UPDATED" not in result.stdout
    assert "outside the workspace root" in result.stdout + result.stderr, result.stdout + result.stderr
    assert _fingerprint(tests_leading_out) == before  # neither rewritten nor re-moded


# ----------------------------------------------------------------------------- full disk, read-only


def test_a_read_only_runs_folder_still_runs_and_says_the_transcript_was_not_written(ws: Path, fake_openai):
    shutil.rmtree(ws / ".oscova" / "runs")
    fake_openai.enqueue(Reply(text="hello"))
    with read_only(ws / ".oscova" / "runs"):
        result = oscova("run", "echo", "--input", "Say hello", cwd=ws)
    no_traceback(result)
    assert result.returncode == 0 and result.stdout == "hello\n", result.stderr
    assert "✓ completed" in result.stderr
    assert "the transcript could not be written" in result.stderr, result.stderr
    assert READ_ONLY_WORDS[os.geteuid() == 0] in result.stderr, result.stderr
    assert "transcript: " not in result.stderr  # no transcript is named as if it existed


def test_a_full_disk_cuts_the_transcript_and_replay_says_so(ws: Path, fake_openai):
    shutil.rmtree(ws / ".oscova" / "runs")
    runs = ws / ".oscova" / "runs"
    fake_openai.enqueue(Reply(text="hello"))
    with mounted_tmpfs(runs, "size=64k"):
        result = oscova("run", "echo", "--input", "Say hello " + "x" * 25_000, cwd=ws)  # each line holds it
        no_traceback(result)
        assert result.returncode == 0 and result.stdout == "hello\n", result.stderr
        assert "✓ completed" in result.stderr
        assert "the transcript was cut" in result.stderr and "the disk was full" in result.stderr, result.stderr
        [transcript] = runs.glob("*-echo-*.jsonl")
        text = transcript.read_text()
        assert text.endswith("\n")  # never a half line
        replay = oscova("run", "echo", "--replay", str(transcript), cwd=ws)
    no_traceback(replay)
    assert replay.returncode == 2
    assert "incomplete: the disk was full" in replay.stderr and "crash" not in replay.stderr, replay.stderr
