"""The process gateway (`oscova_runtime.processes`): a fixed environment, a time limit, bounded output, a
long-lived child with pipes and a memory limit, and git that refuses every command that could write."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from oscova_runtime import processes

PRINT_ENVIRONMENT = "import json, os; print(json.dumps(dict(os.environ)))"


def test_a_child_gets_the_allow_listed_variables_and_nothing_else(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-never-passed")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("GIT_DIR", str(tmp_path))
    monkeypatch.setenv("LC_TIME", "C")
    monkeypatch.setenv("OSCOVA_LSP_JOBS", "3")
    done = processes.run([sys.executable, "-c", PRINT_ENVIRONMENT], cwd=str(tmp_path), env={"EXTRA": "1"})
    seen = json.loads(done.stdout)
    assert "OPENAI_API_KEY" not in seen and "PYTHONPATH" not in seen and "GIT_DIR" not in seen
    assert seen["PATH"] == os.environ["PATH"] and seen["LC_TIME"] == "C" and seen["OSCOVA_LSP_JOBS"] == "3"
    assert seen["EXTRA"] == "1"
    named = processes.environment(names=["OPENAI_API_KEY"])
    assert named["OPENAI_API_KEY"] == "sk-canary-never-passed"


def test_a_command_past_its_time_limit_is_stopped_with_its_children(tmp_path: Path):
    pid_file = tmp_path / "grandchild.pid"
    script = (f"import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
              f"open({str(pid_file)!r}, 'w').write(str(p.pid)); p.wait()")
    started = time.monotonic()
    with pytest.raises(processes.ProcessTimedOut, match=r"did not finish within 2 s and was stopped"):
        processes.run([sys.executable, "-c", script], cwd=str(tmp_path), timeout=2)
    assert time.monotonic() - started < 15
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_output_past_its_bound_is_cut_and_the_command_stopped(tmp_path: Path):
    endless = "import sys\nwhile True: sys.stdout.write('x' * 65536)"
    done = processes.run([sys.executable, "-c", endless], cwd=str(tmp_path), output_limit=1_000_000, timeout=60)
    assert done.truncated and len(done.stdout) == 1_000_000


def test_a_missing_program_is_a_sentence(tmp_path: Path):
    with pytest.raises(processes.ProcessFailed, match="no-such-program-here is not installed"):
        processes.run(["no-such-program-here"], cwd=str(tmp_path))


def test_run_async_is_stopped_when_cancelled(tmp_path: Path):
    async def main() -> None:
        task = asyncio.ensure_future(processes.run_async([sys.executable, "-c", "import time; time.sleep(60)"],
                                                         cwd=str(tmp_path)))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        done = await processes.run_async([sys.executable, "-c", "print('ok')"], cwd=str(tmp_path))
        assert done.stdout.strip() == b"ok" and done.returncode == 0

    asyncio.run(main())


ECHO_SERVER = """\
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    if request["method"] == "allocate":
        try:
            block = bytearray(request["params"] * 1024 * 1024)
            answer = {"id": request["id"], "result": len(block)}
        except MemoryError:
            answer = {"id": request["id"], "error": "MemoryError"}
    else:
        answer = {"id": request["id"], "result": request["params"]}
    print(json.dumps(answer), flush=True)
"""


def test_a_spawned_json_rpc_child_answers_over_its_pipes_within_its_memory_limit(tmp_path: Path):
    child = processes.spawn([sys.executable, "-c", ECHO_SERVER], cwd=str(tmp_path), memory_limit=512 * 1024 * 1024)
    try:
        assert child.stdin is not None and child.stdout is not None

        def ask(method: str, params: object) -> dict[str, object]:
            child.stdin.write(json.dumps({"id": 1, "method": method, "params": params}).encode() + b"\n")
            child.stdin.flush()
            answer: dict[str, object] = json.loads(child.stdout.readline())
            return answer

        assert ask("echo", "hello") == {"id": 1, "result": "hello"}
        assert ask("allocate", 4096) == {"id": 1, "error": "MemoryError"}  # 4 GiB is over the limit
        assert ask("allocate", 16) == {"id": 1, "result": 16 * 1024 * 1024}  # and the child goes on
    finally:
        processes.stop(child)
        child.wait(10)
    assert child.returncode == -9


def test_git_runs_only_commands_that_read(tmp_path: Path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull})
    repository = processes.git_repository(str(tmp_path))
    assert repository is not None and repository.top == os.path.realpath(tmp_path)
    for command in (["diff"], ["status"], ["update-index", "--refresh"], ["checkout", "."], ["-c", "x=y", "status"], []):
        with pytest.raises(processes.ProcessRefused, match="is not a command the gateway runs"):
            processes.git(repository, command)
    assert processes.git(repository, ["rev-parse", "--is-inside-work-tree"]).stdout.strip() == b"true"


FORKED = """
import os, sys, threading
from oscova_runtime.processes import forked
target = sys.argv[1]
if sys.argv[2] == "thread":
    threading.Thread(target=threading.Event().wait, daemon=True).start()

def work():
    if sys.argv[2] == "raise":
        raise RuntimeError("no cache today")
    with open(target, "w") as handle:
        handle.write(str(os.getpid()))

wait = forked(work)
wait()
print(os.getpid(), open(target).read() if os.path.exists(target) else "-")
"""


@pytest.mark.parametrize(("case", "in_a_child"), [("plain", True), ("thread", False)])
def test_forked_work_runs_in_a_child_unless_another_thread_runs(tmp_path: Path, case: str, in_a_child: bool) -> None:
    target = tmp_path / "written"
    done = subprocess.run([sys.executable, "-c", FORKED, str(target), case], capture_output=True, text=True,
                          timeout=60, check=True)
    parent, writer = done.stdout.split()
    assert writer.isdigit() and (parent != writer) is in_a_child  # with another thread running, a fork is not safe: it runs here
    assert done.stderr == ""


def test_forked_work_that_raises_ends_its_child_quietly(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", FORKED, str(tmp_path / "written"), "raise"], capture_output=True,
                          text=True, timeout=60, check=True)
    assert done.stdout.split()[1] == "-"
    assert done.stderr == ""  # no traceback: what it did not write is only a cache not updated
