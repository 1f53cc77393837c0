"""Runs as cancellable tasks: their events, transcripts, sessions and approval questions.

Every run streams events (`events.EVENT_KINDS`) to a callback and to a JSON-lines transcript under
`<root>/.oscova/runs/` (none for a run of an agent no definition has: it never starts), and ends with a result
(`wire.events.RunResult`: what the run answered, its messages and transcript, and why the answer is incomplete or
the transcript missing). Callbacks, transcripts and results get the models' JSON (camelCase, as on the wire).
Keys never leave a run: events, results, log messages and transcripts pass through a `Redactor`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import logging
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Literal

from oscova_runtime.governance import ToolDeniedError
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
from oscova_runtime.session import AgentSession
from oscova_runtime.telemetry import observe_calls
from oscova_runtime.tools import APPROVAL_DENIED, ApprovalRequest, approval_channel

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
from .agents_cache import AgentsCache
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
from .recorder import Recorder
from .tracing import run_tracer
from .transcript import TranscriptWriter, transcript_path
from .workspace_view import WorkspaceView

log = logging.getLogger(__name__)

RunStatus = Literal["completed", "failed", "cancelled"]
EventCallback = Callable[[dict[str, Any]], Any]
"""Called synchronously with each event's JSON (`wire.events.RunEvent`), in order; exceptions are logged and the run
goes on."""
ApproveCallback = Callable[[dict[str, Any]], Awaitable[bool]]
"""Asked before an approval-required tool runs, with an `ApprovalPrompt`'s JSON `{runId, agentId, tool, arguments}`;
True approves."""

DELTA_INTERVAL = 0.05
"""Seconds between two `delta` events of a run: text streamed faster is sent in one event, so a model
streaming at full speed costs a handful of notifications a second, not one per token."""


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


class Runner:
    """The runs of one workspace root: started as tasks of the running loop, each on the configured host of the
    view it read (`AgentsCache`), and the sessions they go on (one run of a session at a time)."""

    def __init__(self, root: str, agents: AgentsCache, *, runs_dir: str, runs_boundary: str, tracing: bool = True,
                 notify: Callable[[str], None] | None = None) -> None:
        self.root = root
        self.agents = agents
        self.runs_dir = runs_dir
        self.runs_boundary = runs_boundary
        """Transcripts stay inside it: a `.oscova` link leading out of the workspace gets none written."""
        self.tracing = tracing
        """False: runs export no spans, whatever the environment or `[telemetry]` says (a replay is offline)."""
        self.notify = notify or _to_stderr
        """Hears what a user should know once (a collector named by the workspace gets no credentials)."""
        self._runs: dict[str, RunHandle] = {}
        self._sessions: dict[tuple[str, str], AgentSession] = {}
        self._session_locks: dict[tuple[str, str], asyncio.Lock] = {}

    def start(
        self, agent_id: str, input: str, read: WorkspaceView | Exception, *, session_id: str | None = None,
        on_event: EventCallback | None = None, approve: ApproveCallback | None = None,
        recorder: Recorder | None = None, model: str | None = None,
    ) -> RunHandle:
        """Starts a run of `agent_id` on the workspace as `read` (or the exception reading it raised: the run ends
        `failed`, in words) and returns its handle at once (`RunService.start_run`)."""
        run_id = uuid.uuid4().hex[:12]
        session_id = session_id or uuid.uuid4().hex[:12]
        writer: TranscriptWriter | None = None
        if not (isinstance(read, WorkspaceView) and read.unknown(agent_id)):  # else it never starts: no transcript
            writer = TranscriptWriter(transcript_path(self.runs_dir, agent_id, run_id), root=self.runs_boundary)
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

    def session(self, agent_id: str, session_id: str | None) -> AgentSession | None:
        """The session a run of `agent_id` goes on with `session_id`, when one has started (or was resumed)."""
        return self._sessions.get((agent_id, session_id)) if session_id else None

    def resume_session(self, agent_id: str, session: AgentSession) -> None:
        """The next run of `agent_id` with `session.session_id` goes on from `session` (a replay continues the
        recorded conversation)."""
        self._sessions[(agent_id, session.session_id)] = session

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
                host = self.agents.host_for(view)
                run.redact = Redactor.for_config(host.config)
                run.denial_reason = lambda name: denial_reason(name, host)
                definition = view.definition(handle.agent_id)
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


def load_model_client() -> None:
    """Imports the model client's library ahead of the first run (the language server calls it off its event
    loop: half a second that would otherwise stall diagnostics and completion)."""
    from oscova_runtime.chat_client import load_library

    load_library()


def _to_stderr(text: str) -> None:
    print(f"oscova-lsp: {text}", file=sys.stderr, flush=True)

