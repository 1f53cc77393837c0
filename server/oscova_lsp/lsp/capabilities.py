"""The one table of what the server handles (`FEATURES`), and what it offers, derived from it: the answer to
`initialize`, written without pygls so that `launch` can give it before pygls and lsprotocol (about a second of
imports) are loaded. `handlers.create_server` registers each feature's handler by name from the same table, and
the pygls server gives the same answer to an `initialize` it reads itself (over TCP)."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class Feature:
    """An LSP method the server handles."""

    method: str
    handler: str
    """The name of its handler in `handlers.py`."""
    provider: str | None = None
    """The server capability that advertises it (None: a notification, or covered by another's)."""
    options: Any = True
    """The capability's value."""


FEATURES: tuple[Feature, ...] = (
    Feature("initialize", "initialize"),
    Feature("initialized", "initialized"),
    Feature("shutdown", "shutdown"),
    Feature("textDocument/didOpen", "did_open"),
    Feature("textDocument/didChange", "did_change"),
    Feature("textDocument/didSave", "did_save"),
    Feature("textDocument/didClose", "did_close"),
    Feature("workspace/didChangeWatchedFiles", "did_change_watched_files"),
    Feature("workspace/didChangeConfiguration", "did_change_configuration"),
    Feature("workspace/didChangeWorkspaceFolders", "did_change_folders"),
    Feature("textDocument/diagnostic", "document_diagnostic", "diagnosticProvider", {
        "identifier": DIAGNOSTIC_IDENTIFIER, "interFileDependencies": True, "workspaceDiagnostics": True}),
    Feature("workspace/diagnostic", "workspace_diagnostic"),
    Feature("textDocument/completion", "on_completion", "completionProvider",
            {"triggerCharacters": COMPLETION_TRIGGERS, "resolveProvider": False}),
    Feature("textDocument/hover", "on_hover", "hoverProvider"),
    Feature("textDocument/definition", "on_definition", "definitionProvider"),
    Feature("textDocument/references", "on_references", "referencesProvider"),
    Feature("textDocument/prepareRename", "on_prepare_rename"),
    Feature("textDocument/rename", "on_rename", "renameProvider", {"prepareProvider": True}),
    Feature("textDocument/codeAction", "on_code_action", "codeActionProvider", {"codeActionKinds": ["quickfix"]}),
    Feature("textDocument/codeLens", "on_code_lens", "codeLensProvider", {"resolveProvider": True}),
    Feature("codeLens/resolve", "on_code_lens_resolve"),
    Feature("textDocument/inlayHint", "on_inlay_hint", "inlayHintProvider", {"resolveProvider": False}),
    Feature("textDocument/documentSymbol", "on_document_symbol", "documentSymbolProvider"),
    Feature("workspace/symbol", "on_workspace_symbol", "workspaceSymbolProvider", {"resolveProvider": False}),
    Feature("textDocument/documentLink", "on_document_link", "documentLinkProvider", {"resolveProvider": False}),
    Feature("window/workDoneProgress/cancel", "on_progress_cancel"),
)
"""Every LSP method the server handles (besides `workspace/executeCommand`, the `COMMANDS`), its handler and
what it advertises. A new feature is its handler and one line here."""


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
        **{feature.provider: feature.options for feature in FEATURES if feature.provider is not None},
        "executeCommandProvider": {"commands": list(COMMANDS)},
        "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}, "fileOperations": {}},
    }
    if not _client_has(client, "textDocument", "rename", "prepareSupport"):
        caps["renameProvider"] = True  # LSP: `prepareProvider` only to a client that says it sends prepareRename
    sync = client.get("textDocument", {}).get("synchronization") if isinstance(client.get("textDocument"), dict) else None
    if isinstance(sync, dict):
        # Neither is handled: said so to a client that states either at all.
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
