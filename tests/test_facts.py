"""Facts written in more than one place, tied by a test: each fails when one side changes alone.

The personal variables (the catalogue names them, the configured host binds them), the provider types (the
catalogue lists them, the host builds each), the files the server watches (the client registration, the
file kinds of the analysis and the VS Code manifest), the server's commands (the server advertises them, the
extension and its manifest test name them) and the debounce default (the server, its settings and the VS Code
setting). The TypeScript and JSON sides are read as text: no Node needed.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from oscova_lsp.analysis.files import (
    DEFINITION_SUFFIXES,
    EVAL_SUFFIXES,
    HOST_FILENAMES,
    TEMPLATE_SUFFIXES,
    file_kind,
)
from oscova_lsp.lsp.capabilities import COMMANDS, WATCHED_GLOBS
from oscova_runtime import host as host_module
from oscova_runtime.catalogue import PERSONAL_VARIABLES, PROVIDERS_BY_TYPE
from oscova_runtime.context import AIContext, InvokingContext
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.host import ConfiguredHost
from oscova_runtime.host_config import HostConfig
from oscova_runtime.session import AgentSession

REPO = Path(__file__).resolve().parent.parent
CLIENT = REPO / "vscode-client"
MANIFEST = json.loads((CLIENT / "package.json").read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------ the runtime


def _bound_personal_variables(tmp_path: Path, variables: dict[str, str]) -> set[str]:
    config = HostConfig.model_validate({"host": {"user_id": "alice"}, "variables": variables})
    host = ConfiguredHost(tmp_path, config, [AgentDefinition(id="a", instructions="hi")])
    model = host.personal_model_factory(host.definitions[0])
    context = InvokingContext(agent=None, session=AgentSession(), ai_context=AIContext())
    return set(asyncio.run(model(context)))


def test_the_personal_provider_binds_exactly_the_variables_the_catalogue_names(tmp_path: Path) -> None:
    # The catalogue drives completion, hover and the undefined-variable check; the host renders with these.
    assert _bound_personal_variables(tmp_path, {}) == {v.name for v in PERSONAL_VARIABLES}
    assert _bound_personal_variables(tmp_path, {"team": "Platform"}) == {v.name for v in PERSONAL_VARIABLES} | {"team"}


def test_each_provider_type_of_the_catalogue_has_exactly_one_builder() -> None:
    assert sorted(host_module.PROVIDER_BUILDERS) == sorted(PROVIDERS_BY_TYPE)
    with pytest.raises(RuntimeError, match="memory"):
        host_module.builds("memory")(lambda host, planned, definition, ctx: None)  # a second builder is refused
    assert sorted(host_module.PROVIDER_BUILDERS) == sorted(PROVIDERS_BY_TYPE)


# ------------------------------------------------------------------------------------ watched files


def test_the_server_watches_exactly_the_files_the_analysis_reads() -> None:
    expected = {f"**/*{suffix}" for suffix in (*DEFINITION_SUFFIXES, *TEMPLATE_SUFFIXES, *EVAL_SUFFIXES)} | \
        {f"**/{name}" for name in HOST_FILENAMES}
    assert set(WATCHED_GLOBS) == expected and len(WATCHED_GLOBS) == len(expected)
    for glob in WATCHED_GLOBS:
        assert file_kind("/ws/sub/" + glob.removeprefix("**/").replace("*", "name")) is not None, glob


def test_the_vscode_manifest_names_the_same_file_kinds() -> None:
    contributes = MANIFEST["contributes"]
    jinja = next(language for language in contributes["languages"] if language["id"] == "jinja")
    assert tuple(jinja["extensions"]) == TEMPLATE_SUFFIXES
    assert "yamlValidation" not in contributes  # other tools' *.agent.yaml get no schema pushed onto them
    activation = [event.removeprefix("workspaceContains:") for event in MANIFEST["activationEvents"]
                  if event.startswith("workspaceContains:")]
    assert activation and set(activation) <= set(WATCHED_GLOBS)


# ------------------------------------------------------------------------------------ commands

CLIENT_IDS = {
    "oscova.agentTests": "the Test Explorer controller (testing.ts)",
    "oscova.apiKeyEnvs": "a global-state key (apiKeys.ts)",
    "oscova.evals": "the evaluations' Test Explorer controller (evalTests.ts)",
    "oscova.evalResults": "the evaluation results view's webview type (evalTests.ts)",
    "oscova.runView": "the Run view's webview type (runView.ts)",
    "oscova.status": "the status bar item (statusBar.ts)",
}
"""`oscova.NAME` strings of the extension that are not server commands (nor settings, nor client commands)."""


def _client_sources() -> dict[str, str]:
    return {p.relative_to(CLIENT).as_posix(): p.read_text(encoding="utf-8") for p in sorted((CLIENT / "src").rglob("*.ts"))}


def test_the_manifest_test_lists_the_commands_the_server_advertises() -> None:
    source = (CLIENT / "test" / "manifest.test.ts").read_text(encoding="utf-8")
    listed = re.search(r"const SERVER_COMMANDS = \[(.*?)\];", source, re.S)
    assert listed is not None, "vscode-client/test/manifest.test.ts has no SERVER_COMMANDS list"
    assert re.findall(r"'([^']+)'", listed.group(1)) == list(COMMANDS)


def test_every_server_command_the_extension_sends_is_one_the_server_offers() -> None:
    settings = set(MANIFEST["contributes"]["configuration"]["properties"])
    named = {(path, name) for path, text in _client_sources().items()
             for name in re.findall(r"'(oscova\.[A-Za-z]+)'", text)}
    unknown = sorted(f"{path}: {name}" for path, name in named
                     if name not in COMMANDS and name not in CLIENT_IDS and name not in settings
                     and name not in HOST_FILENAMES)
    assert unknown == [], "the extension names commands the server does not offer (capabilities.COMMANDS)"
    used = {name for _, name in named}
    assert {"oscova.runAgent", "oscova.previewPrompt", "oscova.listAgents", "oscova.listTests"} <= used
    assert set(CLIENT_IDS) <= used, "a client id listed here is no longer used: drop it"


def test_the_client_commands_are_its_own_and_registered() -> None:
    contributed = [c["command"] for c in MANIFEST["contributes"]["commands"]]
    assert all(c.startswith("oscova.client.") and c not in COMMANDS for c in contributed)
    registered = {name for text in _client_sources().values()
                  for name in re.findall(r"(?:command|registerCommand)\('(oscova\.client\.[A-Za-z]+)'", text)}
    assert set(contributed) <= registered, "a command in package.json that the extension never registers"
    menus = {item["command"] for items in MANIFEST["contributes"].get("menus", {}).values() for item in items}
    assert menus <= set(contributed)


# ------------------------------------------------------------------------------------ settings


def test_one_debounce_default_for_the_server_its_settings_and_the_vscode_setting() -> None:
    from oscova_lsp.lsp.publisher import DiagnosticsPublisher
    from oscova_lsp.lsp.settings import DEFAULT_DEBOUNCE_MS, Settings

    publisher = DiagnosticsPublisher(None, lambda: None, lambda coro: None, lambda *path: None)  # type: ignore[arg-type]
    assert publisher.debounce == Settings().debounce == DEFAULT_DEBOUNCE_MS / 1000
    assert MANIFEST["contributes"]["configuration"]["properties"]["oscova.debounce"]["default"] == DEFAULT_DEBOUNCE_MS
