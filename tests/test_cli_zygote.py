"""The warm start of the tests' processes (tests/support/cli_zygote.py) stands in for a fresh interpreter: the
same output and exit status, a `sitecustomize` guard on PYTHONPATH still imported, signals reaching the
process, and the warm path really taken (not a silent fresh start)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.cli_zygote import COLD, module_command

ROOT = Path(__file__).resolve().parents[1]
FRESH = [sys.executable, "-m", "oscova_lsp"]


def test_a_check_prints_and_exits_as_a_fresh_interpreter_does(tmp_path: Path) -> None:
    for args, cwd in ((["check", "--format", "json", "."], ROOT / "examples" / "broken"), (["check", "."], tmp_path)):
        warm = subprocess.run(module_command(*args), cwd=cwd, capture_output=True, text=True, timeout=120)
        fresh = subprocess.run([*FRESH, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
        assert (warm.returncode, warm.stdout, warm.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    assert warm.returncode == 2 and "nothing to check" in warm.stderr


def test_a_sitecustomize_guard_on_pythonpath_is_imported(tmp_path: Path) -> None:
    guard, marker = tmp_path / "guard", tmp_path / "imported"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('yes')\n")
    path = os.pathsep.join(p for p in (str(guard), os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(module_command("--version"), env={**os.environ, "PYTHONPATH": path}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and marker.read_text() == "yes"


def test_a_server_runs_warm_and_a_signal_ends_it_as_it_ends_a_fresh_one(tmp_path: Path) -> None:
    endings = []
    for command in (module_command(), FRESH):
        process = subprocess.Popen(command, cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
        try:
            time.sleep(1.0)  # started (or starting): either way the signal must end it the same way
            if command is not FRESH and not COLD:
                assert b"cli_launch.py" in Path(f"/proc/{process.pid}/cmdline").read_bytes(), "started fresh"
            process.send_signal(signal.SIGTERM)
            endings.append(process.wait(60))
        finally:
            process.kill()
            process.communicate()
    assert endings[0] == endings[1], endings
