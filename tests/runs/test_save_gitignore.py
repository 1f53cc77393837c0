"""`test --save` and the `.gitignore` lines that keep run transcripts out of the repository: at a terminal it offers
to add them (y/N), elsewhere it says how; it never writes the file without a yes."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

from tests.support.cli_zygote import module_command

from .test_cli import cli_env, oscova

HOST = '[host]\nuser_id = "me"\n\n[models.default]\nkind = "offline"\nmodel = "offline"\n'
LINES = ".oscova/*\n!.oscova/tests/\n"


def recorded_run(root: Path) -> str:
    (root / "agents").mkdir(parents=True)
    (root / "oscova.toml").write_text(HOST)
    (root / "agents/echo.agent.yaml").write_text("id: echo\ninstructions: Repeat.\n")
    run = oscova("run", "echo", "--input", "hi", cwd=root)
    assert run.returncode == 0, run.stderr
    return re.search(r"-echo-([0-9a-f]+)\.jsonl", run.stderr)[1]  # type: ignore[index]


def save_at_a_terminal(root: Path, run_id: str, answer: bytes) -> tuple[int, str, str]:
    """`test --save RUN_ID` with a terminal on stdin; `answer` is typed once the question shows."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(module_command("test", "--save", run_id), cwd=root, env=cli_env(), stdin=terminal,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(terminal)
    err = b""
    deadline = time.monotonic() + 60
    try:
        while b"[y/N]" not in err and time.monotonic() < deadline and process.poll() is None:
            ready, _, _ = select.select([process.stderr], [], [], 0.2)
            if ready:
                err += os.read(process.stderr.fileno(), 4096)  # type: ignore[union-attr]
        os.write(controller, answer)
        out, rest = process.communicate(timeout=60)
    finally:
        os.close(controller)
        if process.poll() is None:
            process.kill()
    return process.returncode, out.decode(), (err + rest).decode()


def test_at_a_terminal_save_offers_to_add_the_lines_and_adds_them_on_yes(tmp_path: Path) -> None:
    run_id = recorded_run(tmp_path)
    (tmp_path / ".gitignore").write_text("node_modules/")  # a project's own, without a last newline
    code, out, err = save_at_a_terminal(tmp_path, run_id, b"y\n")
    assert code == 0, err
    assert "? Add them to .gitignore? [y/N] " in err
    assert "added them to .gitignore" in out
    assert (tmp_path / ".gitignore").read_text() == "node_modules/\n" + LINES


def test_at_a_terminal_save_leaves_the_gitignore_without_a_yes(tmp_path: Path) -> None:
    run_id = recorded_run(tmp_path)
    code, out, err = save_at_a_terminal(tmp_path, run_id, b"\n")
    assert code == 0, err
    assert "? Add them to .gitignore? [y/N] " in err
    assert not (tmp_path / ".gitignore").exists()


def test_not_at_a_terminal_save_says_how_to_add_the_lines_and_writes_nothing(tmp_path: Path) -> None:
    run_id = recorded_run(tmp_path)
    saved = oscova("test", "--save", run_id, cwd=tmp_path)
    assert saved.returncode == 0, saved.stderr
    assert "[y/N]" not in saved.stdout + saved.stderr
    assert "To add them: printf '%s\\n' '.oscova/*' '!.oscova/tests/' >> .gitignore" in saved.stdout.splitlines()
    assert not (tmp_path / ".gitignore").exists()


def test_save_says_nothing_of_the_gitignore_when_it_already_has_the_lines(tmp_path: Path) -> None:
    run_id = recorded_run(tmp_path)
    (tmp_path / ".gitignore").write_text("dist/\n" + LINES)
    saved = oscova("test", "--save", run_id, cwd=tmp_path)
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout == "saved the case echo: .oscova/tests/echo.jsonl\n"
