"""Runs from the editor: the `oscova.*` commands, the `Run agent` / `Preview prompt` / token code lenses, streaming
(`oscova/runEvent` and work-done progress), cancellation, tool approval and the workspace-trust gate.

Runs, previews, agent tests and evaluations execute in the run host of their workspace root (`runhost`): a child
process that holds the run service; this module relays their events, approvals and cancellation, and never
imports the workspace's code, streams a model or grades. The `oscova.runAgent` request only awaits its run, so a
slow run never holds up diagnostics or completion.

Three ways stop a run for real, all through `HostedRun.cancel()` (the model's HTTP stream closes, running
tools are cancelled, the result says `cancelled`; a run that does not end stops its run host): `oscova.cancelRun`,
the progress's cancel button (`window/workDoneProgress/cancel`) and `$/cancelRequest` on the run's request, which
`OscovaProtocol` routes here because pygls answers it without stopping the command's coroutine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as lsp
from oscova_runtime.paths import is_inside
from pygls.exceptions import JsonRpcInvalidParams

from ..analysis.agents import agent_file, agent_list
from ..analysis.files import DefinitionFile
from ..analysis.host import AnalysisHost
from ..analysis.workspace import Workspace
from . import convert, wire_json
from .agent_tests import compare_runs, list_tests, run_test, save_test_case
from .capabilities import COMMANDS
from .commands import JsonRpcRequestFailed, read_arguments, scope_of
from .settings import describe_value
from .token_figures import TokenFigures, token_lens

if TYPE_CHECKING:
    from ..runhost.client import HostedRun, RunHost
    from ..wire.commands import AgentListing, PreviewResult
    from ..wire.events import AnyRunEvent, ApprovalPrompt, RunResult

logger = logging.getLogger(__name__)

RUN_EVENT = "oscova/runEvent"
APPROVE = "Approve"
DENY = "Deny"
SHUTDOWN_GRACE = 6.0
"""Seconds given to the run hosts to end their runs at shutdown."""
MAX_ARGUMENT_PREVIEW = 400
"""Characters of a tool call's arguments shown in an approval prompt."""


@dataclass
class _RunRequest:
    """An `oscova.runAgent` request in flight: cancelled before its run started, or the run's handle."""

    handle: HostedRun | None = None
    cancelled: bool = False
    token: Any = None
    last_report: str | None = None
    tools: dict[str, str] = field(default_factory=dict)


class RunsServer(Protocol):
    """What the runs need of the language server (`server.OscovaServer`), without importing it."""

    host: AnalysisHost
    checked: asyncio.Event

    @property
    def protocol(self) -> Any: ...
    @property
    def work_done_progress(self) -> Any: ...

    def root_ready(self, root: str) -> asyncio.Event: ...
    async def ready(self, root: str) -> bool: ...
    def not_ready(self, root: str) -> str: ...
    def caps(self, *path: str) -> Any: ...
    def spawn(self, coro: Any) -> asyncio.Task[Any]: ...
    def window_log_message(self, params: lsp.LogMessageParams) -> None: ...
    def workspace_code_lens_refresh(self, params: None) -> Any: ...
    def window_show_message_request_async(self, params: lsp.ShowMessageRequestParams) -> Any: ...


# ------------------------------------------------------------------------------------------ code lenses


