"""`python -I -S cli_launch.py SOCKET -m ARGS…` or `… SOCKET EXE ARGS…`: `python -m oscova_lsp ARGS…` (or the
console script EXE) as a process of its own, forked by the warm start in tests/support/cli_zygote.py.

This process (stdlib only, no site: ~10 ms) hands its stdin, stdout and stderr, its argv, working folder,
environment, umask and limits to the warm start, forwards the signals it gets to the forked process, and
exits as it did (the same code, or killed by the same signal). When the warm start cannot stand in for a
fresh interpreter (a terminal on a standard stream, other interpreter or locale variables, no warm start
running), it becomes the fresh interpreter instead (`exec`).
"""

import json
import os
import resource
import signal
import socket
import sys

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
LIMITS = ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_NOFILE", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_STACK")


def fresh(target: list[str]) -> None:
    os.execv(target[0], target)


def request(argv: list[str]) -> bytes:
    umask = os.umask(0)
    os.umask(umask)
    limits = {name: resource.getrlimit(getattr(resource, name)) for name in LIMITS}
    body = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask, "limits": limits}
    data = json.dumps(body).encode()
    return len(data).to_bytes(8, "big") + data


def main() -> None:
    path, mode, *args = sys.argv[1:]
    target = [sys.executable, "-m", "oscova_lsp", *args] if mode == "-m" else [mode, *args]
    if any(os.isatty(fd) for fd in (0, 1, 2)):
        fresh(target)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        socket.send_fds(conn, [request(target)], [0, 1, 2])
    except OSError:
        conn.close()
        fresh(target)
    replies = conn.makefile("r")
    first = replies.readline().split()
    if first[:1] != ["pid"]:
        conn.close()
        fresh(target)
    pid = int(first[1])
    for number in FORWARDED:
        signal.signal(number, lambda received, _frame: os.kill(pid, received))
    last = replies.readline().split()
    code = int(last[1]) if last[:1] == ["exit"] else -int(signal.SIGKILL)
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


if __name__ == "__main__":
    main()
