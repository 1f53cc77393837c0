"""A real OpenTelemetry collector for the tracing tests: Arize Phoenix (`phoenix serve` on a free loopback port,
its SQLite database in a temporary folder), whose REST API gives the spans back.

Phoenix takes 18 s of CPU to start (it imports a web stack, an ORM and several model SDKs), so one Phoenix
serves the whole test session (one per xdist worker that runs a test needing it). It must start: in CI a
Phoenix that does not come up fails the tests with its log (the test extra installs it); only outside CI,
without Phoenix installed, the tests skip.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

START_TIMEOUT = 180.0
"""Seconds Phoenix may take to answer /healthz (it imports a lot; the machine may be loaded)."""
SPANS_TIMEOUT = 30.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _phoenix_command() -> list[str] | None:
    script = Path(sys.executable).with_name("phoenix")
    if script.exists():
        return [str(script), "serve"]
    found = shutil.which("phoenix")
    return [found, "serve"] if found else None


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - loopback only
        return json.loads(response.read())


class Phoenix:
    def __init__(self, url: str) -> None:
        self.url = url
        self.otlp = url  # Phoenix takes OTLP/HTTP at <url>/v1/traces

    def spans(self) -> list[dict[str, Any]]:
        return _get(f"{self.url}/v1/projects/default/spans?limit=1000")["data"]

    def trace_of(self, conversation_id: str, count: int) -> list[dict[str, Any]]:
        """The spans of the run whose root span names `conversation_id`, once `count` of them arrived."""
        deadline = time.monotonic() + SPANS_TIMEOUT
        found: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            spans = self.spans()
            roots = [s for s in spans if s["attributes"].get("gen_ai.conversation.id") == conversation_id]
            if roots:
                trace_id = roots[0]["context"]["trace_id"]
                found = [s for s in spans if s["context"]["trace_id"] == trace_id]
                if len(found) >= count:
                    return found
            time.sleep(0.25)
        raise AssertionError(f"Phoenix has {len(found)} of the {count} spans of the run after {SPANS_TIMEOUT:g} s")


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            pytest.fail(f"Phoenix exited with {process.returncode} before it was ready:\n"
                        + log.read_text(errors="replace")[-3000:])
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:  # noqa: S310
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"Phoenix did not answer on {url} within {START_TIMEOUT:g} s:\n"
                        + log.read_text(errors="replace")[-3000:])
        time.sleep(0.5)


def serve(folder: Path) -> Iterator[Phoenix]:
    """Phoenix running in `folder` until the generator is closed."""
    command = _phoenix_command()
    if command is None:
        if os.environ.get("CI"):
            pytest.fail("`phoenix` is not installed: the test extra installs arize-phoenix (pip install -e '.[test]')")
        pytest.skip("arize-phoenix is not installed (pip install -e '.[test]')")
    port, grpc_port = _free_port(), _free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(folder), "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(grpc_port), "PHOENIX_HOST": "127.0.0.1", "PHOENIX_TELEMETRY_ENABLED": "false",
           # Only its collector and REST API are used: without its MCP server and agent assistant, whose tools it
           # generates from its whole API at start, it starts in 18 s of CPU rather than 26.
           "PHOENIX_ENABLE_MCP_SERVER": "false", "PHOENIX_DISABLE_AGENT_ASSISTANT": "true"}
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    log_path = folder / "phoenix.log"
    log = log_path.open("wb")
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(process, url, log_path)
        yield Phoenix(url)
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        log.close()