def code_lenses(parsed: DefinitionFile, document_uri: str, *, trusted: bool = True) -> list[lsp.CodeLens]:
    """`Run agent`, `Preview prompt` and the prompt's tokens (counted on `codeLens/resolve`) on the `id:` line of a
    definition; no `Run agent` in an untrusted workspace (a run is refused there, while a preview shows what the
    built-in providers render)."""
    doc = parsed.doc
    agent_id = parsed.raw_id
    if doc is None or not agent_id:
        return []
    span = doc.span(("id",))
    if span is None:
        return []
    start = span.key.start if span.key is not None else span.value.start
    rng = lsp.Range(start=convert.position(start), end=convert.position(span.value.end))
    from ..wire.commands import PreviewPromptArguments, RunAgentArguments

    example = parsed.definition.example_input if parsed.definition is not None else None
    preview = lsp.CodeLens(range=rng, command=lsp.Command(
        title="Preview prompt", command="oscova.previewPrompt",
        arguments=[PreviewPromptArguments(agent_id=agent_id, uri=document_uri).wire()]))
    tokens = token_lens(rng, agent_id, document_uri)
    if not trusted:
        return [preview, tokens]
    return [
        lsp.CodeLens(range=rng, command=lsp.Command(
            title="Run agent", command="oscova.runAgent",
            arguments=[RunAgentArguments(agent_id=agent_id, input=example or "", uri=document_uri).wire()])),
        preview,
        tokens,
    ]


def agents_of(workspace: Workspace) -> list[AgentListing]:
    """The one listing (`analysis/agents.py`), in LSP URIs."""
    from ..wire.commands import AgentListing

    return [AgentListing(id=a.id, name=a.name, uri=convert.uri(a.path), exposed_as_tool=a.exposed_as_tool,
                         example_input=a.example_input) for a in agent_list(workspace)]


# ---------------------------------------------------------------------------------------------- runs


