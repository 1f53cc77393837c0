"""The run service: one workspace's configured host and orchestrator, runs as cancellable tasks.

Plain Python (no LSP types), shared by `oscova-lsp run` / `preview` and the language server's commands.
Every run streams events (`events.EVENT_KINDS`) to a callback and to a JSON-lines transcript under
`<root>/.oscova/runs/` (none for a run of an agent no definition has: it never starts), and ends with a result
(`wire.events.RunResult`: what the run answered, its messages and transcript, and why the answer is incomplete or
the transcript missing). Callbacks, transcripts and results get the models' JSON (camelCase, as on the wire).
Keys never leave the service: events, results, log messages and transcripts pass through a `Redactor`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import logging
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from oscova_runtime.catalogue import plan_providers
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.function_invocation import FunctionInvocationSettings
from oscova_runtime.governance import ToolDeniedError
from oscova_runtime.host import ConfiguredHost, HostConfigurationError
from oscova_runtime.host_config import HostConfig
from oscova_runtime.messages import (
    ChatMessage,
    ChatResponseUpdate,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
    UpdateAccumulator,
    short_type_name,
)
from oscova_runtime.notices import ProviderNotice, RunWarning, listening
from oscova_runtime.observer import (
    AgentRunObserverAccessor,
    AgentTaskRun,
    AgentTaskRunObserver,
    use_agent_run_observer,
)
from oscova_runtime.orchestrator import AgentOrchestrator
from oscova_runtime.paths import is_inside
from oscova_runtime.session import AgentSession
from oscova_runtime.telemetry import observe_calls
from oscova_runtime.tools import APPROVAL_DENIED, ApprovalRequest, approval_channel

from ..analysis.agents import agent_file, agent_files, agent_list
from ..analysis.diagnostics import Severity
from ..analysis.engine import Analysis
from ..analysis.files import DefinitionFile, FileKind, file_kind
from ..analysis.host import AnalysisHost, Snapshot
from ..analysis.rules.definition import UNKNOWN_MODEL
from ..wire.commands import AgentListing, PreviewResult
from ..wire.events import (
    ApprovalPrompt,
    CancelledEvent,
    CompletedEvent,
    ConversationMessage,
    DeltaEvent,
    FailedEvent,
    MessageEvent,
    NoticeEvent,
    ReasoningEvent,
    RunEventBase,
    RunResult,
    StartedEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from .errors import RunError, denial_reason, describe_failure, unanswered_calls_message
from .events import (
    FINAL_KINDS,
    CallLog,
    PacedStream,
    Redactor,
    StreamRedactor,
    conversation_message,
    describe_exception,
    jsonable,
    milliseconds,
    now_iso,
    usage_of,
)
from .preview import assemble_preview, caching_advice, not_loaded, tool_agent_notes
from .recorder import Recorder
from .tracing import run_tracer
from .transcript import RUNS_DIRECTORY, TranscriptWriter, transcript_path

log = logging.getLogger(__name__)

RunStatus = Literal["completed", "failed", "cancelled"]
EventCallback = Callable[[dict[str, Any]], Any]
"""Called synchronously with each event's JSON (`wire.events.RunEvent`), in order; exceptions are logged and the run
goes on."""
ApproveCallback = Callable[[dict[str, Any]], Awaitable[bool]]
"""Asked before an approval-required tool runs, with an `ApprovalPrompt`'s JSON `{runId, agentId, tool, arguments}`;
True approves."""

MAX_ERROR_LINES = 5
DELTA_INTERVAL = 0.05
"""Seconds between two `delta` events of a run: text streamed faster is sent in one event, so a model
streaming at full speed costs a handful of notifications a second, not one per token."""
NOT_BLOCKING = frozenset({UNKNOWN_MODEL.code})
"""Errors a run reports better itself: an unconfigured model (and a preview needs no model at all)."""


class RunHandle:
    """A run in progress. `await handle` gives its result; `handle.cancel()` stops it."""

    def __init__(self, run_id: str, agent_id: str, session_id: str, transcript: str | None) -> None:
        self.run_id = run_id
        self.agent_id = agent_id
        self.session_id = session_id
        self.transcript = transcript
        self.task: asyncio.Task[dict[str, Any]] | None = None
        self.cancel_requested = False
        self.started = False
        self.finishing = False

    def __await__(self) -> Generator[Any, None, dict[str, Any]]:
        if self.task is None:
            raise RuntimeError(f"the run {self.run_id} was not started; RunService.start_run gives a started handle")
        return self.task.__await__()

    def done(self) -> bool:
        return self.task is not None and self.task.done()

    def cancel(self) -> bool:
        """Stops the run: its task is cancelled, so the model's HTTP stream closes and running tools are
        cancelled. Returns False when the run had already ended."""
        if self.task is None or self.task.done() or self.finishing:
            return False
        self.cancel_requested = True
        if self.started:  # before the first step the task checks the flag itself
            self.task.cancel()
        return True


class _Run:
    """The mutable state of one run: sequence numbers, the transcript, what streamed so far.

    Streamed text is kept as a list of pieces (joined once, at the end) and sent as `delta` events at
    most every `DELTA_INTERVAL` seconds, redacted over the whole stream (`StreamRedactor`)."""

    def __init__(self, handle: RunHandle, on_event: EventCallback | None, redact: Redactor,
                 writer: TranscriptWriter | None) -> None:
        self.handle = handle
        self.on_event = on_event
        self.reasoning = PacedStream(lambda text: ReasoningEvent(text=text), self.emit, DELTA_INTERVAL)
        """A reasoning model's thinking, streamed as `reasoning` events apart from the answer."""
        self.redact = redact
        self.writer = writer
        self.seq = itertools.count(1)
        self.updates = UpdateAccumulator()
        self.text_pieces: list[str] = []
        self.reported_messages = 0
        self.call_names: dict[str, str] = {}
        self.input_message: ChatMessage | None = None
        self.recorder = Recorder()
        self.calls = CallLog(self.emit)
        self._unsent: list[str] = []
        self._last_delta = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self.denial_reason: Callable[[str], str | None] = lambda _name: None
        """Which host setting refused a tool, in words (set once the run's host is known)."""
        self.model: str | None = None
        """The `[models.NAME]` this run uses instead of its definition's (an evaluation's model matrix)."""
        self.finished = False
        """Set by the final event: nothing is emitted after it (a cancelled stream's inner generators may
        be finalised later by the loop, and their model call would end after the run did)."""

    @property
    def redact(self) -> Redactor:
        return self._redact

    @redact.setter
    def redact(self, redactor: Redactor) -> None:
        self._redact = redactor
        self._stream = StreamRedactor(redactor)
        self.reasoning.redactor = StreamRedactor(redactor)

    def record(self, line: dict[str, Any]) -> None:
        """A recording line (`transcript.py`), redacted, to the transcript only: listeners get events."""
        if self.writer is not None:
            self.writer.write(self.redact(line))

    def emit(self, made: RunEventBase) -> dict[str, Any] | None:
        """Sends an event: numbered, timed and redacted, to the listener and the transcript; returns its JSON."""
        if self.finished:
            return None
        kind = made.kind
        if kind != "delta":  # the text streamed so far goes out first, so events stay in order
            self.send_text(final=True)
        if kind != "reasoning":
            self.reasoning.send(final=True)
        made = made.model_copy(update={"run_id": self.handle.run_id, "seq": next(self.seq), "time": now_iso()})
        event: dict[str, Any] = self.redact(made.wire())
        self.finished = kind in FINAL_KINDS
        if self.writer is not None:
            self.writer.write(event)
        if self.on_event is not None:
            try:
                outcome = self.on_event(event)
                if inspect.isawaitable(outcome):  # an async callback: scheduled, order kept by seq
                    asyncio.ensure_future(outcome)
            except Exception as error:  # noqa: BLE001 - a failing listener must not stop the run
                log.warning("A run-event listener failed: %s", self.redact(describe_exception(error)))
        return event

    # -- streaming ---------------------------------------------------------------------------------

    def _stream_text(self, text: str) -> None:
        self.text_pieces.append(text)
        self._unsent.append(text)
        waited = time.monotonic() - self._last_delta
        if waited >= DELTA_INTERVAL:
            self.send_text()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(DELTA_INTERVAL - waited, self.send_text)

    def send_text(self, final: bool = False) -> None:
        """Sends the text not sent yet as one `delta`; `final` also releases the tail held back because it
        could be the start of a secret (the streamed message has ended)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        text = self._stream.feed("".join(self._unsent)) if self._unsent else ""
        self._unsent.clear()
        if final:
            text += self._stream.flush()
        if text:
            self._last_delta = time.monotonic()
            self.emit(DeltaEvent(text=text))

    def on_messages_changed(self, task_run: AgentTaskRun) -> None:
        live = task_run.live_messages or []
        for message in live[self.reported_messages:]:
            self.emit(MessageEvent(**conversation_message(message).model_dump()))
        self.reported_messages = len(live)

    def on_notice(self, notice: ProviderNotice | RunWarning) -> None:
        if isinstance(notice, RunWarning):
            self.calls.heard(notice)
            return
        self.emit(NoticeEvent(source=notice.source, provider=short_type_name(notice.source), message=notice.message))

    def on_update(self, update: ChatResponseUpdate) -> None:
        self.updates.add(update)
        for content in update.contents:
            if isinstance(content, TextContent) and update.role == "assistant":
                if content.text:
                    self.reasoning.send(final=True)  # the thinking so far goes out before the answer after it
                    self._stream_text(content.text)
            elif isinstance(content, ReasoningContent) and update.role == "assistant":
                if content.text:
                    self.send_text(final=True)
                    self.reasoning.add(content.text)
            elif isinstance(content, FunctionCallContent):
                self.call_names[content.call_id] = content.name
                self.emit(ToolCallEvent(call_id=content.call_id, name=content.name,
                                        arguments=jsonable(content.arguments)))
            elif isinstance(content, FunctionResultContent):
                name = self.call_names.get(content.call_id or "", "")
                duration = self.calls.tool_durations.pop(content.call_id or "", None)
                result = ToolResultEvent(call_id=content.call_id, name=name,
                                         duration_ms=milliseconds(duration) if duration is not None else None)
                if isinstance(content.exception, ToolDeniedError):  # refused by the policy, not failed
                    result.result, result.denied, result.reason = (jsonable(content.result), True,
                                                                  self.denial_reason(name) or None)
                elif content.exception is not None:
                    result.error = describe_exception(content.exception)
                else:
                    result.result, result.denied = jsonable(content.result), content.result == APPROVAL_DENIED
                self.emit(result)

    def text(self) -> str:
        return "".join(self.text_pieces)

    def unanswered_calls(self) -> list[str]:
        """Names of the tool calls of the model's last answer, which the tool loop handed back unrun (the last
        permitted iteration). Calls a terminating call left unrun in its round are not among them: the loop
        ended there on purpose."""
        messages = self.updates.messages()
        last_round = max((i for i, m in enumerate(messages) if m.role == "tool"), default=-1)
        return [c.name for m in messages[last_round + 1:] for c in m.contents if isinstance(c, FunctionCallContent)]

    def messages(self) -> list[ConversationMessage]:
        conversation = ([self.input_message] if self.input_message else []) + self.updates.messages()
        return [conversation_message(m) for m in conversation]


@dataclass(frozen=True, slots=True)
class WorkspaceView:
    """What one run start reads, from one snapshot: the root's analysis, its agents (`analysis/agents.py`) and
    its host configuration. A run, a preview or an approval question takes one view: the editor's pending
    edits are applied once, and the configured host, the definition and the agent's name agree."""

    snapshot: Snapshot
    analysis: Analysis
    loaded: bool
    """Whether the root was read (else the analysis holds its open documents only)."""
    agents: dict[str, DefinitionFile]
    """The file of each agent, by id (`analysis.agents.agent_files`)."""

    @property
    def config(self) -> HostConfig:
        return self.analysis.workspace.host

    def unknown(self, agent_id: str) -> str | None:
        """Why no run of `agent_id` can start here, in words (no definition has that id); None when one has."""
        if agent_file(self.analysis.workspace, agent_id, self.agents) is not None:
            return None
        return f"No agent definition has the id {agent_id!r} (known agents: {', '.join(self.agents) or 'none'})"

    def agent_name(self, agent_id: str) -> str:
        """The agent's display name, or its id when no definition has it."""
        parsed = self.agents.get(agent_id)
        return parsed.definition.display_name if parsed is not None and parsed.definition is not None else agent_id


