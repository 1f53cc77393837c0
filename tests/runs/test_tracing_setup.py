"""Tracing is opt-in and optional: without configuration OpenTelemetry is never imported (the server starts
and runs as lean as before); configured without the `[otel]` extra installed, one warning and the run
goes on. Each case runs in a fresh interpreter, so `sys.modules` says what was imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from oscova_lsp.runs import tracing
from oscova_runtime.host_config import HostConfig

from . import delegation
from .conftest import make_workspace
from .test_cli import cli_env

RUN_TWICE = """\
import asyncio, sys
{prelude}
from oscova_lsp.lsp.handlers import create_server
from oscova_lsp.runs import RunService

create_server()
print("after start:", any(m.split(".")[0] == "opentelemetry" for m in sys.modules))

async def main():
    service = RunService(sys.argv[1])
    try:
        for _ in range(2):
            result = await service.run("coordinator", "When is the launch?")
            print("run:", result["status"], result.get("error", ""))
    finally:
        await service.aclose()

asyncio.run(main())
print("after runs:", any(m.split(".")[0] == "opentelemetry" for m in sys.modules))
"""


def _run(root, *, prelude: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    environ = cli_env(**env)
    if "OTEL_EXPORTER_OTLP_ENDPOINT" not in env:
        environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    code = RUN_TWICE.format(prelude=textwrap.dedent(prelude))
    return subprocess.run([sys.executable, "-c", code, str(root)], env=environ, capture_output=True, text=True,
                          timeout=120)


def test_without_configuration_opentelemetry_is_never_imported(tmp_path, fake_openai):
    fake_openai.responder = delegation.responder()
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, agents=delegation.AGENTS)
    proc = _run(root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["after start: False", "run: completed ", "run: completed ",
                                        "after runs: False"]
    assert proc.stderr == ""


def test_configured_without_the_extra_warns_once_and_runs(tmp_path, fake_openai):
    fake_openai.responder = delegation.responder()
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, agents=delegation.AGENTS)
    # OpenTelemetry as if not installed: every import of it fails
    prelude = "sys.modules['opentelemetry'] = None\n"
    proc = _run(root, prelude=prelude, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1:3] == ["run: completed ", "run: completed "]
    assert proc.stderr.splitlines() == [
        "Tracing is configured (http://127.0.0.1:9) but OpenTelemetry is not installed; runs are not traced. "
        "Install it with: pip install 'oscova-lsp[otel]'"]


def test_the_environment_variable_wins_over_oscova_toml():
    config = HostConfig.model_validate({"telemetry": {"otlp_endpoint": "http://collector:4318"}})
    assert tracing.collector(config, {}) == tracing.Collector("http://collector:4318/v1/traces",
                                                              tracing.WORKSPACE_SETTING)
    assert tracing.collector(config, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318"}) == tracing.Collector(
        "http://other:4318/v1/traces", "OTEL_EXPORTER_OTLP_ENDPOINT")
    # the signal's own endpoint is used as given, and wins over the base endpoint
    assert tracing.collector(config, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318",
                                      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://mine:4318/traces"}) == \
        tracing.Collector("http://mine:4318/traces", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    assert tracing.collector(config, {"OTEL_SDK_DISABLED": "true"}) is None
    assert tracing.collector(HostConfig(), {"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}) is None
    assert tracing.collector(None, {}) is None