class Runs:
    """The run services of the server's workspace roots and the runs in flight."""

    def __init__(self, server: RunsServer) -> None:
        self.server = server
        self.trusted = True
        self.hosts: dict[str, RunHost] = {}
        """The run host of each workspace root a command used (`runhost/client.py`)."""
        self._requests: dict[Any, _RunRequest] = {}
        """`oscova.runAgent` requests by JSON-RPC id."""
        self._tokens: dict[Any, _RunRequest] = {}
        """The same, by work-done progress token."""
        self._closing = False
        self.figures = TokenFigures(self.root_for, self.host, lambda: server.host.changes)
        """The token figures of hovers and lenses (`token_figures.py`)."""

    # -- services ---------------------------------------------------------------------------------------

    def opened_path(self, document_uri: str, command: str) -> str:
        """The path a command's `uri` names, when it lies inside a folder the editor opened (real paths: a link
        leading out is outside), or inside the workspace of a document it opened; else InvalidParams. A
        command never makes the server read, list or run a folder the editor did not open."""
        path = wire_json.path_of(document_uri)
        if path is None:
            raise JsonRpcInvalidParams(f"{command}: `uri` must be a file: URI, not {document_uri!r}")
        host = self.server.host
        opened = any(is_inside(path, folder) for folder in host.folders) or \
            any(is_inside(path, host.root_of(document)) for document in host.snapshot().documents)
        if not opened:
            raise JsonRpcInvalidParams(f"{command}: `uri` {document_uri} is outside every folder the editor opened; "
                                       "the commands work on those folders only")
        return path

    def is_opened_root(self, root: str) -> bool:
        """A workspace root of an opened folder (at, below or above it) or of an open document."""
        host = self.server.host
        return any(is_inside(root, folder, real=False) or is_inside(folder, root, real=False)
                   for folder in host.folders) or any(host.root_of(d) == root for d in host.snapshot().documents)

    def root_for(self, document_uri: str | None, command: str) -> str:
        """The workspace root a command's `uri` (a file or a folder) names; the first folder's without one."""
        host = self.server.host
        if document_uri is not None:
            path = self.opened_path(document_uri, command)
            return host.root_of_folder(path) if os.path.isdir(path) else host.root_of(path)
        if not host.folders:
            raise JsonRpcInvalidParams(f"{command}: the editor opened no workspace folder; pass `uri`")
        return host.root_of_folder(host.folders[0])

    async def host(self, root: str) -> RunHost:
        """The root's run host, once the server has read the root (its commands name agents the server knows)."""
        if not await self.server.ready(root):
            raise JsonRpcRequestFailed(self.server.not_ready(root))
        found = self.hosts.get(root)
        if found is None:
            from ..runhost.client import RunHost

            found = self.hosts[root] = RunHost(root, trusted=self.trusted, documents=lambda: self._documents(root),
                                               approve=self._approve, notify=self._notify)
        return found

    def _documents(self, root: str) -> dict[str, tuple[str, int | None]]:
        """The editor's open documents under `root` (every edit taken so far): what a run host lays over the disk."""
        documents = self.server.host.snapshot().documents
        return {path: (document.text, document.version) for path, document in documents.items()
                if is_inside(path, root, real=False)}

    def agent_name(self, root: str, agent_id: str) -> str:
        """The agent's display name as the server reads the workspace, or its id."""
        analysis = self.server.host.snapshot().analyses.get(root)
        parsed = agent_file(analysis.workspace, agent_id) if analysis is not None else None
        return parsed.definition.display_name if parsed is not None and parsed.definition is not None else agent_id

    def file_saved(self, path: str) -> None:
        """A saved or changed file reaches the run host of its root (Python code restarts it), and the token
        figures are forgotten (the editor asks for its lenses again)."""
        self.forget_figures()
        for root, host in list(self.hosts.items()):
            if is_inside(path, root, real=False):
                host.file_changed(path, deleted=not os.path.lexists(path))

    def forget_figures(self) -> None:
        if self.figures.forget() and self.server.caps("workspace", "code_lens", "refresh_support"):
            self.server.workspace_code_lens_refresh(None)

    def _hosts_for(self, document_uri: str | None, command: str) -> list[RunHost]:
        if document_uri is None:
            return list(self.hosts.values())
        found = self.hosts.get(self.root_for(document_uri, command))
        return [found] if found is not None else []

    # -- commands ---------------------------------------------------------------------------------------

    async def run_agent(self, params: lsp.ExecuteCommandParams) -> dict[str, Any]:
        from ..wire.commands import RunAgentArguments

        command = params.command
        args = read_arguments(RunAgentArguments, params)
        agent_id = args.agent_id
        if not self.trusted:
            from ..runs.errors import untrusted_refusal

            raise JsonRpcRequestFailed(untrusted_refusal("oscova.runAgent"))
        if self._closing:
            raise JsonRpcRequestFailed("The server is shutting down")
        root = self.root_for(args.uri, command)
        request = _RunRequest()
        msg_id = self.server.protocol.msg_id
        if msg_id is not None:
            self._requests[msg_id] = request
        status = "cancelled"
        result: RunResult | None = None
        try:
            host = await self.host(root)
            request.token = await self._progress_token(params.work_done_token)
            if request.token is not None:
                self._tokens[request.token] = request
                self._progress(request, lsp.WorkDoneProgressBegin(
                    title=f"Running {self.agent_name(root, agent_id)}", cancellable=True, message="starting"))
            handle = host.start_run(agent_id, args.input, session_id=args.session_id,
                                    on_event=lambda event: self._on_event(request, event))
            request.handle = handle
            if request.cancelled or self._closing:
                handle.cancel()
            result = await handle
            status = result.status
        finally:
            self.forget_figures()  # a run may have written what a preview reads (memory, the todo list)
            if msg_id is not None:
                self._requests.pop(msg_id, None)
            if request.token is not None:
                self._tokens.pop(request.token, None)
                error = result.error if result is not None and status == "failed" else None
                self._progress(request, lsp.WorkDoneProgressEnd(message=f"failed: {error}" if error else status))
                self.server.work_done_progress.tokens.pop(request.token, None)
        self.server.window_log_message(lsp.LogMessageParams(
            type=lsp.MessageType.Warning if status == "failed" or result.transcript_error else lsp.MessageType.Info,
            message=f"oscova: run {result.run_id} of {agent_id} {status}"
                    + (f": {result.error}" if result.error else "")
                    + (f" (transcript {result.transcript})" if result.transcript else "")
                    + (f"; {result.transcript_error}" if result.transcript_error else "")))
        return result.wire()

    async def preview_prompt(self, params: lsp.ExecuteCommandParams) -> dict[str, Any]:
        from ..runhost.client import RunHostError
        from ..wire.commands import PreviewPromptArguments

        args = read_arguments(PreviewPromptArguments, params)
        host = await self.host(self.root_for(args.uri, params.command))
        try:
            preview: PreviewResult = await host.preview(args.agent_id, args.input or None)
        except RunHostError as error:
            raise JsonRpcRequestFailed(str(error)) from None
        return preview.wire()

    def cancel_run(self, params: lsp.ExecuteCommandParams) -> None:
        from ..wire.commands import CancelRunArguments

        run_id = read_arguments(CancelRunArguments, params).run_id
        for host in list(self.hosts.values()):
            run = host.find_run(run_id)
            if run is not None and run.cancel():
                return

    def evict_agent(self, params: lsp.ExecuteCommandParams) -> None:
        from ..wire.commands import EvictAgentArguments

        args = read_arguments(EvictAgentArguments, params)
        for host in self._hosts_for(args.uri, params.command):
            host.evict(args.agent_id)

    def invalidate_agents(self, params: lsp.ExecuteCommandParams) -> None:
        for host in self._hosts_for(scope_of(params), params.command):
            host.invalidate(everything=False)

    def invalidate_all(self, params: lsp.ExecuteCommandParams) -> None:
        for host in self._hosts_for(scope_of(params), params.command):
            host.invalidate(everything=True)

    async def listed_roots(self, params: lsp.ExecuteCommandParams) -> list[str]:
        """The roots a listing command reads, once read: that of its `uri`, or every opened one; the editor's
        pending edits are applied first."""
        document_uri = scope_of(params)
        server = self.server
        if document_uri is not None:
            root = self.root_for(document_uri, params.command)
            if not await server.ready(root):
                raise JsonRpcRequestFailed(server.not_ready(root))
            roots = [root]
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.checked.wait(), 30)
            roots = sorted(root for root in server.host.snapshot().analyses if self.is_opened_root(root))
        return roots

    async def list_agents(self, params: lsp.ExecuteCommandParams) -> list[dict[str, Any]]:
        """The agents as the editor sees them (open documents included)."""
        roots = await self.listed_roots(params)
        snapshot = self.server.host.snapshot()
        out: list[dict[str, Any]] = []
        for root in roots:
            analysis = snapshot.analyses.get(root)
            if analysis is not None:
                out.extend(agent.wire() for agent in agents_of(analysis.workspace))
        return out

    # -- cancellation -------------------------------------------------------------------------------------

    def cancel_request(self, msg_id: Any) -> bool:
        """`$/cancelRequest` for an `oscova.runAgent` request: cancels its run, whose result (status
        `cancelled`) then answers the request. False for other requests (pygls handles them)."""
        request = self._requests.get(msg_id)
        if request is None:
            return False
        self._cancel(request)
        return True

    def cancel_progress(self, token: Any) -> None:
        request = self._tokens.get(token)
        if request is not None:
            self._cancel(request)

    def _cancel(self, request: _RunRequest) -> None:
        request.cancelled = True
        if request.handle is not None:
            request.handle.cancel()

    def shutdown(self) -> None:
        """Cancels every run (each ends as `cancelled`, its transcript closed) and stops the run hosts once their
        runs are over."""
        self._closing = True
        for request in list(self._requests.values()):
            self._cancel(request)
        self.server.spawn(self._close_hosts())

    async def _close_hosts(self) -> None:
        for host in list(self.hosts.values()):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(host.aclose(), SHUTDOWN_GRACE)

    # -- streaming ----------------------------------------------------------------------------------------

    def _on_event(self, request: _RunRequest, event: AnyRunEvent) -> None:
        self.server.protocol.notify(RUN_EVENT, event.wire())
        if request.token is None:
            return
        message: str | None = None
        if event.kind == "toolCall":
            request.tools[str(event.call_id)] = event.name
            message = f"calling {event.name}"
        elif event.kind == "toolResult":
            name = event.name or request.tools.get(str(event.call_id), "a tool")
            message = f"{name} failed" if event.error is not None else f"{name} answered"
        elif event.kind == "delta":
            message = "answering"
        elif event.kind == "message" and event.role == "user":
            message = "asking the model"
        if message is not None and message != request.last_report:
            request.last_report = message
            self._progress(request, lsp.WorkDoneProgressReport(message=message))

    async def _progress_token(self, given: Any) -> Any:
        if given is not None:
            return given
        if not self.server.caps("window", "work_done_progress"):
            return None
        token = f"oscova-run-{uuid.uuid4().hex[:12]}"
        try:
            await asyncio.wait_for(self.server.work_done_progress.create_async(token), 5)
        except Exception:  # noqa: BLE001 - the run goes on without progress
            logger.info("the client did not create a progress token for a run")
            return None
        return token

    def _progress(self, request: _RunRequest, value: Any) -> None:
        progress = self.server.work_done_progress
        try:
            if isinstance(value, lsp.WorkDoneProgressBegin):
                progress.begin(request.token, value)
            elif isinstance(value, lsp.WorkDoneProgressEnd):
                progress.end(request.token, value)
            else:
                progress.report(request.token, value)
        except Exception:  # noqa: BLE001
            logger.debug("progress for %s dropped", request.token)

    def _notify(self, text: str) -> None:
        """What a user should know once (a collector named by the workspace gets no credentials): the
        editor's output channel."""
        self.server.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=f"oscova: {text}"))

    # -- approval -----------------------------------------------------------------------------------------

    async def _approve(self, prompt: ApprovalPrompt) -> bool:
        """Asks through `window/showMessageRequest`, which every client implements (the `window.showMessage`
        capability only refines it: eglot answers prompts without declaring it)."""
        arguments = json.dumps(prompt.arguments, ensure_ascii=False)
        if len(arguments) > MAX_ARGUMENT_PREVIEW:
            arguments = arguments[:MAX_ARGUMENT_PREVIEW] + "…"
        message = f"The agent {prompt.agent_id} wants to run the tool {prompt.tool} with {arguments}. Allow it?"
        answer = await self.server.window_show_message_request_async(lsp.ShowMessageRequestParams(
            type=lsp.MessageType.Warning, message=message,
            actions=[lsp.MessageActionItem(title=APPROVE), lsp.MessageActionItem(title=DENY)]))
        return answer is not None and answer.title == APPROVE


