"""What the server offers, written once without pygls so that `launch` can answer `initialize` before
pygls and lsprotocol (half a second of imports) are loaded. `server` registers its features with the same
options, and a test checks the two agree."""

from __future__ import annotations

from typing import Any

from .. import __version__

SERVER_NAME = "oscova-lsp"
COMPLETION_TRIGGERS = [" ", "{", "%", "|", "'", '"', "/", "[", ",", "-"]
DIAGNOSTIC_IDENTIFIER = "oscova"
WATCHED_GLOBS = ["**/*.agent.yaml", "**/*.agent.yml", "**/*.j2", "**/*.jinja", "**/*.jinja2",
                 "**/oscova.toml", "**/pyproject.toml", "**/*.eval.yaml", "**/*.eval.yml"]
CODE_GLOBS = ["**/*.py"]
"""The workspace's code, watched too: a change restarts the run host, which imported it (`runhost/client.py`)."""
COMMANDS = ("oscova.runAgent", "oscova.previewPrompt", "oscova.cancelRun", "oscova.evictAgent",
            "oscova.invalidateAgents", "oscova.invalidateAll", "oscova.listAgents",
            "oscova.listTests", "oscova.runTest", "oscova.saveTestCase", "oscova.compareRuns", "oscova.review",
            "oscova.listEvals", "oscova.runEval")
"""The `workspace/executeCommand` commands (docs/editors.md), in the order the server registers them."""


def _client_has(capabilities: Any, *path: str) -> bool:
    current = capabilities
    for part in path:
        if not isinstance(current, dict) or part not in current:
            return False
        current = current[part]
    return bool(current) or current == {}


def server_capabilities(client: dict[str, Any]) -> dict[str, Any]:
    """The `capabilities` of the `initialize` result, as JSON, for the client's capabilities."""
    caps: dict[str, Any] = {
        "positionEncoding": "utf-16",
        "textDocumentSync": {"openClose": True, "change": 2, "save": True},
        "completionProvider": {"triggerCharacters": COMPLETION_TRIGGERS, "resolveProvider": False},
        "hoverProvider": True,
        "definitionProvider": True,
        "referencesProvider": True,
        "documentSymbolProvider": True,
        "codeActionProvider": {"codeActionKinds": ["quickfix"]},
        "codeLensProvider": {"resolveProvider": True},
        "documentLinkProvider": {"resolveProvider": False},
        "renameProvider": {"prepareProvider": True} if _client_has(
            client, "textDocument", "rename", "prepareSupport") else True,
        "workspaceSymbolProvider": {"resolveProvider": False},
        "executeCommandProvider": {"commands": list(COMMANDS)},
        "inlayHintProvider": {"resolveProvider": False},
        "diagnosticProvider": {"identifier": DIAGNOSTIC_IDENTIFIER, "interFileDependencies": True,
                               "workspaceDiagnostics": True},
        "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}, "fileOperations": {}},
    }
    sync = client.get("textDocument", {}).get("synchronization") if isinstance(client.get("textDocument"), dict) else None
    if isinstance(sync, dict):
        # pygls answers False where the client states the capability at all; mirror it exactly.
        for key in ("willSave", "willSaveWaitUntil"):
            if sync.get(key) is not None:
                caps["textDocumentSync"][key] = False
    return caps


def initialize_result(params: Any) -> dict[str, Any]:
    client = params.get("capabilities") if isinstance(params, dict) else None
    return {
        "capabilities": server_capabilities(client if isinstance(client, dict) else {}),
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }
