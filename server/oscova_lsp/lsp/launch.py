"""Starting the server. Over stdio, `initialize` is answered before pygls and lsprotocol are imported
(they take about a second): the first message is read (by `transport`) and answered here from
`capabilities`; the phase before pygls (`early`) then publishes the first diagnostics while a thread imports
the server; every message read is then handed to the server (`early.EarlyPhaseResult`), whose own answer to
`initialize` is dropped, and the server's reader goes on from the bytes already read."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time

from oscova_runtime.framing import Dropped, Framer

from .capabilities import initialize_result
from .transport import read_first, write_message

IMPORT_GATE_ENV = "OSCOVA_LSP_TEST_IMPORT_GATE"
"""Test only: the server's import waits (at most two minutes) until this file exists, so that "before
pygls" is certain however loaded the machine is (tests/server/test_early_phase.py). Unset in real use."""


def _import_server() -> None:
    gate = os.environ.get(IMPORT_GATE_ENV)
    deadline = time.monotonic() + 120
    while gate and not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.02)
    from . import handlers  # noqa: F401  (imports the server, pygls, lsprotocol and the engine)


def _configure_logging() -> None:
    level = os.environ.get("OSCOVA_LSP_LOG", "WARNING").upper()
    logging.basicConfig(level=getattr(logging, level, logging.WARNING), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if "OSCOVA_LSP_LOG" not in os.environ:
        # pygls logs every bad request and failing handler with a traceback; the client gets an error anyway.
        logging.getLogger("pygls").setLevel(logging.CRITICAL)


def serve_stdio(client_pid: int | None = None) -> int:
    _configure_logging()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # Nothing else may write to stdout: it carries the protocol.
    sys.stdout = sys.stderr
    framer = Framer()
    first = read_first(stdin.fileno(), framer, _report)
    if first is None:
        return 0
    message = first.value
    answered = None
    if isinstance(message, dict) and message.get("jsonrpc") == "2.0" and message.get("method") == "initialize" \
            and isinstance(message.get("id"), (int, str)):
        write_message(stdout, {"jsonrpc": "2.0", "id": message["id"],
                               "result": initialize_result(message.get("params"))})
        answered = message["id"]
    if answered is not None and os.name == "posix":  # the phase polls the pipe with `select`
        from .early import EarlyPhase

        early = EarlyPhase(message, stdout).run(stdin.fileno(), framer, _start_loader)
    else:
        from .early import EarlyPhaseResult

        _start_loader().join()
        early = EarlyPhaseResult([first])
    from .handlers import create_server

    server = create_server()
    server.client_pid = client_pid
    server.protocol.suppressed_response = answered  # type: ignore[attr-defined]
    server.publisher.adopt_early(early.published, early.shown, early.versions)
    server.adopt_first(early.first, early.first_texts)
    return server.serve_stdio(framer, early.items, stdin.fileno(), stdout)


def _start_loader() -> threading.Thread:
    """The thread that imports the pygls server (started once the phase before pygls has published)."""
    loader = threading.Thread(target=_import_server, name="oscova-import", daemon=True)
    loader.start()
    return loader


def _report(dropped: Dropped) -> None:
    logging.getLogger(__name__).warning("bad message from the client: %s", dropped.reason)


def loopback_only(host: str) -> str | None:
    """Why `host` may not be listened on, or None: the server runs the workspace's agents and tools for
    whoever connects, so only this machine may."""
    import ipaddress
    import socket  # here: a start over stdio needs neither

    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return f"--host {host!r} does not resolve"
    outside = sorted(a for a in addresses if not ipaddress.ip_address(a.split("%")[0]).is_loopback)
    if outside:
        return (f"--host {host!r} is not a loopback address ({', '.join(outside)}); the server listens on this "
                "machine only (127.0.0.1, ::1 or localhost), since whoever connects can run the workspace's agents")
    return None


def serve_tcp(host: str, port: int, client_pid: int | None = None) -> int:
    _configure_logging()
    refusal = loopback_only(host)
    if refusal is not None:
        print(f"oscova-lsp: {refusal}", file=sys.stderr)
        return 2
    from .handlers import create_server

    server = create_server()
    server.client_pid = client_pid
    return server.serve_tcp(host, port)
