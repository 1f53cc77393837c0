"""End-to-end fixtures: the server as a subprocess over stdio, driven by pytest-lsp with the capabilities
of real VS Code 1.139 (pull diagnostics) and of Neovim 0.7 (push diagnostics)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.support import cli_zygote
from tests.support.fake_openai import FakeOpenAI

HERE = Path(__file__).parent
WORKSPACE = HERE / "workspace"
VSCODE_INITIALIZE = Path("/work/shared/recipes/vscode-1.139-initialize.json")
_LOCAL_VSCODE = HERE / "vscode-1.139-initialize.json"
SERVER_COMMAND = cli_zygote.module_command()
"""`python -m oscova_lsp`, warm-started (tests/support/cli_zygote.py)."""


def vscode_capabilities(converter: Any) -> lsp.ClientCapabilities:
    source = _LOCAL_VSCODE if _LOCAL_VSCODE.exists() else VSCODE_INITIALIZE
    params = json.loads(source.read_text())
    return converter.structure(params["capabilities"], lsp.ClientCapabilities)


def copy_workspace(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    root = tmp_path_factory.mktemp(name) / "ws"
    shutil.copytree(WORKSPACE, root)
    return root


class Editor:
    """A thin editor over pytest-lsp's client: open/change/close documents and read their diagnostics the way
    the client gets them (published, or pulled)."""

    def __init__(self, client: LanguageClient, root: Path, mode: str) -> None:
        self.client = client
        self.root = root
        self.mode = mode
        self.versions: dict[str, int] = {}
        self.published_versions: dict[str, int | None] = {}
        self.registrations: list[lsp.Registration] = []
        self.config_requests = 0
        self.code_lens_refreshes = 0
        """`workspace/codeLens/refresh` requests the server sent (VS Code answers them by asking for lenses again)."""

    def uri(self, rel: str) -> str:
        return from_fs_path(str(self.root / rel))

    def open(self, rel: str, text: str | None = None) -> str:
        uri = self.uri(rel)
        if text is None:
            text = (self.root / rel).read_text()
        self.versions[uri] = 1
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id=_language(rel), version=1, text=text)))
        return uri

    def replace(self, rel: str, text: str) -> int:
        uri = self.uri(rel)
        self.versions[uri] += 1
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))
        return self.versions[uri]

    def edit(self, rel: str, start: tuple[int, int], end: tuple[int, int], text: str) -> int:
        """An incremental change."""
        uri = self.uri(rel)
        self.versions[uri] += 1
        rng = lsp.Range(start=lsp.Position(*start), end=lsp.Position(*end))
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[lsp.TextDocumentContentChangePartial(range=rng, text=text)]))
        return self.versions[uri]

    def close(self, rel: str) -> None:
        uri = self.uri(rel)
        self.versions.pop(uri, None)
        self.client.text_document_did_close(lsp.DidCloseTextDocumentParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri)))

    async def current(self, rel: str) -> list[lsp.Diagnostic]:
        uri = self.uri(rel)
        if self.mode == "push":
            return list(self.client.diagnostics.get(uri, []))
        if uri in self.versions:
            report = await self.client.text_document_diagnostic_async(
                lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
            return list(report.items)
        report = await self.client.workspace_diagnostic_async(lsp.WorkspaceDiagnosticParams(previous_result_ids=[]))
        for item in report.items:
            if item.uri == uri:
                return list(item.items)
        return []

    async def wait_diagnostics(self, rel: str, predicate: Callable[[list[lsp.Diagnostic]], bool],
                               timeout: float = 10) -> list[lsp.Diagnostic]:
        """The document's diagnostics once `predicate` holds; fails the test after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        found: list[lsp.Diagnostic] = []
        while time.monotonic() < deadline:
            found = await self.current(rel)
            if predicate(found):
                return found
            await asyncio.sleep(0.05)
        codes = [(d.code, d.range.start.line, d.range.start.character, d.message) for d in found]
        raise AssertionError(f"diagnostics of {rel} never matched; last: {codes}")

    async def wait_for(self, condition: Callable[[], bool], timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError("condition never held")
            await asyncio.sleep(0.02)

    async def raw_request(self, method: str, params: Any) -> Any:
        """A request sent as raw JSON, bypassing the client's type checks (for malformed params)."""
        protocol = self.client.protocol
        msg_id = f"raw-{time.monotonic_ns()}"
        future = asyncio.get_running_loop().create_future()
        protocol._request_futures[msg_id] = future
        protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await asyncio.wait_for(future, 10)

    async def wait_checked(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for reports in self.client.progress_reports.values():
                if any(isinstance(r, lsp.WorkDoneProgressEnd) for r in reports):
                    return
            await asyncio.sleep(0.05)
        raise AssertionError("the background check never ended")


def _language(rel: str) -> str:
    return "yaml" if rel.endswith((".yaml", ".yml")) else "toml" if rel.endswith(".toml") else "jinja"


def codes(diagnostics: list[lsp.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diagnostics)


CLIENTS = ["vscode", "neovim"]


@dataclass(frozen=True)
class SessionOptions:
    """How a test's editor starts a session: which client it is and what it says in `initialize`."""

    client: str = "vscode"
    """`vscode`: the capabilities real VS Code 1.139 sent (pull diagnostics); or a pytest-lsp preset,
    `neovim@v0.7.0` (push diagnostics), `visual-studio-code` (VS Code 1.65: push)."""
    settings: dict[str, Any] | None = field(default_factory=lambda: {"debounce": 50})
    """The `oscova` section the client answers `workspace/configuration` with (None: no answer set)."""
    initialization_options: Any = None
    client_name: str | None = None
    dismiss_prompts: bool = False
    """Whether `window/showMessageRequest` is answered (with null: dismissed) rather than unknown to the client."""
    wait_checked: float | None = 30
    """Seconds the start may wait for the background check to end (None: do not wait)."""


RUN_CLIENT = SessionOptions(client="vscode", settings=None, client_name="test", wait_checked=None)
"""The client of the run tests: VS Code 1.139, the server's default settings, not waiting for the check."""


def with_trust(options: SessionOptions, trust: bool) -> SessionOptions:
    """`options` saying in `initialize` whether the workspace is trusted."""
    return replace(options, initialization_options={"workspaceTrusted": trust})


def capabilities_of(client: LanguageClient, name: str) -> lsp.ClientCapabilities:
    return vscode_capabilities(client.protocol._converter) if name == "vscode" else client_capabilities(name)


async def start_session(lsp_client: LanguageClient, root: Path, options: SessionOptions = SessionOptions(),
                        folders: list[Path] | None = None) -> Editor:
    """Initializes `lsp_client`'s server on the workspace folder `root` (or `folders`) as `options` say; the
    Editor, also set as `lsp_client.editor`, records the registrations and the published versions."""
    capabilities = capabilities_of(lsp_client, options.client)
    text_document = capabilities.text_document
    ed = Editor(lsp_client, root, "pull" if text_document and text_document.diagnostic else "push")

    @lsp_client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:
        ed.registrations.extend(params.registrations)

    if options.dismiss_prompts:
        @lsp_client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
        def ask(params: lsp.ShowMessageRequestParams) -> None:
            return None

    lsp_client.protocol.fm._features.pop(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, None)  # record versions too

    @lsp_client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def publish(params: lsp.PublishDiagnosticsParams) -> None:
        lsp_client.diagnostics[params.uri] = params.diagnostics
        ed.published_versions[params.uri] = params.version

    @lsp_client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)
    def code_lens_refresh(params: None) -> None:
        ed.code_lens_refreshes += 1

    if options.settings is not None:
        lsp_client.set_configuration(options.settings, section="oscova")
    given = [lsp.WorkspaceFolder(uri=from_fs_path(str(f)), name=f.name) for f in (folders or [root])]
    result = await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=capabilities, root_uri=given[0].uri if given else None, workspace_folders=given,
        initialization_options=options.initialization_options,
        client_info=lsp.ClientInfo(name=options.client_name) if options.client_name else None))
    ed.initialize_result = result  # type: ignore[attr-defined]
    if options.wait_checked is not None:
        await ed.wait_checked(options.wait_checked)
    lsp_client.editor = ed  # type: ignore[attr-defined]
    return ed


