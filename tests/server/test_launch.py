"""Starting the server: stdio with a fast `initialize`, TCP, the command line's forms, lean imports."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.host_files import MODELS

from .conftest import SERVER_COMMAND

VSCODE = json.loads((Path(__file__).parent / "vscode-1.139-initialize.json").read_text())
HANG_SECONDS = 60


def frame(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frame(stream) -> dict:
    header = b""
    while not header.endswith(b"\r\n\r\n"):
        chunk = stream.read(1)
        if not chunk:
            raise EOFError("the server closed the stream")
        header += chunk
    length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
    return json.loads(stream.read(length))


def session(tmp_path: Path) -> bytes:
    params = dict(VSCODE, rootUri=tmp_path.as_uri(), rootPath=str(tmp_path),
                  workspaceFolders=[{"uri": tmp_path.as_uri(), "name": "t"}], processId=os.getpid())
    return (frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
            + frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            + frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
            + frame({"jsonrpc": "2.0", "method": "exit"}))


@pytest.mark.parametrize("command", [
    SERVER_COMMAND,
    [sys.executable, "-m", "oscova_lsp", "--stdio", "--clientProcessId", str(os.getpid())],
    [sys.executable, "-m", "oscova_lsp", "serve", "--stdio", f"--clientProcessId={os.getpid()}"],
])
def test_initialize_is_answered_once_by_each_command_form(command: list[str], tmp_path: Path):
    """How soon (0.05 s after spawn; the budget is 0.5 s) is measured by benchmarks/server_bench.py: on a shared
    machine a test's timing is luck. A server that never answers is killed after HANG_SECONDS."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    hang = threading.Timer(HANG_SECONDS, proc.kill)  # then read_frame meets the end of the stream
    hang.start()
    try:
        params = dict(VSCODE, rootUri=tmp_path.as_uri(), workspaceFolders=[{"uri": tmp_path.as_uri(), "name": "t"}])
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
        proc.stdin.flush()
        reply = read_frame(proc.stdout)
        assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "oscova-lsp"
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
                         + frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        proc.stdin.flush()
        while True:  # exactly one answer to `initialize`: pygls's own is dropped
            message = read_frame(proc.stdout)
            assert message.get("id") != 1
            if message.get("id") == 2:
                break
            if "method" in message and "id" in message:  # a request from the server
                proc.stdin.write(frame({"jsonrpc": "2.0", "id": message["id"], "result": None}))
                proc.stdin.flush()
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.flush()
        assert proc.wait(10) == 0
    finally:
        hang.cancel()
        proc.kill()
        proc.wait()


def test_a_server_start_never_imports_openai(tmp_path: Path):
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "oscova_lsp"], input=session(tmp_path),
                          capture_output=True, timeout=60)
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines()
                if line.startswith("import time:")]
    assert "oscova_lsp.lsp.server" in imported  # the server did start
    assert not [name for name in imported if name.split(".")[0] == "openai"]


def test_tcp(tmp_path: Path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "oscova_lsp", "serve", "--tcp", "--host", "127.0.0.1",
                             "--port", str(port)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=10)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        with conn:
            conn.sendall(session(tmp_path))
            stream = conn.makefile("rb")
            answers = {}
            while 2 not in answers:
                message = read_frame(stream)
                if "id" in message and "method" not in message:
                    answers[message["id"]] = message
            assert "completionProvider" in answers[1]["result"]["capabilities"]
        assert proc.wait(10) is not None
    finally:
        proc.kill()
        proc.wait()


def test_every_feature_of_the_one_table_is_registered_and_nothing_else():
    """`capabilities.FEATURES` is the one table: what the server advertises and what pygls dispatches to."""
    from oscova_lsp.lsp.capabilities import FEATURES
    from oscova_lsp.lsp.handlers import create_server

    server = create_server()
    assert set(server.protocol.fm.features) == {feature.method for feature in FEATURES}


def test_the_pygls_servers_answer_to_initialize_is_launchs(tmp_path: Path):
    """Over TCP the pygls server reads `initialize` itself; it answers what `launch` answers over stdio before
    pygls is loaded, for VS Code's capabilities and for a client that states none."""
    from .test_tcp import answer, free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "oscova_lsp", "serve", "--tcp", "--port", str(port)],
                            stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        for capabilities in (VSCODE["capabilities"], {}):
            params = {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": capabilities}
            over_stdio = subprocess.run([sys.executable, "-m", "oscova_lsp"], input=frame(
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}) + frame(
                {"jsonrpc": "2.0", "method": "exit"}), capture_output=True, timeout=HANG_SECONDS, cwd=tmp_path)
            from io import BytesIO

            stdio_answer = read_frame(BytesIO(over_stdio.stdout))["result"]
            deadline = time.monotonic() + HANG_SECONDS
            while True:
                try:
                    conn = socket.create_connection(("127.0.0.1", port), timeout=HANG_SECONDS)
                    break
                except OSError:
                    assert time.monotonic() < deadline and proc.poll() is None, "the server never listened"
                    time.sleep(0.1)
            with conn:
                conn.sendall(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
                tcp_answer = answer(conn, 1)
            assert tcp_answer is not None and tcp_answer["result"] == stdio_answer
            assert stdio_answer["capabilities"]["hoverProvider"] is True
            proc.kill()
            proc.wait()
            port = free_port()
            proc = subprocess.Popen([sys.executable, "-m", "oscova_lsp", "serve", "--tcp", "--port", str(port)],
                                    stderr=subprocess.PIPE, cwd=tmp_path)
    finally:
        proc.kill()
        proc.wait()


def test_check_does_not_import_pygls(tmp_path: Path):
    (tmp_path / "oscova.toml").write_text(MODELS)
    (tmp_path / "a.agent.yaml").write_text("id: a\n")
    code = ("import sys; from oscova_lsp.cli import main; rc = main(['check', sys.argv[1]]); "
            "print('PYGLS' if 'pygls' in sys.modules else 'LEAN'); sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("LEAN")
