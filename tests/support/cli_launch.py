"""`python -I -S cli_launch.py SOCKET -m ARGS…` or `… SOCKET EXE ARGS…`: `python -m oscova_lsp ARGS…` (or the
console script EXE) as a process of its own, forked by the warm start in tests/support/cli_zygote.py.

This process hands its stdin, stdout and stderr, its argv, working folder, environment, umask and limits to the
warm start, forwards the signals it gets to the forked process, and exits as it did (the same code, or killed by
the same signal). When the warm start cannot stand in for a fresh interpreter (a terminal on a standard stream,
other interpreter or locale variables, no warm start running), it becomes the fresh interpreter instead (`exec`).

It imports only modules built into the interpreter (no site, no `socket`, `signal` or `json`, whose enums and
regular expressions took 30 of this process's 50 ms of CPU; the suite starts several hundred of these): the
request is `marshal`ed, which the warm start, the same interpreter, reads back.
"""

import _signal
import _socket
import marshal
import os
import resource
import sys

FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
LIMITS = ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_NOFILE", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_STACK")


def fresh(target: list[str]) -> None:
    os.execv(target[0], target)


def request(argv: list[str]) -> bytes:
    umask = os.umask(0)
    os.umask(umask)
    limits = {name: resource.getrlimit(getattr(resource, name)) for name in LIMITS}
    body = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask, "limits": limits}
    data = marshal.dumps(body)
    return len(data).to_bytes(8, "big") + data


def send_with_streams(conn: _socket.socket, data: bytes) -> None:
    """`data`, with this process's stdin, stdout and stderr passed along (as `socket.send_fds` does)."""
    fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
    sent = conn.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    while sent < len(data):
        sent += conn.send(data[sent:])


def read_line(conn: _socket.socket, pending: bytearray) -> list[str]:
    """The next line the warm start sends, split into words ([] once it closed the connection)."""
    while b"\n" not in pending:
        chunk = conn.recv(256)
        if not chunk:
            return []
        pending += chunk
    line, _, rest = bytes(pending).partition(b"\n")
    pending[:] = rest
    return line.decode().split()


def main() -> None:
    path, mode, *args = sys.argv[1:]
    target = [sys.executable, "-m", "oscova_lsp", *args] if mode == "-m" else [mode, *args]
    if any(os.isatty(fd) for fd in (0, 1, 2)):
        fresh(target)
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.connect(path)
        send_with_streams(conn, request(target))
    except OSError:
        conn.close()
        fresh(target)
    pending = bytearray()
    first = read_line(conn, pending)
    if first[:1] != ["pid"]:
        conn.close()
        fresh(target)
    pid = int(first[1])
    for name in FORWARDED:
        _signal.signal(getattr(_signal, name), lambda received, _frame: os.kill(pid, received))
    last = read_line(conn, pending)
    code = int(last[1]) if last[:1] == ["exit"] else -_signal.SIGKILL
    if code < 0:
        _signal.signal(-code, _signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


if __name__ == "__main__":
    main()