def command_handlers(runs: Runs, more: dict[str, Callable[[lsp.ExecuteCommandParams], Any]] | None = None,
                     ) -> dict[str, Callable[[lsp.ExecuteCommandParams], Awaitable[Any] | Any]]:
    """Every `oscova.*` command; `more`: those of other modules (`eval_commands.py`), registered after these."""
    handlers: dict[str, Callable[[lsp.ExecuteCommandParams], Any]] = {
        "oscova.runAgent": runs.run_agent,
        "oscova.previewPrompt": runs.preview_prompt,
        "oscova.cancelRun": runs.cancel_run,
        "oscova.evictAgent": runs.evict_agent,
        "oscova.invalidateAgents": runs.invalidate_agents,
        "oscova.invalidateAll": runs.invalidate_all,
        "oscova.listAgents": runs.list_agents,
    }
    handlers.update({  # agent tests and run comparison (`agent_tests.py`), the review (below)
        "oscova.listTests": lambda params: list_tests(runs, params),
        "oscova.runTest": lambda params: run_test(runs, params),
        "oscova.saveTestCase": lambda params: save_test_case(runs, params),
        "oscova.compareRuns": lambda params: compare_runs(runs, params),
        "oscova.review": lambda params: review_changes(runs, params),
    })
    handlers.update(more or {})
    if tuple(handlers) != COMMANDS:  # the advertised commands (capabilities.py) and these must agree
        raise RuntimeError(f"command handlers {tuple(handlers)} differ from the advertised {COMMANDS}")
    return handlers


