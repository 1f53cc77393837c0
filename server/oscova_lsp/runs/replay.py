"""Replaying a recorded run against the agent as it is now, without the model and without the network.

`replay_run` runs the agent with a `Replayer` as its model tap: each model call the agent makes, and each
one an agent it calls as a tool makes, is compared with the recorded request of the same number (after the
same redaction) and answered with the recorded response; the endpoint is never called. An agent called as a
tool runs (so a change inside it drifts in its own request); every other tool call, of any agent, gets its
recorded result, unless `live_tools` (then every tool runs).

The first request that differs stops the run: the model call raises `ReplayDrift`, the run ends as
`failed`, and the result's `status` is `drifted` with the unified diff of the two requests in
`difference`. A replay that asks for fewer requests than were recorded drifts too, and so does one whose
tool calls or results (the `toolCall` / `toolResult` events) differ from the recorded ones: with live
tools, results of a last round that no later request carried.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import json
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from oscova_runtime.catalogue import CHAT_HISTORY_STATE_KEY
from oscova_runtime.chat_client import ChatClientError
from oscova_runtime.function_invocation import FunctionInvocationContext
from oscova_runtime.messages import (
    ChatMessage,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionCallContent,
    ReasoningContent,
    TextContent,
    UsageDetails,
)
from oscova_runtime.recording import TOOL_SCOPE, facts_at
from oscova_runtime.session import AgentSession

from ..analysis.host import AnalysisHost
from .diff import request_difference, tool_lines, unified
from .events import jsonable
from .recorder import Recorder, message_from_record
from .transcript import NESTED_TOOLS_VERSION, Recording, RecordingError, load_recording, relocate

__all__ = ["DRIFTED", "Forker", "Recording", "RecordingError", "ReplayDrift", "ReplayResult", "Replayer",
           "continue_recorded_session", "load_recording", "refuse", "replay_run"]

DRIFTED = "drifted"


class ReplayDrift(ChatClientError):
    """The agent sent the model something other than the recording holds; the message says where."""


@dataclass(slots=True)
class ReplayResult:
    matched: bool
    """No drift, and the replay ended as the recorded run did (status and answer)."""
    status: str
    """`drifted`, or the replayed run's own status: `completed`, `failed`, `cancelled`."""
    difference: str | None
    """At a drift: which request and part differ first, and the unified diff (recorded → now)."""
    events: list[dict[str, Any]] = field(default_factory=list)
    transcript: str | None = None
    """The transcript of the replayed run (itself a recording)."""
    result: dict[str, Any] = field(default_factory=dict)
    """The run result (`RunService.run`)."""


def _recreate(error: dict[str, Any], usage: UsageDetails | None = None) -> Exception:
    """The recorded exception again: same type name and message (and a model call's usage), so reports read as
    they did."""
    message = str(error.get("message", ""))
    name = str(error.get("type") or "Exception")
    if name in (ChatClientError.__name__, ReplayDrift.__name__):
        return ChatClientError(message, usage)
    return type(name if name.isidentifier() else "Exception", (Exception,), {})(message)


def _usage(recorded: Any) -> UsageDetails | None:
    if not isinstance(recorded, dict):
        return None
    cached, reasoning = (value if isinstance(value := recorded.get(key), int) and not isinstance(value, bool) else None
                         for key in ("cachedInputTokens", "reasoningTokens"))
    inputs, outputs, total = (int(recorded.get(key) or 0) for key in ("inputTokens", "outputTokens", "totalTokens"))
    return UsageDetails(inputs, outputs, total, cached_input_tokens=cached, reasoning_tokens=reasoning)


