"""`test --save` and the `.gitignore` lines that keep run transcripts out of the repository: at a terminal it offers
to add them (y/N), elsewhere it says how; it never writes the file without a yes."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.cli_zygote import module_command
from tests.support.terminal import answer_at_a_terminal

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
    return answer_at_a_terminal(module_command("test", "--save", run_id), root, cli_env(), answer)


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
