"""Recording a run into its transcript: every model request and response, every tool result.

A `Recorder` is the run's model tap (`oscova_runtime.recording`) and a function middleware of the
requested agent. It writes `record` lines (see `transcript.py`) through the run's sink, which redacts them
and hands them to the transcript writer's thread: the run itself only builds small dicts.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import itertools
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from typing import Any

from oscova_runtime.catalogue import CHAT_HISTORY_STATE_KEY
from oscova_runtime.function_invocation import FunctionInvocationContext, serialize_result
from oscova_runtime.messages import (
    ChatMessage,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    MessageSource,
    MessageSourceType,
    ReasoningContent,
    TextContent,
    UsageDetails,
)
from oscova_runtime.providers.environment import static_facts
from oscova_runtime.recording import TOOL_SCOPE, clock_at, tapped
from oscova_runtime.session import AgentSession

from .events import jsonable, usage_of
from .transcript import RUN_VERSION

Sink = Callable[[dict[str, Any]], None]


def _usage(usage: UsageDetails | None) -> dict[str, Any] | None:
    return usage_of(usage).wire() if usage is not None else None


def message_record(message: ChatMessage) -> dict[str, Any]:
    """A stored message as JSON-ready data (`message_from_record` reads it back)."""
    contents: list[dict[str, Any]] = []
    for content in message.contents:
        if isinstance(content, TextContent):
            contents.append({"text": content.text})
        elif isinstance(content, ReasoningContent):
            contents.append({"reasoning": content.text})
        elif isinstance(content, FunctionCallContent):
            contents.append({"call": content.call_id, "name": content.name, "arguments": jsonable(content.arguments)})
        elif isinstance(content, FunctionResultContent):
            contents.append({"result": jsonable(content.result), "callId": content.call_id})
        elif isinstance(content, DataContent):
            contents.append({"data": base64.b64encode(content.data).decode(), "mediaType": content.media_type})
    out: dict[str, Any] = {"role": message.role, "contents": contents, "source": message.source.type.value}
    if message.source.source_id:
        out["sourceId"] = message.source.source_id
    if message.author_name:
        out["authorName"] = message.author_name
    return out


def message_from_record(data: dict[str, Any]) -> ChatMessage:
    contents: list[Content] = []
    for item in data.get("contents") or ():
        if "text" in item:
            contents.append(TextContent(str(item["text"])))
        elif "reasoning" in item:
            contents.append(ReasoningContent(str(item["reasoning"])))
        elif "call" in item:
            contents.append(FunctionCallContent(str(item["call"]), str(item.get("name", "")),
                                                dict(item.get("arguments") or {})))
        elif "result" in item:
            contents.append(FunctionResultContent(item.get("callId"), item["result"]))
        elif "data" in item:
            contents.append(DataContent(base64.b64decode(item["data"]), str(item.get("mediaType", ""))))
    try:
        kind = MessageSourceType(data.get("source"))
    except ValueError:
        kind = MessageSourceType.EXTERNAL
    return ChatMessage(str(data.get("role", "user")), contents, MessageSource(kind, data.get("sourceId")),
                       data.get("authorName"))


class _Response:
    """A model response as it streams in: reasoning, text, tool calls, usage, finish reason."""

    def __init__(self) -> None:
        self.reasoning: list[str] = []
        self.text: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.usage = UsageDetails()
        self.has_usage = False
        self.finish: str | None = None
        self.model: str | None = None

    def add(self, update: ChatResponseUpdate) -> None:
        for content in update.contents:
            if isinstance(content, TextContent):
                self.text.append(content.text)
            elif isinstance(content, ReasoningContent):
                self.reasoning.append(content.text)
            elif isinstance(content, FunctionCallContent):
                self.calls.append({"id": content.call_id, "name": content.name,
                                   "arguments": jsonable(content.arguments)})
        if update.usage is not None:
            self.usage.add(update.usage)
            self.has_usage = True
        self.finish = update.finish_reason or self.finish
        self.model = update.model or self.model

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": "".join(self.text), "toolCalls": self.calls,
                               "usage": _usage(self.usage) if self.has_usage else None, "finishReason": self.finish}
        if self.model:
            out["model"] = self.model
        if self.reasoning:
            out["reasoning"] = "".join(self.reasoning)
        return out


class Recorder:
    """Records one run. `attach` gives it the run's sink; `active()` taps the model and tool calls of the run
    (every agent's: the requested one and the agents it calls as tools)."""

    def __init__(self) -> None:
        self._sink: Sink | None = None
        self._redact: Callable[[Any], Any] = lambda value: value
        self._index = itertools.count(1)
        self.clock = _dt.datetime.now(_dt.UTC)
        """The time the run's templates show (`current_date`, `current_time`): its start, for the whole run."""
        self.version = RUN_VERSION
        """The transcript version the header states (a debug run's recorder raises it: it may write edits)."""

    def header(self, **fields: Any) -> dict[str, Any]:
        """The transcript's first line: the version, `fields` (the run's id, agent, input, root…), the clock
        and the machine's facts the environment provider shows."""
        return {"record": "header", "version": self.version, **fields,
                "clock": self.clock.isoformat(timespec="microseconds"), "environment": static_facts()}

    def attach(self, sink: Sink, redact: Callable[[Any], Any]) -> None:
        """`sink` writes a line to the transcript (redacted); `redact` is the run's redaction."""
        self._sink = sink
        self._redact = redact

    def write(self, line: dict[str, Any]) -> None:
        if self._sink is not None:
            self._sink(line)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        with tapped(self), clock_at(self.clock):
            yield

    def session(self, session: AgentSession) -> None:
        """Records the conversation the run continues (its session's history), when there is one."""
        history = session.state_bag.get(CHAT_HISTORY_STATE_KEY)
        if history:
            self.write({"record": "session", "history": [message_record(m) for m in history]})

    # -- tools -----------------------------------------------------------------------------------------

    async def tool(self, context: FunctionInvocationContext,
                   call_next: Callable[[FunctionInvocationContext], Awaitable[Any]]) -> Any:
        """The tap's tool hook: runs the call and records its result; `within` is the tool call it was made in
        (an agent called as a tool), None for the requested agent's own calls."""
        call = context.call
        line: dict[str, Any] = {"record": "tool", "callId": call.call_id, "name": call.name,
                                "arguments": jsonable(context.arguments), "within": TOOL_SCOPE.get()}
        token = TOOL_SCOPE.set(call.call_id)
        try:
            result = await call_next(context)
        except Exception as error:
            self.write({**line, "error": {"type": type(error).__name__, "message": str(error)},
                        "terminate": context.terminate})
            raise
        finally:
            TOOL_SCOPE.reset(token)
        self.write({**line, "result": serialize_result(result), "terminate": context.terminate})
        return result

    # -- model calls (the tap) -------------------------------------------------------------------------

    def _line(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"record": "model", "index": next(self._index), "within": TOOL_SCOPE.get(), "request": request}

    async def stream(self, request: dict[str, Any], real: Callable[[], AsyncGenerator[ChatResponseUpdate, None]],
                     ) -> AsyncGenerator[ChatResponseUpdate, None]:
        line = self._line(request)
        response = _Response()
        try:
            async with contextlib.aclosing(real()) as updates:
                async for update in updates:
                    response.add(update)
                    yield update
        except Exception as error:
            line["error"] = {"type": type(error).__name__, "message": str(error)}
            response.add(ChatResponseUpdate("assistant", [], getattr(error, "usage", None)))  # a cut tool call's
            raise
        except BaseException:  # cancelled, or the consumer stopped reading: what came so far
            line["incomplete"] = True
            raise
        finally:
            line["response"] = response.to_dict()
            self.write(line)

    async def complete(self, request: dict[str, Any], real: Callable[[], Awaitable[ChatResponse]]) -> ChatResponse:
        line = self._line(request)
        try:
            answer = await real()
        except Exception as error:
            line["error"] = {"type": type(error).__name__, "message": str(error)}
            usage = getattr(error, "usage", None)
            if isinstance(usage, UsageDetails):  # a cut tool call still cost tokens
                line["response"] = {"usage": usage_of(usage).wire()}
            self.write(line)
            raise
        except BaseException:
            line["incomplete"] = True
            self.write(line)
            raise
        response = _Response()
        for message in answer.messages:
            response.add(ChatResponseUpdate("assistant", list(message.contents)))
        if answer.usage is not None:
            response.add(ChatResponseUpdate("assistant", [], answer.usage))
        response.finish, response.model = answer.finish_reason, answer.model
        line["response"] = response.to_dict()
        self.write(line)
        return answer
