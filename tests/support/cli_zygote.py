"""A warm start for the several hundred `oscova-lsp` processes the tests spawn (servers and commands).

A fresh interpreter spends ~0.5 s of CPU importing the server and its libraries before it does anything; on
2 cores that was a third of the suite. One warm start a test process (`start`) imports them once and, for
each process a test starts through `module_command`/`script_command`, forks a copy that becomes that process:
the launcher's (tests/support/cli_launch.py) stdin, stdout and stderr, argv, working folder, environment,
umask and limits, then `python -m oscova_lsp` (or the console script) run as the interpreter runs it, ended
by the interpreter's own exit (atexit, threads, flushed streams). It is still a process of its own: what it
writes, reads, exits with or is killed by is what the test sees; only the imports are done already. So a
test of what importing does (lean start-up, shadowed modules) starts `sys.executable` itself.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import marshal
import os
import pkgutil
import resource
import runpy
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

LAUNCHER = str(Path(__file__).with_name("cli_launch.py"))
STARTUP_VARIABLES = ("LANG", "LC_ALL", "LC_CTYPE")
"""Besides PYTHON*: the variables a fresh interpreter reads before any test code runs (its stream encodings)."""

SHARED = "OSCOVA_TESTS_WARM_START"
"""The socket of the warm start that the pytest process which started this one runs (xdist's controller runs
one for all its workers), in the environment of the processes it starts."""
NONE_RUNNING = "/nonexistent/oscova-warm-start"
"""The socket named when no warm start was started: the launcher, failing to connect, starts a fresh interpreter."""
_lock = threading.Lock()
_process: subprocess.Popen[bytes] | None = None


COLD = os.environ.get("OSCOVA_TESTS_COLD") == "1"
"""`OSCOVA_TESTS_COLD=1`: every process a fresh interpreter (to compare, or to rule the warm start out)."""


def module_command(*args: str) -> list[str]:
    """`[sys.executable, "-m", "oscova_lsp", *args]`, warm-started."""
    if COLD:
        return [sys.executable, "-m", "oscova_lsp", *args]
    return [sys.executable, "-I", "-S", LAUNCHER, _socket(), "-m", *args]


def script_command(exe: str, *args: str) -> list[str]:
    """The console script `exe` with `args`, warm-started."""
    return [exe, *args] if COLD else [sys.executable, "-I", "-S", LAUNCHER, _socket(), exe, *args]


def _socket() -> str:
    return os.environ.get(SHARED, NONE_RUNNING)


def start() -> None:
    """Starts the warm start (once) for this process and the processes it starts (xdist's workers: one warm
    start imports for all of them), and waits until it listens (processes started meanwhile queue while it
    imports); when it cannot start, the launcher starts fresh interpreters."""
    global _process
    with _lock:
        if _process is None and not COLD and SHARED not in os.environ:
            path = os.path.join(tempfile.mkdtemp(prefix="oscova-zygote-"), "s")
            _process = subprocess.Popen([sys.executable, __file__, path], stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, env=dict(os.environ))
            os.environ[SHARED] = path
            atexit.register(stop)
            deadline = time.monotonic() + 30
            while not os.path.exists(path) and _process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)  # bound before it imports: from here on every process is forked warm


def stop() -> None:
    global _process
    with _lock:
        if _process is not None:
            _process.stdin.close()  # type: ignore[union-attr]  # its end of input: it exits
            try:
                _process.wait(10)
            except subprocess.TimeoutExpired:
                # Still importing (it reads its input only once it serves): a short run on a loaded machine ends
                # before that, and nothing was ever forked from it. Failing the run for it failed passing tests.
                _process.kill()
                _process.wait()
            _process = None
            shutil.rmtree(os.path.dirname(os.environ.pop(SHARED)), ignore_errors=True)


def _startup(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if (k.startswith("PYTHON") and k != "PYTHONPATH") or k in STARTUP_VARIABLES}


def _customizing(env: dict[str, str]) -> list[str] | None:
    """The folders `env`'s PYTHONPATH puts before this process's, when each holds only a `sitecustomize.py`
    (a test's guard, which site imports at start-up); None when it adds anything else (it could shadow a module
    imported here already)."""
    mine, theirs = os.environ.get("PYTHONPATH", ""), env.get("PYTHONPATH", "")
    if theirs == mine:
        return []
    if mine and not theirs.endswith(os.pathsep + mine):
        return None
    folders = [entry for entry in theirs[:len(theirs) - len(mine)].split(os.pathsep) if entry]
    for folder in folders:
        try:
            names = set(os.listdir(folder)) - {"__pycache__"}
        except OSError:
            return None
        if names != {"sitecustomize.py"}:
            return None
    return folders


def _preload() -> None:
    import oscova_lsp
    import oscova_runtime

    for package in (oscova_lsp, oscova_runtime):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.endswith("__main__"):
                try:
                    importlib.import_module(info.name)
                except ImportError:  # an optional extra that is not installed
                    pass
    for name in ("openai", "tiktoken", "jsonschema", "pygls.lsp.server"):  # imported when first needed
        importlib.import_module(name)
    from oscova_runtime import chat_client, tokens

    # The TLS context a process's model clients share (50 ms of CPU to read the CA certificates), for the processes
    # whose SSL_CERT_FILE and SSL_CERT_DIR are this one's; any other builds its own, as a fresh process does.
    chat_client.tls_context()

    # o200k_base (gpt-4o, gpt-4.1...), read and decoded once: 0.7 s of CPU in each of the ~75 processes a run
    # of the suite starts that count tokens with it. Not cl100k_base, which none of them reads: its 34 MB would
    # be copied into the page tables of every fork (~640 a run) and torn down at every exit for nothing.
    for encoding in ("o200k_base",):
        try:
            tokens.openai_encoding(encoding)
        except tokens.TokenizerUnavailable:  # each process then says so itself, as a fresh one does
            pass


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    size = int.from_bytes(data[:8], "big")
    body = data[8:]
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise EOFError
        body += chunk
    return marshal.loads(body), fds


class _Launches:
    """The processes this warm start forked, each with its launcher's connection: the launcher is told the
    process's pid and, once it is reaped here (so its CPU time counts in the test process's `/usr/bin/time`
    and rusage), its exit status; a launcher that is killed takes its process with it. One loop of this
    process does it all (no process between the warm start and each forked one: forking this big a process
    again for each launch cost ~16 ms of CPU)."""

    def __init__(self) -> None:
        self.by_pidfd: dict[int, tuple[int, socket.socket | None]] = {}
        self.launchers: dict[int, int] = {}  # a launcher's connection (fd) -> its process's pidfd

    def watched(self) -> list[int]:
        return [*self.by_pidfd, *self.launchers]

    def start(self, conn: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
        """Forks the process `conn`'s launcher asks for. Returns, in that process only, what it must become."""
        conn.settimeout(10)  # a launcher sends its request as it connects; one that never does is dropped
        try:
            request, fds = _receive(conn)
        except (OSError, EOFError, ValueError):
            conn.close()
            return None
        if len(fds) != 3 or _startup(request["env"]) != _startup(dict(os.environ)) or _customizing(request["env"]) is None:
            for fd in fds:
                os.close(fd)
            _tell(conn, "fresh")
            conn.close()
            return None
        pid = os.fork()
        if pid == 0:
            self.forget()
            conn.close()
            return request, fds
        for fd in fds:
            os.close(fd)
        _tell(conn, f"pid {pid}")
        pidfd = os.pidfd_open(pid)
        self.by_pidfd[pidfd] = (pid, conn)
        self.launchers[conn.fileno()] = pidfd
        return None

    def forget(self) -> None:
        """In a forked process: the other launches' connections and processes are not its own."""
        for pidfd, (_, conn) in self.by_pidfd.items():
            os.close(pidfd)
            if conn is not None:
                conn.close()
        self.by_pidfd.clear()
        self.launchers.clear()

    def handle(self, fd: int) -> None:
        if fd in self.by_pidfd:
            self.reap(fd)
            return
        pidfd = self.launchers[fd]
        pid, conn = self.by_pidfd[pidfd]
        try:
            if conn is not None and conn.recv(1):
                return  # a launcher sends nothing after its request: only its end comes
        except OSError:
            pass
        del self.launchers[fd]  # the launcher was killed: so is its process (reaped when it has ended)
        os.kill(pid, signal.SIGKILL)
        if conn is not None:
            conn.close()
        self.by_pidfd[pidfd] = (pid, None)

    def reap(self, pidfd: int) -> None:
        pid, conn = self.by_pidfd.pop(pidfd)
        _, status = os.waitpid(pid, 0)
        os.close(pidfd)
        if conn is not None:
            self.launchers.pop(conn.fileno(), None)
            _tell(conn, f"exit {os.waitstatus_to_exitcode(status)}")
            conn.close()

    def reap_all(self, within: float) -> None:
        deadline = time.monotonic() + within
        while self.by_pidfd and time.monotonic() < deadline:
            for pidfd in select.select(list(self.by_pidfd), [], [], max(0.0, deadline - time.monotonic()))[0]:
                self.reap(pidfd)


