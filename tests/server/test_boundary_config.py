"""Configuration and client input cannot widen what the server does: a collector named by the
workspace gets no credentials (said once in the output channel), unknown codes in settings are a warning
and never blank the editor, trust is a boolean, a command's `uri` outside every opened folder is refused,
and a warm start from the cache never hides a grant that now leads elsewhere.

Each test spawns the server over stdio as an editor does (pytest-lsp's client)."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from oscova_lsp.analysis import cache_files
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities, make_test_lsp_client

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.host_files import MODELS
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.run_workspace import host_toml, write_workspace

from .conftest import SERVER_COMMAND
from .test_warm_start import stop

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOKEN = "otlp-token-lsp-83c1f0a2"
KEY_VARIABLE = "OSCOVA_BOUNDARY_TEST_KEY"


async def start(root: Path, *, env: dict[str, str] | None = None, options: Any = None,
                folders: list[Path] | None = None, capabilities: str = "neovim@v0.7.0") -> LanguageClient:
    client = make_test_lsp_client()

    @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:
        return None

    @client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    def ask(params: lsp.ShowMessageRequestParams) -> None:
        return None

    await client.start_io(*SERVER_COMMAND, env={**os.environ, **(env or {})}, cwd=str(root))
    given = [lsp.WorkspaceFolder(uri=from_fs_path(str(f)), name=f.name) for f in (folders or [root])]
    await client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities(capabilities), root_uri=given[0].uri if given else None,
        workspace_folders=given, initialization_options=options))
    return client


async def until(condition: Callable[[], Any], timeout: float = 30, what: str = "the condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {timeout:g} s")


async def command(client: LanguageClient, name: str, argument: dict[str, Any] | None = None) -> Any:
    return await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command=name, arguments=[argument] if argument is not None else None))


# -- item 4: a collector named by the workspace is announced once and gets no credentials --------------------


async def test_a_workspace_collector_is_said_once_in_the_output_channel(tmp_path: Path, fake_openai: FakeOpenAI):
    fake_openai.enqueue(Reply(text="one"), Reply(text="two"))
    with OtlpReceiver() as collector:
        root = write_workspace(tmp_path / "ws", host_toml(fake_openai.base_url, KEY_VARIABLE, extra=(
            f'\n[telemetry]\notlp_endpoint = "{collector.url}"\n')))
        environ = {KEY_VARIABLE: "sk-boundary-test-key-1", "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer {TOKEN}"}
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
            environ[name] = ""
        client = await start(root, env=environ)
        try:
            for text in ("first", "second"):
                result = await command(client, "oscova.runAgent", {"agentId": "echo", "input": text,
                                                                   "uri": from_fs_path(str(root))})
                assert result["status"] == "completed", result
            await until(lambda: len(collector.span_names()) >= 4, what="the spans of both runs")
            notices = [m for m in client.log_messages if "no credentials" in m.message]
            assert len(notices) == 1, [m.message for m in client.log_messages]
            assert f"{collector.url}/v1/traces" in notices[0].message
        finally:
            await stop(client)
        assert TOKEN not in collector.everything()
        assert all("authorization" not in r.headers for r in collector.received())


# -- item 5: a warm start never hides a grant that now leads elsewhere ------------------------------------


def shown(client: LanguageClient) -> dict[str, list[str]]:
    """What the client shows: each file's diagnostic codes and messages (files shown nothing left out)."""
    return {uri: sorted(f"{d.code} {d.message}" for d in items) for uri, items in client.diagnostics.items() if items}


async def scan_ended(client: LanguageClient, timeout: float = 60) -> None:
    await until(lambda: any(isinstance(r, lsp.WorkDoneProgressEnd) for reports in client.progress_reports.values()
                            for r in reports), timeout, "the end of the initial scan")
    await asyncio.sleep(0.5)  # the last publications follow the progress end


async def test_a_warm_start_shows_a_grant_that_became_a_link_to_root(tmp_path: Path, monkeypatch):
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns("broken"))
    environ = {cache_files.ENV_DIR: str(tmp_path / "cache"), cache_files.ENV_OFF: "", "HOME": str(tmp_path / "home")}
    client = await start(root, env=environ)  # a first start reads the workspace and stores its results
    try:
        await scan_ended(client)
        assert shown(client) == {}, "the example workspace is clean"
    finally:
        await stop(client)
    shutil.rmtree(root / "data")
    (root / "data").symlink_to("/", target_is_directory=True)  # no file's text changed
    client = await start(root, env={**environ, "OSCOVA_LSP_TEST_SCAN_DELAY": "2"})
    try:
        await scan_ended(client)
        found = shown(client)
    finally:
        await stop(client)
    researcher = from_fs_path(str(root / "agents" / "researcher.agent.yaml"))
    assert any(m.startswith("OSC044") and "whole file system" in m for m in found.get(researcher, [])), found
    assert any(m.startswith("OSC043") for m in found.get(from_fs_path(str(root / "oscova.toml")), [])), found


# -- item 7: unknown codes in a setting are a warning, and never blank the editor ---------------------------