TRUST_KEY = "workspaceTrusted"


def workspace_trust(options: Any) -> tuple[bool, tuple[str, ...]]:
    """Whether the workspace is trusted, and what was wrong with the trust setting. A client that sends no
    `initializationOptions.workspaceTrusted` (nor `oscova.workspaceTrusted`) has no notion of trust: trusted.
    One that sends it is trusted only by JSON `true`; `false` is Restricted Mode (VS Code), and any other
    value (`"false"`, `0`, `null`) fails closed, with a sentence for the user."""
    trusted, problems = True, []
    scopes = [("initializationOptions", options)]
    if isinstance(options, dict) and "oscova" in options:
        scopes.append(("initializationOptions.oscova", options["oscova"]))
    for name, scope in scopes:
        if not isinstance(scope, dict) or TRUST_KEY not in scope or scope[TRUST_KEY] is True:
            continue
        trusted = False
        if scope[TRUST_KEY] is not False:
            problems.append(f"`{name}.{TRUST_KEY}` must be true or false, not {describe_value(scope[TRUST_KEY])}; "
                            "the workspace is treated as untrusted (runs and agent tests are refused)")
    return trusted, tuple(problems)


# ---------------------------------------------------------------------------------------------- review
# `oscova.review` runs `oscova-lsp review --format json` as a process of its own: the review reads the base from
# git, parses both sides and (with trust) imports both sides' code, none of which may touch the server's state,
# stall its loop or stay imported in it.