def _tell(conn: socket.socket, line: str) -> None:
    try:
        conn.sendall(f"{line}\n".encode())
    except OSError:  # the launcher is gone; its process, if any, is ended by the loop
        pass


def _serve(listener: socket.socket) -> tuple[dict[str, Any], list[int]]:
    launches = _Launches()
    while True:
        ready = select.select([listener, sys.stdin, *launches.watched()], [], [])[0]
        if sys.stdin in ready:  # the test process ended
            launches.reap_all(within=3.0)
            sys.exit(0)
        for fd in ready:
            if isinstance(fd, int):
                launches.handle(fd)
        if listener in ready:
            conn, _ = listener.accept()
            became = launches.start(conn)
            if became is not None:
                listener.close()
                return became


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """This process turns into `request`'s: its streams, folder, environment, umask and limits."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        os.close(fd)
    folders = _customizing(request["env"]) or []  # before the environment is theirs
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.umask(request["umask"])
    for name, limits in request["limits"].items():
        if resource.getrlimit(getattr(resource, name)) != tuple(limits):
            resource.setrlimit(getattr(resource, name), tuple(limits))
    tempfile.tempdir = None  # looked up again from this environment
    if folders:  # as site does at start-up: the folders first on the path, their sitecustomize imported
        sys.path[0:0] = folders
        sys.modules.pop("sitecustomize", None)
        importlib.import_module("sitecustomize")


def _run(argv: list[str]) -> None:
    if argv[1:3] == ["-m", "oscova_lsp"]:
        sys.argv = ["-m", *argv[3:]]
        sys.path.insert(0, os.getcwd())  # as `python -m` does (oscova_lsp/__main__.py drops it)
        runpy.run_module("oscova_lsp", run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        sys.path.insert(0, os.path.dirname(argv[0]))  # as running a script does
        runpy.run_path(argv[0], run_name="__main__")


def _exit_code(ended: SystemExit) -> int:
    """The status the interpreter exits with on `ended` (printing a non-integer code, as it does)."""
    if ended.code is None or isinstance(ended.code, int):
        return ended.code or 0
    print(ended.code, file=sys.stderr)
    return 1


def _finish(code: int) -> None:
    """The interpreter's exit without tearing down the modules: that teardown touches every object the warm
    start imported, copying its memory (0.4 s of CPU a process, more than the command itself took)."""
    threading._shutdown()  # type: ignore[attr-defined]  # as Py_FinalizeEx: threads, atexit, the streams
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        code = 120
    os._exit(code)


def main() -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sys.argv[1])
    listener.listen(64)
    sys.path[:] = [entry for entry in sys.path if entry != os.path.dirname(__file__)]
    _preload()
    gc.freeze()  # what is imported stays out of the children's collections (fewer copied pages)
    request, fds = _serve(listener)
    _become(request, fds)
    try:
        _run(request["argv"])
    except SystemExit as ended:
        _finish(_exit_code(ended))
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())  # type: ignore[arg-type]
        _finish_by(signal.SIGINT)
    except BaseException:
        sys.excepthook(*sys.exc_info())  # type: ignore[arg-type]
        _finish(1)
    _finish(0)


def _finish_by(number: int) -> None:
    """As the interpreter ends on an uncaught KeyboardInterrupt: killed by SIGINT."""
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)


if __name__ == "__main__":
    main()