async def test_a_setting_with_unknown_codes_warns_and_keeps_the_editor_showing(tmp_path: Path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "oscova.toml").write_text(MODELS)
    (root / "a.agent.yaml").write_text("id: a\ninstructions: Hi {{ nobody }}\nmemory: maybe\n")  # OSC101, OSC002
    uri = from_fs_path(str(root / "a.agent.yaml"))
    for options, codes in (({"select": ["E501"]}, ["OSC002", "OSC101"]),
                           ({"select": ["E501", "OSC101"]}, ["OSC101"])):
        client = await start(root, options=options)
        try:
            await until(lambda c=client: c.diagnostics.get(uri), what="the diagnostics of a.agent.yaml")
            assert sorted(str(d.code) for d in client.diagnostics[uri]) == codes
            # The first diagnostics come before pygls (lsp/early.py); the settings' warning with the server.
            await until(lambda c=client: any(m.type == lsp.MessageType.Warning for m in c.messages),
                        what="the settings' warning")
            warnings = [m for m in client.messages if m.type == lsp.MessageType.Warning]
            assert len(warnings) == 1, [m.message for m in client.messages]
            assert "unknown code `E501` (codes look like OSC101 or OSC1)" in warnings[0].message
        finally:
            await stop(client)


# -- item 9: trust is a boolean; a command's `uri` stays inside the opened folders --------------------------


@pytest.mark.parametrize(("options", "trusted", "warned"), [
    ({"workspaceTrusted": True}, True, False),
    (None, True, False),  # a client without the notion (Neovim, Helix): nothing to distrust
    ({}, True, False),
    ({"workspaceTrusted": False}, False, False),
    ({"workspaceTrusted": "false"}, False, True),
    ({"workspaceTrusted": "true"}, False, True),
    ({"workspaceTrusted": "no"}, False, True),
    ({"workspaceTrusted": 0}, False, True),
    ({"workspaceTrusted": 1}, False, True),
    ({"workspaceTrusted": None}, False, True),
    ({"workspaceTrusted": {}}, False, True),
    ({"oscova": {"workspaceTrusted": "false"}}, False, True),
    ({"workspaceTrusted": True, "oscova": {"workspaceTrusted": 0}}, False, True),
])
def test_anything_but_json_true_is_untrusted(options: Any, trusted: bool, warned: bool) -> None:
    from oscova_lsp.lsp.runs import workspace_trust

    found, problems = workspace_trust(options)
    assert found is trusted
    assert bool(problems) is warned
    for problem in problems:
        assert "must be true or false" in problem and "treated as untrusted" in problem


async def test_a_trust_value_of_the_wrong_type_refuses_runs_and_warns(tmp_path: Path, fake_openai: FakeOpenAI):
    root = write_workspace(tmp_path / "ws", host_toml(fake_openai.base_url, None))
    for value in ("false", 0, None, "no"):
        client = await start(root, options={"workspaceTrusted": value})
        try:
            with pytest.raises(JsonRpcException, match="not trusted"):
                await command(client, "oscova.runAgent", {"agentId": "echo", "input": "hi"})
            warning = await until(lambda c=client: [m for m in c.messages if "workspaceTrusted" in m.message],
                                  what="the trust warning")
            assert warning[0].type == lsp.MessageType.Warning
        finally:
            await stop(client)
    assert fake_openai.requests == []


async def test_a_command_uri_outside_every_opened_folder_is_refused(tmp_path: Path, fake_openai: FakeOpenAI):
    root = write_workspace(tmp_path / "ws", host_toml(fake_openai.base_url, None))
    outside = write_workspace(tmp_path / "elsewhere", host_toml(fake_openai.base_url, None),
                              agents={"outsider": "id: outsider\ninstructions: Hi.\n"})
    (tmp_path / "link").symlink_to(outside, target_is_directory=True)
    (root / "agents" / "door").symlink_to(outside, target_is_directory=True)  # a link inside leading out
    client = await start(root)
    try:
        for uri in ("file:///etc/passwd", "file:///etc", from_fs_path(str(outside / "agents" / "outsider.agent.yaml")),
                    from_fs_path(str(tmp_path / "link")), from_fs_path(str(root / "agents" / "door"))):
            for name, argument in (("oscova.listAgents", {}), ("oscova.previewPrompt", {"agentId": "outsider"}),
                                   ("oscova.runAgent", {"agentId": "outsider", "input": "hi"}),
                                   ("oscova.listTests", {}), ("oscova.runTest", {}),
                                   ("oscova.saveTestCase", {"runId": "x"}), ("oscova.evictAgent", {"agentId": "x"})):
                with pytest.raises(JsonRpcException) as refused:
                    await command(client, name, {**argument, "uri": uri})
                assert refused.value.code == -32602, (name, uri, refused.value)  # InvalidParams
                assert "outside every folder the editor opened" in str(refused.value)
        listed = await command(client, "oscova.listAgents", {})
        assert sorted(a["id"] for a in listed) == ["echo", "helper", "lead"]
        inside = await command(client, "oscova.listAgents", {"uri": from_fs_path(str(root / "agents"))})
        assert sorted(a["id"] for a in inside) == ["echo", "helper", "lead"]
    finally:
        await stop(client)
    assert fake_openai.requests == []


# -- item 10: a port out of range is a usage error with a sentence ------------------------------------------


@pytest.mark.parametrize("port", ["99999", "65536", "-1"])
def test_a_tcp_port_out_of_range_exits_2_with_a_sentence(port: str) -> None:
    import subprocess

    result = subprocess.run([*SERVER_COMMAND, "serve", "--tcp", "--port", port], capture_output=True, text=True,
                            timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert f"the port must be a number from 0 to 65535, not {port}" in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