async def end_session(lsp_client: LanguageClient, timeout: float = 30) -> None:
    """`shutdown` and `exit`; a server stuck in a check is killed rather than left spinning."""
    try:
        await asyncio.wait_for(lsp_client.shutdown_session(), timeout)
    except TimeoutError:
        server = lsp_client._server  # type: ignore[attr-defined]
        if server is not None and server.returncode is None:
            server.kill()


def write_files(root: Path, files: dict[str, str]) -> Path:
    """`root` holding each of `files` (relative path: text)."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture(scope="module", params=CLIENTS)
def lsp_options(request: pytest.FixtureRequest) -> SessionOptions:
    """The module's editor; by default both, VS Code and Neovim (a module overrides it to pick one)."""
    return SessionOptions(client=request.param, client_name=request.param)


@pytest.fixture(scope="module")
def lsp_workspace(tmp_path_factory: pytest.TempPathFactory, lsp_options: SessionOptions) -> Path:
    """The workspace the module's server opens; by default a copy of tests/server/workspace."""
    return copy_workspace(tmp_path_factory, lsp_options.client.split("@")[0])


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER_COMMAND), scope="module", loop_scope="module")
async def lsp_session(lsp_client: LanguageClient, lsp_workspace: Path, lsp_options: SessionOptions):
    """One server for the module's tests (a subprocess over stdio), its session started and its background
    check ended; the client's `editor` is the Editor over it."""
    await start_session(lsp_client, lsp_workspace, lsp_options)
    yield
    await end_session(lsp_client)