class RunService:
    """Runs and previews the agents of one workspace root.

    The workspace (definitions, host configuration) is read from snapshots of an `AnalysisHost` (the analysis
    host): pass the language server's `host` to share its state (one parse per root; its owner keeps it current),
    or let the service read the root from disk into an analysis host of its own (`reload`, `file_saved`). Each run
    start reads one `WorkspaceView`. A run reads saved files (docs/editors.md, "Which text a run uses"): it is
    refused when its definition, a template it renders or the host configuration is open in the editor with
    unsaved changes. One `ConfiguredHost` (the runtime's host: definitions + host configuration → agents) and one
    `AgentOrchestrator` serve every run, so built dependencies stay cached across runs; the requested agent of a
    run is built with the task-run observer (`configure_builder`), which bypasses the cache as the seed says.
    """

    def __init__(
        self, root: str | os.PathLike[str], *, host: AnalysisHost | None = None, runs_dir: str | None = None,
        function_invocation: FunctionInvocationSettings | None = None, trusted: bool = True,
        tracing: bool = True, notify: Callable[[str], None] | None = None,
    ) -> None:
        self.root = os.path.realpath(os.fspath(root))
        self._source_root = os.path.abspath(os.fspath(root))
        """The root as the analysis host names it (not resolved: the host indexes files by their given path)."""
        self.trusted = trusted
        """False (an untrusted workspace): previews leave the workspace's tool and provider code unimported."""
        self.tracing = tracing
        """False: runs export no spans, whatever the environment or `[telemetry]` says (a replay is offline)."""
        self.notify = notify or _to_stderr
        """Hears what a user should know once (a collector named by the workspace gets no credentials)."""
        self._analysis_host = host or AnalysisHost([self._source_root])
        self._owns_analysis_host = host is None
        self.runs_dir = runs_dir or os.path.join(self.root, RUNS_DIRECTORY)
        self._runs_boundary = runs_dir or self.root
        """Transcripts stay inside it: a `.oscova` link leading out of the workspace gets none written."""
        self.orchestrator = AgentOrchestrator(function_invocation)
        self._configured_host: ConfiguredHost | None = None
        self._configured_from: HostConfig | None = None
        """The host configuration `_configured_host` was built from (a changed one replaces it)."""
        self._retired_hosts: list[ConfiguredHost] = []
        """Configured hosts replaced by a changed configuration: their chat clients are closed at `aclose`."""
        self._runs: dict[str, RunHandle] = {}
        self._sessions: dict[tuple[str, str], AgentSession] = {}
        self._session_locks: dict[tuple[str, str], asyncio.Lock] = {}

    # -- workspace -----------------------------------------------------------------------------------

    @property
    def analysis(self) -> Analysis:
        """The root's analysis in a fresh snapshot (an analysis host of its own reads the root first)."""
        return self._root_analysis(self.snapshot())

    def snapshot(self) -> Snapshot:
        """The analysis host's state now."""
        host = self._analysis_host
        root = host.root_of_folder(self._source_root)
        if self._owns_analysis_host and not host.is_loaded(root):
            host.ensure_root(root)
            host.install(root, host.load(root))
        return host.snapshot()

    def lay_documents(self, documents: dict[str, tuple[str, int | None]]) -> None:
        """The editor's open documents (`{path: (text, version)}`) laid over the files its own analysis host read
        (a run host's): those it was given before and is not given now are closed again."""
        host = self._analysis_host
        self.snapshot()  # the root is read first: a document then replaces its file
        given = host.snapshot().documents
        for path in [p for p in given if p not in documents]:
            host.close(path)
        for path, (text, version) in documents.items():
            known = given.get(path)
            if known is None or (known.text, known.version) != (text, version):
                host.open(path, text, version)

    def disk_changed(self, path: str, deleted: bool) -> None:
        """A file changed on disk: its own analysis host reads it again, and the agents it reaches are evicted."""
        if self._owns_analysis_host:
            self._analysis_host.disk_changed(path, deleted)
        self.file_saved(path)

    def view(self) -> WorkspaceView:
        """One snapshot of the root: what a run start, a preview or an approval question reads."""
        snapshot = self.snapshot()
        analysis = self._root_analysis(snapshot)
        loaded = snapshot.root_of_folder(self._source_root) in snapshot.loaded
        return WorkspaceView(snapshot, analysis, loaded, agent_files(analysis.workspace))

    def _root_analysis(self, snapshot: Snapshot) -> Analysis:
        return snapshot.analyses.get(snapshot.root_of_folder(self._source_root)) or Analysis(self._source_root)

    def reload(self) -> None:
        """Reads the workspace again from disk (an analysis host of its own only) and drops every cached agent."""
        if self._owns_analysis_host:
            self._analysis_host = AnalysisHost([self._source_root])
        self.invalidate_all()

    def list_agents(self) -> list[dict[str, Any]]:
        """The agents by id, as `oscova.listAgents` lists them (`AgentListing`)."""
        return [AgentListing(id=a.id, name=a.name, uri=Path(a.path).as_uri(), exposed_as_tool=a.exposed_as_tool,
                             example_input=a.example_input).wire() for a in agent_list(self.analysis.workspace)]

    def _definition(self, view: WorkspaceView, agent_id: str) -> AgentDefinition:
        """The definition a run of `agent_id` builds; RunError with words when it cannot run."""
        analysis = view.analysis
        parsed = agent_file(analysis.workspace, agent_id, view.agents)
        if parsed is None:
            raise RunError(view.unknown(agent_id) or agent_id)
        checked = [parsed.path]
        host_file = analysis.workspace.host_file
        if host_file is not None:
            checked.append(host_file.path)
        unsaved = view.snapshot.unsaved(self._sources_of(analysis, parsed))
        if unsaved:
            names = ", ".join(os.path.relpath(p, self._source_root) for p in unsaved)
            raise RunError(f"{names} {'has' if len(unsaved) == 1 else 'have'} unsaved changes; save "
                           f"{'it' if len(unsaved) == 1 else 'them'} to run what the editor shows (a run reads "
                           "the saved files)")
        errors = [d for path in checked for d in analysis.diagnostics(path) if d.severity is Severity.ERROR
                  and d.code not in NOT_BLOCKING]
        if errors or parsed.definition is None:
            lines = [f"{os.path.relpath(d.path, self.root)}:{d.range.start.line + 1}:{d.range.start.character + 1}: "
                     f"{d.code} {d.message}" for d in errors[:MAX_ERROR_LINES]]
            more = f" (and {len(errors) - MAX_ERROR_LINES} more)" if len(errors) > MAX_ERROR_LINES else ""
            raise RunError(f"The agent {agent_id!r} cannot run until its configuration errors are fixed{more}"
                           f" (`oscova-lsp check` lists them)" + "".join(f"\n  {line}" for line in lines))
        return parsed.definition

    @staticmethod
    def _sources_of(analysis: Analysis, parsed: DefinitionFile) -> set[str]:
        """The files a run of `parsed` reads: the definition, the templates it renders (its instructions file,
        what its inline instructions and those templates include) and the host configuration."""
        workspace = analysis.workspace
        out = {parsed.path} | workspace.template_closure(workspace.references_of.get(parsed.path, ()))
        if workspace.host_file is not None:
            out.add(workspace.host_file.path)
        return out

    def _configured_host_for(self, view: WorkspaceView) -> ConfiguredHost:
        """The configured host over the view's definitions; a changed host configuration replaces it and
        drops every cached agent and chat client."""
        config = view.config
        agents = view.agents
        definitions = [f.definition for f in agents.values() if f.definition is not None]
        paths = {agent_id: f.path for agent_id, f in agents.items()}
        host = self._configured_host
        if host is None or config != self._configured_from or host.trusted != self.trusted:
            if host is not None:
                self._retired_hosts.append(host)
                self.orchestrator.invalidate_all()
            host = self._configured_host = ConfiguredHost(self.root, config, definitions, definition_paths=paths,
                                                          orchestrator=self.orchestrator, trusted=self.trusted)
            self._configured_from = config.model_copy(deep=True)
        else:
            host.definitions = definitions
            host.definition_paths = paths
        if self.trusted:  # an untrusted root never goes on sys.path: every later import could come from it
            self._make_importable(config)
        return host

    def _make_importable(self, config: HostConfig) -> None:
        make_importable(self.root, config)

    # -- cache -----------------------------------------------------------------------------------------

    def evict_agent(self, agent_id: str) -> bool:
        return self.orchestrator.evict_agent(agent_id)

    def invalidate_agents(self) -> None:
        """Drops every cached agent; the tool catalogue is kept."""
        self.orchestrator.invalidate_all_agents()

    def invalidate_all(self) -> None:
        """Drops every cached agent and the tool catalogue. The workspace's modules stay imported: a process
        imports them once (the language server's run host is restarted when they change)."""
        self.orchestrator.invalidate_all()
        if self._configured_host is not None:
            self._configured_host.forget_tools()

    def file_saved(self, path: str) -> list[str]:
        """A file was saved (or deleted): re-reads it (a host of its own only) and evicts the cached agents it
        affects, including the agents that reach them through `agent_tools`. Returns the evicted ids."""
        path = os.path.abspath(path)
        if not is_inside(path, self.root):
            return []
        if path.endswith(".py"):
            self.invalidate_all()
            return ["*"]
        kind = file_kind(path)
        if kind is None or not self._analysis_host.is_loaded(self._analysis_host.root_of(path)):
            return []
        affected: set[str] = set()
        before = self.analysis.workspace.files.get(path)
        if isinstance(before, DefinitionFile) and before.raw_id:
            affected.add(before.raw_id)
        if self._owns_analysis_host:
            self._analysis_host.disk_changed(path, deleted=not os.path.lexists(path))
        workspace = self.analysis.workspace
        after = workspace.files.get(path)
        if kind is FileKind.HOST:
            self.invalidate_all()
            return ["*"]
        if isinstance(after, DefinitionFile) and after.raw_id:
            affected.add(after.raw_id)
        if kind is FileKind.TEMPLATE:
            uses = workspace.template_uses(path)
            if any(use.agent_path is None for use in uses):  # a host template: every agent renders it
                self.invalidate_agents()
                return ["*"]
            for use in uses:
                parsed = workspace.files.get(use.agent_path or "")
                if isinstance(parsed, DefinitionFile) and parsed.raw_id:
                    affected.add(parsed.raw_id)
        for agent_id in list(affected):
            for referrer in workspace.reverse_agent_closure(agent_id):
                parsed = workspace.files.get(referrer)
                if isinstance(parsed, DefinitionFile) and parsed.raw_id:
                    affected.add(parsed.raw_id)
        return sorted(a for a in affected if self.evict_agent(a))

    def approval_tools(self, agent_id: str, *, view: WorkspaceView | None = None) -> list[str]:
        """The tools `agent_id` selects that need approval (and the host's policy allows): a run without an
        approval channel does not offer them. Empty when the agent cannot be read (its run says why)."""
        try:
            view = view or self.view()
            host = self._configured_host_for(view)
            definition = self._definition(view, agent_id)
            host.ensure_tools()
        except Exception:  # noqa: BLE001 - the run reports it in words
            return []
        catalogue = host.orchestrator.tools
        names = dict.fromkeys([*definition.tools, *definition.pinned_tools])
        return [n for n in names if n in catalogue and catalogue[n].approval_required
                and host.tool_policy.allows(catalogue[n])]

    # -- preview ---------------------------------------------------------------------------------------

    async def preview(self, agent_id: str, input: str | None = None, *, session_id: str | None = None,
                      ) -> dict[str, Any]:
        """A `PreviewResult`'s JSON: the provider pipeline without a model, and what its request costs in the model's
        tokens.

        Approval-required tools are listed as a run with an approval channel would offer them. Raises
        `RunError` with words for the user when the agent cannot be assembled.
        """
        view = self.view()
        host = self._configured_host_for(view)
        redact = Redactor.for_config(host.config)
        try:
            definition = self._definition(view, agent_id)
            request = host.build_request(definition, bypass_requested_agent_cache=True)

            placeholders: list[str] = []

            def chat_client(d: AgentDefinition, ctx: Any) -> Any:
                try:
                    return host.chat_client_for(d)
                except HostConfigurationError as error:  # no model needed to assemble
                    if not ctx.requested:
                        placeholders.append(d.id)
                    return _UnconfiguredChatClient(str(error))

            request.chat_client_factory = chat_client
            host.ensure_tools()
            try:
                agent = await host.orchestrator.get_or_create_agent(request)
            finally:  # a dependency built without its model must not stay cached for runs
                for stand_in in placeholders:
                    self.evict_agent(stand_in)
            session = self._sessions.get((agent_id, session_id)) if session_id else None
            plan = plan_providers(definition, host.config, requested=True).providers

            async def never_asked(request: ApprovalRequest) -> bool:
                return False

            tokenizer = await asyncio.to_thread(host.tokenizer_for, definition)  # an encoding loads in ~0.5 s once
            with approval_channel(never_asked):
                result = await assemble_preview(agent, plan, input, session or AgentSession(), tokenizer,
                                                host.prompt_limits(definition))
            if "tokens" in result and agent_id in view.agents:
                active = {p["type"] for p in result["providers"] if p["active"]}
                result["tokens"]["caching"] = caching_advice(view.analysis, view.agents[agent_id], active)
            result["trusted"] = self.trusted
            result["notLoaded"] = [] if self.trusted else not_loaded(definition, host.config, plan)
            result["notes"] = tool_agent_notes(definition, host.definitions)
        except RunError:
            raise
        except Exception as error:  # noqa: BLE001 - in words
            raise RunError(redact.text(describe_failure(error, agent_id))) from None
        answer: dict[str, Any] = redact(PreviewResult.model_validate({"agentId": agent_id, **result}).wire())
        return answer

    # -- runs ------------------------------------------------------------------------------------------

    def start_run(
        self, agent_id: str, input: str, *, session_id: str | None = None, on_event: EventCallback | None = None,
        approve: ApproveCallback | None = None, recorder: Recorder | None = None, view: WorkspaceView | None = None,
        model: str | None = None,
    ) -> RunHandle:
        """Starts a run as a task of the running loop and returns at once; `await` the handle for the result.

        Without `approve`, approval-required tools are not offered to the model (runtime behaviour).
        `recorder`: what records the run into its transcript (a replay passes its own); default `Recorder`.
        `view`: the workspace as the caller just read it (`view()`); default, read now.
        `model`: a `[models.NAME]` to run on instead of the definition's own.
        """
        run_id = uuid.uuid4().hex[:12]
        session_id = session_id or uuid.uuid4().hex[:12]
        read: WorkspaceView | Exception
        try:
            read = view or self.view()
        except Exception as error:  # noqa: BLE001 - the run ends `failed`, in words (`_execute`)
            read = error
        writer: TranscriptWriter | None = None
        if not (isinstance(read, WorkspaceView) and read.unknown(agent_id)):  # else it never starts: no transcript
            writer = TranscriptWriter(transcript_path(self.runs_dir, agent_id, run_id), root=self._runs_boundary)
        handle = RunHandle(run_id, agent_id, session_id, writer.path if writer is not None else None)
        config = read.config if isinstance(read, WorkspaceView) and read.loaded else None
        run = _Run(handle, on_event, Redactor.for_config(config) if config else Redactor(), writer)
        run.recorder = recorder or run.recorder
        run.model = model
        run.recorder.attach(run.record, lambda value: run.redact(value))
        handle.task = asyncio.get_running_loop().create_task(self._execute(run, read, input, approve),
                                                             name=f"oscova-run-{run_id}")
        self._runs[run_id] = handle
        return handle

    def resume_session(self, agent_id: str, session: AgentSession) -> None:
        """The next run of `agent_id` with `session.session_id` goes on from `session` (a replay continues the
        recorded conversation)."""
        self._sessions[(agent_id, session.session_id)] = session

    async def run(self, agent_id: str, input: str, **options: Any) -> dict[str, Any]:
        """Starts a run and waits for its result."""
        return await self.start_run(agent_id, input, **options)

    def cancel(self, run_id: str) -> bool:
        handle = self._runs.get(run_id)
        return handle.cancel() if handle is not None else False

    def active_runs(self) -> list[RunHandle]:
        return [h for h in self._runs.values() if not h.done()]

    async def shutdown(self) -> None:
        """Cancels every run and waits for them to end."""
        handles = self.active_runs()
        for handle in handles:
            handle.cancel()
        if handles:
            await asyncio.gather(*(h.task for h in handles if h.task is not None), return_exceptions=True)

    async def aclose(self) -> None:
        """Shuts down and closes the chat clients the service's hosts created."""
        await self.shutdown()
        for host in [*self._retired_hosts, *([self._configured_host] if self._configured_host else [])]:
            with contextlib.suppress(Exception):
                await host.aclose()
        self._retired_hosts.clear()

    async def _execute(self, run: _Run, view: WorkspaceView | Exception, input: str,
                       approve: ApproveCallback | None) -> dict[str, Any]:
        handle = run.handle
        handle.started = True
        status: RunStatus = "failed"
        error: str | None = None
        accessor = AgentRunObserverAccessor()
        name = handle.agent_id
        try:
            try:
                if handle.cancel_requested:
                    raise asyncio.CancelledError
                if isinstance(view, Exception):
                    raise view
                host = self._configured_host_for(view)
                run.redact = Redactor.for_config(host.config)
                run.denial_reason = lambda name: denial_reason(name, host)
                definition = self._definition(view, handle.agent_id)
                if run.model is not None:
                    definition = definition.model_copy(update={"model": run.model})
                name = definition.display_name
            finally:
                run.record(run.recorder.header(runId=handle.run_id, agentId=handle.agent_id, input=input,
                                               sessionId=handle.session_id, approvals=approve is not None,
                                               root=self.root, time=now_iso()))
                run.emit(StartedEvent(agent_id=handle.agent_id, agent_name=name, input=input,
                                      session_id=handle.session_id, transcript=handle.transcript))
            key = (handle.agent_id, handle.session_id)
            session = self._sessions.setdefault(key, AgentSession(session_id=handle.session_id))
            async with self._session_locks.setdefault(key, asyncio.Lock()):
                run.recorder.session(session)
                task_run = AgentTaskRun(live_messages=[])
                task_run.live_messages_changed.append(run.on_messages_changed)
                accessor.observer = AgentTaskRunObserver(task_run)
                await asyncio.to_thread(host.tokenizer_for, definition)  # an encoding loads once, off the loop
                agent = await host.get_agent(definition, configure_builder=use_agent_run_observer(accessor))
                run.input_message = ChatMessage.of("user", input)
                tracer = run_tracer(host.config, run.redact, conversation_id=handle.session_id,
                                    notify=self.notify) if self.tracing else None
                with approval_channel(self._approval_handler(run, approve) if approve else None), \
                        run.recorder.active(), listening(run.on_notice), \
                        observe_calls(run.calls, *([tracer] if tracer is not None else [])):
                    # closed here, not by the loop later: a cancellation landing between two updates still
                    # ends the model call before the final event
                    async with contextlib.aclosing(agent.run_streaming(input, session=session)) as updates:
                        async for update in updates:
                            run.on_update(update)
            unanswered = run.unanswered_calls()
            if unanswered:  # the tool loop hands back calls it could not run: say so, not `completed`
                rounds = sum(m.role == "tool" for m in run.updates.messages())
                raise RunError(unanswered_calls_message(unanswered, rounds, host))
            status = "completed"
        except asyncio.CancelledError:
            status = "cancelled"
        except Exception as failure:  # noqa: BLE001 - every failure becomes words in the result
            error = run.redact.text(describe_failure(failure, handle.agent_id))
            log.info("Run %s of %s failed: %s", handle.run_id, handle.agent_id, error)
        finally:
            accessor.observer = None
        result = self._finish(run, status, error)
        if run.writer is not None:  # the transcript is complete when the result is handed out
            await asyncio.get_running_loop().run_in_executor(None, run.writer.wait_closed)
            if run.writer.problem is not None:  # not written, or cut short (a full disk): the result says so
                result.transcript, result.transcript_error = run.writer.path, run.writer.problem
        answer: dict[str, Any] = run.redact(result.wire())
        return answer

    def _finish(self, run: _Run, status: RunStatus, error: str | None) -> RunResult:
        handle = run.handle
        handle.finishing = True  # a listener cancelling now must not turn the result into an exception
        text, reasoning = run.text(), run.reasoning.text() or None
        incomplete = run.calls.incomplete if status == "completed" else None  # cut off, or stopped by a guard
        # a final kind: RunStatus and FINAL_KINDS agree (tests/runs/test_status.py)
        if status == "completed":  # `usage`: every model call, agents used as tools' too
            run.emit(CompletedEvent(text=text, reasoning=reasoning, incomplete=incomplete,
                                    usage=usage_of(run.calls.usage)))
        elif status == "failed":
            run.emit(FailedEvent(text=text, reasoning=reasoning, error=error))
        else:
            run.emit(CancelledEvent(text=text, reasoning=reasoning))
        if run.writer is not None:
            run.writer.close()
        self._runs.pop(handle.run_id, None)
        return RunResult(run_id=handle.run_id, agent_id=handle.agent_id, session_id=handle.session_id, status=status,
                         text=text, messages=run.messages(), transcript=handle.transcript, reasoning=reasoning,
                         incomplete=incomplete, error=error)

    def _approval_handler(self, run: _Run, approve: ApproveCallback) -> Callable[[ApprovalRequest], Awaitable[bool]]:
        async def ask(request: ApprovalRequest) -> bool:
            prompt = run.redact(ApprovalPrompt(run_id=run.handle.run_id, agent_id=run.handle.agent_id,
                                               tool=request.tool_name,
                                               arguments=jsonable(dict(request.arguments))).wire())
            try:
                return bool(await approve(prompt))
            except Exception as error:  # noqa: BLE001 - no answer is a denial
                log.warning("Asking to approve %s failed; the call is denied: %s", request.tool_name,
                            run.redact.text(describe_exception(error)))
                return False

        return ask