REVIEW_TIMEOUT = 600.0
"""Seconds a review may take before it is stopped."""


async def review_changes(runs: Runs, params: lsp.ExecuteCommandParams) -> dict[str, Any]:
    """`{uri?, base?, trust?}` → the review of the workspace `uri` names (the first folder's without it) against
    `base` (default: the merge base with the default branch), as `oscova-lsp review --format json` prints it.
    `trust: true` imports the workspace's tools and providers, so it is refused in an untrusted workspace;
    without it the review imports nothing of the workspace there too, as the untrusted preview does."""
    import sys

    from pydantic import ValidationError

    from ..wire.commands import ReviewArguments
    from ..wire.reports import ReviewReport

    args = read_arguments(ReviewArguments, params)
    base, trust = args.base, args.trust
    if trust and not runs.trusted:
        raise JsonRpcRequestFailed("The workspace is not trusted: oscova.review imports the workspace's tools and "
                                   "providers (`trust: true`) only in a trusted workspace; without `trust` it "
                                   "imports none")
    root = runs.root_for(args.uri, params.command)
    command = [sys.executable, "-P", "-m", "oscova_lsp", "review", "--format", "json",
               *([f"--base={base}"] if base else []), *(["--trust"] if trust else []), "--", root]
    from oscova_runtime.processes import ProcessFailed, ProcessTimedOut, run_async

    try:  # the process gateway: a fixed environment; a cancellation stops the review with the request
        done = await run_async(command, cwd=root, timeout=REVIEW_TIMEOUT)
    except ProcessTimedOut:
        raise JsonRpcRequestFailed(f"the review took over {REVIEW_TIMEOUT:.0f} s and was stopped; "
                                   "`oscova-lsp review` in a terminal has no time limit") from None
    except ProcessFailed as failed:
        raise JsonRpcRequestFailed(str(failed)) from None
    out, err = done.stdout, done.stderr
    if done.returncode not in (0, 1):
        why = err.decode("utf-8", "replace").strip().splitlines()
        raise JsonRpcRequestFailed((why[-1] if why else "the review failed").removeprefix("oscova-lsp: "))
    try:
        found = ReviewReport.model_validate_json(out)
    except ValidationError:
        raise JsonRpcRequestFailed("the review did not answer with its JSON report") from None
    return found.wire()
