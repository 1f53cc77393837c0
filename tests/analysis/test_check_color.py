"""`oscova-lsp check` in colour at a terminal (and with `--color always` or `FORCE_COLOR`), never when piped, with
`NO_COLOR` or `--color never`; rich is imported only to write in colour. Its `--help` says what PATH and
`--format` are."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from tests.support.cli_zygote import module_command
from tests.support.host_files import MODELS

ANSI = "\x1b["


def broken(root: Path) -> Path:
    (root / "agents").mkdir(parents=True)
    (root / "oscova.toml").write_text(MODELS)
    (root / "agents/caller.agent.yaml").write_text('id: caller\nagent_tools: [nobody]\ninstructions: "{{ x "\n')
    return root


def env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    return {**clean, "TERM": "xterm-256color", **extra}


def check(root: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(module_command("check", *args), cwd=root, env=env(**extra), capture_output=True, text=True,
                          timeout=60)


def test_piped_output_has_no_colour_and_always_has_it(tmp_path: Path) -> None:
    root = broken(tmp_path)
    plain = check(root)
    assert plain.returncode == 1 and "OSC" in plain.stdout, plain.stderr
    assert ANSI not in plain.stdout
    coloured = check(root, "--color", "always")
    assert coloured.returncode == 1, coloured.stderr
    assert ANSI in coloured.stdout
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured.stdout) == plain.stdout  # the same words, in colour


def test_force_color_colours_no_color_and_never_do_not(tmp_path: Path) -> None:
    root = broken(tmp_path)
    assert ANSI in check(root, FORCE_COLOR="1").stdout
    assert ANSI not in check(root, FORCE_COLOR="1", NO_COLOR="1").stdout
    assert ANSI not in check(root, "--color", "never", FORCE_COLOR="1").stdout
    assert ANSI in check(root, "--color", "always", NO_COLOR="1").stdout  # the flag is the last word


def test_at_a_terminal_check_writes_in_colour(tmp_path: Path) -> None:
    root = broken(tmp_path)
    controller, terminal = pty.openpty()
    process = subprocess.Popen(module_command("check"), cwd=root, env=env(), stdin=subprocess.DEVNULL,
                               stdout=terminal, stderr=subprocess.PIPE)
    os.close(terminal)
    out = b""
    try:
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the terminal closed: the process ended
                break
            if not chunk:
                break
            out += chunk
        assert process.wait(timeout=60) == 1
    finally:
        os.close(controller)
    assert ANSI in out.decode(), out


def test_rich_is_imported_only_to_write_in_colour(tmp_path: Path) -> None:
    root = broken(tmp_path)
    probe = ("import sys, oscova_lsp.cli as cli\n"
             "code = cli.main(sys.argv[1:])\n"
             "print('rich' in sys.modules, file=sys.stderr)\n")
    for flags, imported in (((), "False"), (("--color", "always"), "True")):
        done = subprocess.run([sys.executable, "-c", probe, "check", *flags], cwd=root, env=env(),
                              capture_output=True, text=True, timeout=60)
        assert done.stderr.strip().splitlines()[-1] == imported, done.stderr


def test_check_help_says_what_path_format_and_color_are(tmp_path: Path) -> None:
    shown = subprocess.run(module_command("check", "--help"), env=env(COLUMNS="120"), capture_output=True, text=True,
                           timeout=60)
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert re.search(r"PATH (files|a file) .*folders? ", text), shown.stdout
    assert re.search(r"--format \{text,json,sarif,github\} .*SARIF.*GitHub", text), shown.stdout
    assert "--color {auto,always,never}" in text and "NO_COLOR" in text and "FORCE_COLOR" in text