class Replayer(Recorder):
    """Answers a run's model calls and tool calls from a recording, and records the replay as it goes."""

    def __init__(self, recording: Recording, *, live_tools: bool = False, root: str | None = None) -> None:
        super().__init__()
        self.recording = recording
        self.live_tools = live_tools
        self._pending = deque(recording.exchanges)
        self._asked = 0
        self._tools = {(t.get("within"), t.get("callId")): t for t in recording.tools}
        self.drift: str | None = None
        self.root = root
        self._model_calls = 0
        self._edits = recording.edits
        if recording.clock is not None:  # the templates show the recorded run's time
            with contextlib.suppress(ValueError):
                self.clock = _dt.datetime.fromisoformat(recording.clock)

    def _normal(self, value: Any) -> Any:
        """As the recording holds it: redacted, through JSON."""
        return json.loads(json.dumps(self._redact(value), ensure_ascii=False, default=str))

    def _stop(self, difference: str) -> ReplayDrift:
        self.drift = self.drift or difference
        return ReplayDrift(f"Replay drifted from the recording: {self.drift.splitlines()[0]}")

    def _expect(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.drift is not None:
            raise self._stop(self.drift)
        self._asked += 1
        now = self._normal(request)
        if not self._pending:
            raise self._stop(request_difference(self._asked, None, now))
        recorded = self._pending.popleft()
        expected = relocate(recorded.get("request"), self.recording.root, self.root)
        if expected != now:
            raise self._stop(request_difference(self._asked, expected, now, within=recorded.get("within")))
        return recorded

    def finish(self) -> str | None:
        """The drift, if any, once the run has ended; a recorded request the replay never made is one."""
        if self.drift is None and self._pending:
            expected = relocate(self._pending[0].get("request"), self.recording.root, self.root)
            self.drift = request_difference(self._asked + 1, expected, None)
        return self.drift

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        with super().active(), facts_at(self.recording.environment):
            yield

    # -- model calls -------------------------------------------------------------------------------------

    @staticmethod
    def _contents(response: dict[str, Any]) -> tuple[list[Content], list[Content]]:
        text: list[Content] = [ReasoningContent(str(response["reasoning"]))] if response.get("reasoning") else []
        text += [TextContent(response["text"])] if response.get("text") else []
        calls: list[Content] = [FunctionCallContent(str(c.get("id", "")), str(c.get("name", "")),
                                                    dict(c.get("arguments") or {}))
                                for c in response.get("toolCalls") or ()]
        return text, calls

    async def _answer_stream(self, request: dict[str, Any]) -> AsyncGenerator[ChatResponseUpdate, None]:
        recorded = self._expect(request)
        response = recorded.get("response") or {}
        text, calls = self._contents(response)
        if text:
            yield ChatResponseUpdate("assistant", text)
        if recorded.get("error"):
            raise _recreate(recorded["error"], _usage(response.get("usage")))
        if recorded.get("incomplete"):  # the recorded run was stopped here
            raise _cancelled()
        yield ChatResponseUpdate("assistant", calls, _usage(response.get("usage")), response.get("finishReason"),
                                 response.get("model"))

    async def _answer(self, request: dict[str, Any]) -> ChatResponse:
        recorded = self._expect(request)
        if recorded.get("error"):
            raise _recreate(recorded["error"], _usage((recorded.get("response") or {}).get("usage")))
        if recorded.get("incomplete"):
            raise _cancelled()
        response = recorded.get("response") or {}
        text, calls = self._contents(response)
        return ChatResponse([ChatMessage("assistant", text + calls)], _usage(response.get("usage")),
                            response.get("finishReason"), response.get("model"))

    def stream(self, request: dict[str, Any], real: Callable[[], AsyncGenerator[ChatResponseUpdate, None]],
               ) -> AsyncGenerator[ChatResponseUpdate, None]:
        self._edit_request(request)
        return super().stream(request, lambda: self._answer_stream(request))  # `real` is never called

    async def complete(self, request: dict[str, Any], real: Callable[[], Awaitable[ChatResponse]]) -> ChatResponse:
        self._edit_request(request)
        return await super().complete(request, lambda: self._answer(request))

    def _edit_request(self, request: dict[str, Any]) -> None:
        """Makes the recorded run's edits of this model request again (a debugger's, `oscova-lsp debug`)."""
        self._model_calls += 1
        for edit in self._edits:
            if edit.get("step") == "model" and edit.get("call") == self._model_calls:
                self._make(edit, request)

    def _edit_arguments(self, context: FunctionInvocationContext) -> None:
        for edit in self._edits:
            if edit.get("step") == "tool" and edit.get("callId") == context.call.call_id and \
                    edit.get("within") == TOOL_SCOPE.get():
                self._make(edit, context.arguments)

    def _make(self, edit: dict[str, Any], target: Any) -> None:
        """Sets the edit's value at its path (one that no longer exists is left: the comparison says so)."""
        path: list[Any] = edit.get("path") or []
        for step in path[:-1]:
            target = _child(target, step)
        last = path[-1] if path else None
        if isinstance(target, dict) and isinstance(last, str):
            target[last] = edit.get("value")
        elif isinstance(target, list) and isinstance(last, int) and 0 <= last < len(target):
            target[last] = edit.get("value")
        else:
            return
        self.write(dict(edit))

    # -- tools ---------------------------------------------------------------------------------------------

    async def tool(self, context: FunctionInvocationContext,
                   call_next: Callable[[FunctionInvocationContext], Awaitable[Any]]) -> Any:
        self._edit_arguments(context)
        if self.live_tools or context.function.agent_id is not None:  # an agent's model calls meet the recording
            return await super().tool(context, call_next)
        call = context.call
        within = TOOL_SCOPE.get()
        recorded = self._tools.get((within, call.call_id))
        arguments = relocate(self._normal(jsonable(context.arguments)), self.root, self.recording.root)
        if recorded is None or recorded.get("name") != call.name or recorded.get("arguments") != arguments:
            shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
            was = (self._no_result(within) if recorded is None else
                   f"recorded: {recorded.get('name')} {json.dumps(recorded.get('arguments'), sort_keys=True)}")
            inside = f" (inside the tool call {within})" if within else ""
            # Raised in a tool the loop would report to the model: the next model call stops the run.
            raise self._stop(f"the tool call {call.call_id}{inside} differs in the tool-call arguments\n"
                             f"now: {call.name} {shown}\n{was}")
        context.terminate = bool(recorded.get("terminate"))
        self.write(dict(recorded))  # the replay's transcript records the result it used
        if recorded.get("error"):
            raise _recreate(recorded["error"])
        return recorded.get("result")

    def _no_result(self, within: str | None) -> str:
        if within is not None and self.recording.version < NESTED_TOOLS_VERSION:
            return (f"the recording has no result for it: transcript version {self.recording.version} keeps only "
                    "the requested agent's tool results, not those of agents it calls as tools; record the run "
                    "again")
        return "the recording has no result for it"


def _child(container: Any, key: Any) -> Any:
    if isinstance(container, dict):
        return container.get(key)
    if isinstance(container, list) and isinstance(key, int) and 0 <= key < len(container):
        return container[key]
    return None


class Forker(Replayer):
    """A replay that goes live at model call `live_from` (a fork): the calls before it are answered from the
    recording, and so are their tool calls; that call and every later one reach the endpoint, and from then on
    tools run. The recording's edits apply to the replayed part only."""

    def __init__(self, recording: Recording, live_from: int, *, root: str | None = None) -> None:
        super().__init__(recording, root=root)
        self.live_from = live_from
        self.live = False

    def _stop(self, difference: str) -> ReplayDrift:
        """The drift, with why a fork stops at it: what it replays must be what was recorded."""
        drift = super()._stop(difference)
        return ReplayDrift(f"{drift}; a fork replays the model calls before liveFrom ({self.live_from}) from the "
                           "recording, so they must match it: after an edit that changes them, record the run again, "
                           "or fork from an earlier call (liveFrom 1 runs every call live)")

    def _goes_live(self) -> bool:
        self.live = self.live or self._model_calls + 1 >= self.live_from
        return self.live

    def stream(self, request: dict[str, Any], real: Callable[[], AsyncGenerator[ChatResponseUpdate, None]],
               ) -> AsyncGenerator[ChatResponseUpdate, None]:
        if not self._goes_live():
            return super().stream(request, real)
        self._model_calls += 1
        return Recorder.stream(self, request, real)

    async def complete(self, request: dict[str, Any], real: Callable[[], Awaitable[ChatResponse]]) -> ChatResponse:
        if not self._goes_live():
            return await super().complete(request, real)
        self._model_calls += 1
        return await Recorder.complete(self, request, real)

    async def tool(self, context: FunctionInvocationContext,
                   call_next: Callable[[FunctionInvocationContext], Awaitable[Any]]) -> Any:
        if self.live:
            return await Recorder.tool(self, context, call_next)
        return await super().tool(context, call_next)


def continue_recorded_session(service: Any, recording: Recording, agent: str) -> str | None:
    """The session a replay of `recording` runs in: when the recorded run continued a conversation, the same
    conversation (resumed in `service`); else None (a new one)."""
    if not recording.history:
        return None
    session_id = recording.session_id or "replayed"
    session = AgentSession(session_id=session_id)
    session.state_bag[CHAT_HISTORY_STATE_KEY] = [message_from_record(m) for m in recording.history]
    service.resume_session(agent, session)
    return session_id


async def refuse(request: dict[str, Any]) -> bool:
    """The approval of a replay with nobody to ask: refused. A recording's approvals are never answers."""
    return False


def _cancelled() -> BaseException:
    """The recorded run was stopped during this call: the replay ends as `cancelled` there too."""
    return asyncio.CancelledError()


async def replay_run(root: str, agent_id: str | None, transcript: str, *, input: str | None = None,
                     live_tools: bool = False, on_event: Callable[[dict[str, Any]], Any] | None = None,
                     runs_dir: str | None = None, trace: bool = False,
                     approve: Callable[[dict[str, Any]], Awaitable[bool]] | None = None, trusted: bool = True,
                     files: AnalysisHost | None = None) -> ReplayResult:
    """Replays the run recorded in `transcript` with the agent `agent_id` (default: the recorded one) of
    the workspace `root` as it is now, on `input` (default: the recorded input). The replay's own
    transcript goes to `runs_dir` (default: `<root>/.oscova/runs/`). A replay is offline: it exports spans
    only with `trace` (then by the rules of a run's, `tracing.collector`). `trusted=False`: the workspace's
    own tools and providers are not imported (as in an untrusted preview). `files`: an analysis host holding
    the root already read (default: the run service reads it).

    Approval is never taken from the recording: when the recorded run could ask (its header says
    `approvals`), the replay offers the same tools, and a live tool that needs approval asks `approve` as a
    run would; without `approve` it is refused. (Without `live_tools` no tool runs: nothing is asked.)

    Raises `RecordingError` when the transcript cannot be replayed (an old transcript, not a transcript).
    """
    from .service import RunService

    recording = load_recording(transcript)
    service = RunService(root, runs_dir=runs_dir, trusted=trusted, host=files, tracing=trace)
    replayer = Replayer(recording, live_tools=live_tools, root=service.root)
    events: list[dict[str, Any]] = []

    def listen(event: dict[str, Any]) -> Any:
        events.append(event)
        return on_event(event) if on_event is not None else None

    agent = agent_id or recording.agent_id
    session_id = continue_recorded_session(service, recording, agent)
    try:
        handle = service.start_run(agent, recording.input if input is None else input, session_id=session_id,
                                   on_event=listen, approve=(approve or refuse) if recording.approvals else None,
                                   recorder=replayer)
        result = await handle
    finally:
        await service.aclose()
    drift = replayer.finish()
    if drift is None:  # results no later request carried (the last round) are compared here
        # The requested agent's: those of agents called as tools met the recording call by call, and an older
        # transcript has no events of theirs.
        tools = unified(tool_lines(recording.events, nested=False), tool_lines(events, nested=False),
                        "recorded tool calls", "now tool calls")
        drift = f"the tool calls or their results differ from the recording\n{tools}" if tools else None
    status = DRIFTED if drift is not None else str(result["status"])
    matched = drift is None and status == recording.status and result.get("text", "") == recording.text
    return ReplayResult(matched, status, drift, events, result.get("transcript"), result)

