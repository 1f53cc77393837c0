"""What a workspace file may make the product send where (SECURITY.md), for tracing: a local OTLP/HTTP
collector on 127.0.0.1 (`tests/support/otlp_receiver.py`) records every request and its headers.

- A collector named by `oscova.toml` gets spans, never the user's credentials (`OTEL_EXPORTER_OTLP_HEADERS`,
  `..._TRACES_HEADERS`), and the first export to it says so once.
- The user's environment wins: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` override
  `[telemetry] otlp_endpoint`, and the environment's headers go to the environment's collector.
- `run --replay` and `oscova-lsp test` export nothing unless asked (`--trace`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall
from tests.support.otlp_receiver import OtlpReceiver

from .conftest import CANARY_KEY, host_toml, make_workspace
from .test_cli import cli_env, oscova

TOKEN = "otlp-token-5b2e9d71c4"
HEADERS = f"authorization=Bearer {TOKEN},x-tenant={TOKEN}-tenant"
NOTICE = "no credentials"
CLEAN = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
         "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER")


def env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in cli_env().items() if k not in CLEAN}
    out.update(extra)
    return out


def traced_workspace(root: Path, fake: FakeOpenAI, collector: str | None) -> Path:
    extra = f'\n[telemetry]\notlp_endpoint = "{collector}"\n' if collector else ""
    return make_workspace(root, fake.base_url, host=host_toml(fake.base_url, extra=extra))


def run_helper(root: Path, fake: FakeOpenAI, environ: dict[str, str]) -> tuple[str, str]:
    """One run of `helper` (a tool call, then an answer); returns its run id and stderr."""
    fake.enqueue(Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"}, "c1")]),
                 Reply(text="The launch is on Tuesday."))
    result = oscova("run", "helper", "--input", "When is the launch?", "--json", cwd=root, env=environ)
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout.splitlines()[0])["runId"]), result.stderr


def no_credential(collector: OtlpReceiver) -> None:
    seen = collector.everything()
    assert TOKEN not in seen and CANARY_KEY not in seen
    assert all("authorization" not in r.headers and "x-tenant" not in r.headers for r in collector.received())


@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"])
def test_a_collector_named_by_the_workspace_gets_spans_but_no_credentials(tmp_path, fake_openai, variable):
    with OtlpReceiver() as collector:
        root = traced_workspace(tmp_path / "ws", fake_openai, collector.url)
        _, stderr = run_helper(root, fake_openai, env(**{variable: HEADERS}))
        names = collector.wait_for_spans(4)
        assert "invoke_agent Helper" in names and "execute_tool read_file" in names
        no_credential(collector)
        assert all(r.path == "/v1/traces" for r in collector.received())
    # said once, naming where spans go and why it gets no credentials
    lines = [line for line in stderr.splitlines() if NOTICE in line]
    assert len(lines) == 1, stderr
    assert f"{collector.url}/v1/traces" in lines[0] and "oscova.toml" in lines[0] and variable in lines[0]


def test_the_users_traces_endpoint_wins_over_the_workspaces(tmp_path, fake_openai):
    with OtlpReceiver() as users, OtlpReceiver() as workspaces:
        root = traced_workspace(tmp_path / "ws", fake_openai, workspaces.url)
        _, stderr = run_helper(root, fake_openai, env(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=f"{users.url}/v1/traces",
                                                      OTEL_EXPORTER_OTLP_HEADERS=HEADERS))
        users.wait_for_spans(4)
        # the environment named this collector: it gets the environment's headers, the workspace's gets nothing
        assert all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in users.received())
        assert workspaces.received() == []
        assert NOTICE not in stderr


def test_the_users_base_endpoint_wins_over_the_workspaces(tmp_path, fake_openai):
    with OtlpReceiver() as users, OtlpReceiver() as workspaces:
        root = traced_workspace(tmp_path / "ws", fake_openai, workspaces.url)
        run_helper(root, fake_openai, env(OTEL_EXPORTER_OTLP_ENDPOINT=users.url,
                                          OTEL_EXPORTER_OTLP_TRACES_HEADERS=HEADERS))
        users.wait_for_spans(4)
        assert all(r.path == "/v1/traces" and r.headers.get("x-tenant") == f"{TOKEN}-tenant" for r in users.received())
        assert workspaces.received() == []


def test_tracing_turned_off_in_the_environment_stays_off(tmp_path, fake_openai):
    with OtlpReceiver() as workspaces:
        root = traced_workspace(tmp_path / "ws", fake_openai, workspaces.url)
        run_helper(root, fake_openai, env(OTEL_SDK_DISABLED="true"))
        run_helper(root, fake_openai, env(OTEL_TRACES_EXPORTER="none"))
        assert workspaces.received() == []


def test_replay_and_agent_tests_export_nothing_unless_asked(tmp_path, fake_openai):
    root = traced_workspace(tmp_path / "ws", fake_openai, None)
    run_id, _ = run_helper(root, fake_openai, env())
    saved = oscova("test", "--save", run_id, cwd=root, env=env())
    assert saved.returncode == 0, saved.stderr
    with OtlpReceiver() as users, OtlpReceiver() as workspaces:
        (root / "oscova.toml").write_text(host_toml(fake_openai.base_url,
                                                    extra=f'\n[telemetry]\notlp_endpoint = "{workspaces.url}"\n'))
        for environ in (env(), env(OTEL_EXPORTER_OTLP_ENDPOINT=users.url, OTEL_EXPORTER_OTLP_HEADERS=HEADERS)):
            replayed = oscova("run", "helper", "--replay", run_id, cwd=root, env=environ)
            assert replayed.returncode == 0, replayed.stderr
            tested = oscova("test", cwd=root, env=environ)
            assert tested.returncode == 0, tested.stdout + tested.stderr
        assert users.received() == [] and workspaces.received() == [], "offline means no span leaves the machine"

        # asked for: spans go out, by the same rules as a run's
        replayed = oscova("run", "helper", "--replay", run_id, "--trace", cwd=root, env=env(OTEL_EXPORTER_OTLP_HEADERS=HEADERS))
        assert replayed.returncode == 0, replayed.stderr
        assert "invoke_agent Helper" in workspaces.wait_for_spans(4)
        tested = oscova("test", "--trace", cwd=root, env=env(OTEL_EXPORTER_OTLP_ENDPOINT=users.url))
        assert tested.returncode == 0, tested.stdout + tested.stderr
        assert "invoke_agent Helper" in users.wait_for_spans(4)
        no_credential(workspaces)
    assert fake_openai.requests[2:] == [], "the replays never asked the model"