def make_importable(root: str, config: HostConfig) -> None:
    """Puts `root` on `sys.path` for `[tools.*]` and `[providers.*]` code, and forgets a same-named module
    imported from elsewhere (another workspace) so this workspace's own file is used. Trusted roots only."""
    if root not in sys.path:
        sys.path.insert(0, root)
    specs = [t.callable for t in config.tools.values()] + [p.class_ for p in config.providers.values()]
    for top in {spec.partition(":")[0].split(".")[0] for spec in specs}:
        local = os.path.join(root, top)
        if not (os.path.isdir(local) or os.path.isfile(local + ".py")):
            continue
        module = sys.modules.get(top)
        origin = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", []) or []), None)
        if module is not None and (origin is None or not is_inside(origin, root)):
            for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
                del sys.modules[name]


def forget_modules_inside(root: str) -> None:
    """Drops the modules loaded from files inside `root`."""
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if origin and is_inside(origin, root):
            del sys.modules[name]


def load_model_client() -> None:
    """Imports the model client's library ahead of the first run (the language server calls it off its event
    loop: half a second that would otherwise stall diagnostics and completion)."""
    from oscova_runtime.chat_client import load_library

    load_library()


def _to_stderr(text: str) -> None:
    print(f"oscova-lsp: {text}", file=sys.stderr, flush=True)


class _UnconfiguredChatClient:
    """Stands in for a model that is not configured, so a preview can assemble without one."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def get_response(self, messages: Any, options: Any) -> Any:
        raise HostConfigurationError(self.reason)

    async def get_streaming_response(self, messages: Any, options: Any) -> Any:  # pragma: no cover
        raise HostConfigurationError(self.reason)
        yield