@pytest.fixture(scope="module")
def client(lsp_session: LanguageClient, lsp_options: SessionOptions) -> LanguageClient:
    # `lsp_options` named here too: pytest-lsp asks for the session's fixtures at run time, and a parametrized
    # fixture must be in the test's static closure.
    return lsp_session


@pytest.fixture(scope="module")
def editor(client: LanguageClient) -> Editor:
    return client.editor  # type: ignore[attr-defined]


def read_source(root: Path, rel: str) -> str:
    return (root / rel).read_text()


ANSWER_TIMEOUT = 60.0
"""Seconds a test waits for an answer of the server: generous for a loaded machine, but a bound, so a server
that never answers fails the test instead of hanging the suite."""


async def answered(awaitable: Any, what: str, timeout: float = ANSWER_TIMEOUT) -> Any:
    """The server's answer to a request, or an AssertionError naming it when none came within `timeout`."""
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except TimeoutError:
        raise AssertionError(f"the server did not answer {what} within {timeout:.0f} s") from None


async def stop_server(client: LanguageClient, timeout: float = 30) -> None:
    """Ends the client and its server whatever state a test left them in. pygls's `stop()` only waits for the
    server process to exit: for ever when a test failed before sending `exit`. Closing the server's input ends
    it (end of input: it exits); one that still runs after `timeout` is killed."""
    server = client._server  # type: ignore[attr-defined]
    if server is not None and server.returncode is None:
        if server.stdin is not None and not server.stdin.is_closing():
            server.stdin.close()
        try:
            await asyncio.wait_for(server.wait(), timeout)
        except TimeoutError:
            server.kill()
            await server.wait()
    await asyncio.wait_for(client.stop(), timeout)


__all__ = ["ANSWER_TIMEOUT", "Editor", "answered", "codes", "copy_workspace", "vscode_capabilities", "SERVER_COMMAND", "WORKSPACE", "os", "stop_server"]


@pytest.fixture(scope="module")
def fake() -> Any:
    """A local OpenAI-compatible endpoint (127.0.0.1) for the run tests of a module."""
    server = FakeOpenAI().start()
    yield server
    server.stop()
