"""Run events and results built from their models (`oscova_lsp.wire.events`), and the redaction every outgoing text
passes through.

An event is `{runId, seq, kind, time, ...}`; `kind` is one of `EVENT_KINDS` (`oscova/runEvent`, docs/editors.md).
Each kind is a model of `wire/events.py`, which says what it carries; the run fills in `runId`, `seq` and `time`
as it emits it (`service.py`), and hands its listeners and its transcript the event's JSON, redacted. `CallLog`
makes a `modelCall` event of each model call (nested agents' included) and a `warning` where something makes an
answer other than the model's whole answer (`cutOff`, `contentFilter`, `repeatedCall`, `toolChoiceIgnored`); when
the requested agent's answer is cut off or stopped, the final event and the result carry `incomplete`.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from oscova_runtime.function_invocation import serialize_result
from oscova_runtime.host_config import HostConfig
from oscova_runtime.messages import ChatMessage, FunctionCallContent, FunctionResultContent, UsageDetails
from oscova_runtime.notices import AGENT, RunWarning
from oscova_runtime.telemetry import ObservedCall, current_call
from oscova_runtime.tools import APPROVAL_DENIED, ToolArgumentError

from ..wire.events import (
    EVENT_KINDS,
    FINAL_KINDS,
    ConversationMessage,
    Incomplete,
    MessageToolCall,
    MessageToolResult,
    ModelCallEvent,
    RunEventBase,
    ToolCallEvent,
    ToolResultEvent,
    Usage,
    WarningEvent,
)

__all__ = ["EVENT_KINDS", "FINAL_KINDS"]
REDACTED = "***"
MIN_SECRET_LENGTH = 4
"""Shorter values (an empty or placeholder key) are not treated as secrets: they would mangle every text."""


class Redactor:
    """Replaces secret values (the keys named by `[models.*] api_key_env`) in every string of a value."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True)

    @classmethod
    def for_config(cls, config: HostConfig, environ: Mapping[str, str] | None = None) -> Redactor:
        environ = os.environ if environ is None else environ
        values = [environ.get(model.api_key_env, "") for model in config.models.values() if model.api_key_env]
        return cls(values)

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def __call__(self, value: Any) -> Any:
        return map_strings(value, self.text) if self.secrets else value


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """`value` (JSON-like: strings, mappings, lists, tuples) with `change` applied to every string in it, keys
    included; mappings become dicts and tuples lists."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, Mapping):
        return {map_strings(k, change): map_strings(v, change) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [map_strings(v, change) for v in value]
    return value


class StreamRedactor:
    """Redacts a text that arrives in pieces (streamed deltas), so a secret split across pieces is caught.

    `feed` returns what is safe to show now; it holds back the longest tail of the text so far that could
    still grow into a secret (a proper prefix of one), and `flush` gives the rest at the end. Without
    secrets nothing is held back."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self._held = ""

    def feed(self, piece: str) -> str:
        if not self.redactor.secrets:
            return piece
        text = self.redactor.text(self._held + piece)
        keep = self._unsafe_tail(text)
        self._held = text[len(text) - keep:] if keep else ""
        return text[:len(text) - keep]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return self.redactor.text(held)

    def _unsafe_tail(self, text: str) -> int:
        longest = 0
        for secret in self.redactor.secrets:
            for size in range(min(len(secret) - 1, len(text)), longest, -1):
                if text.endswith(secret[:size]):
                    longest = size
                    break
        return longest


class PacedStream:
    """A text that streams in pieces (a reasoning model's thinking), sent as events (`make(text)`) at most every
    `interval` seconds and redacted over the whole stream (`StreamRedactor`, which the owner replaces with its run's
    redaction). Its pieces are kept, and joined once (`text`)."""

    def __init__(self, make: Callable[[str], RunEventBase], emit: Callable[[RunEventBase], Any],
                 interval: float) -> None:
        self.make = make
        self.emit = emit
        self.interval = interval
        self.redactor = StreamRedactor(Redactor())
        self._pieces: list[str] = []
        self._unsent: list[str] = []
        self._last = 0.0
        self._timer: Any = None

    def add(self, piece: str) -> None:
        import asyncio
        import time

        self._pieces.append(piece)
        self._unsent.append(piece)
        waited = time.monotonic() - self._last
        if waited >= self.interval:
            self.send()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.interval - waited, self.send)

    def send(self, final: bool = False) -> None:
        """Sends what is not sent yet as one event; `final` also releases the tail held back because it could
        be the start of a secret (the stream has ended, or another kind of event follows)."""
        import time

        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        text = self.redactor.feed("".join(self._unsent)) if self._unsent else ""
        self._unsent.clear()
        if final:
            text += self.redactor.flush()
        if text:
            self._last = time.monotonic()
            self.emit(self.make(text))

    def text(self) -> str:
        return "".join(self._pieces)


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def describe_exception(error: BaseException) -> str:
    """`Type: message` (or the type alone), without a traceback; a message written for the user alone (a tool
    called with an argument it does not take)."""
    text = str(error).strip()
    if isinstance(error, ToolArgumentError):
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def jsonable(value: Any) -> Any:
    """A tool argument or result as JSON-ready data (unknown objects as their `str`)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    return str(value)


def conversation_message(message: ChatMessage) -> ConversationMessage:
    """A message of the conversation as events, results and previews carry it."""
    calls = [c for c in message.contents if isinstance(c, FunctionCallContent)]
    results = [c for c in message.contents if isinstance(c, FunctionResultContent)]
    return ConversationMessage(
        role=message.role, source=message.source.type.value, text=message.text, reasoning=message.reasoning or None,
        source_id=message.source.source_id or None, author_name=message.author_name or None,
        tool_calls=[MessageToolCall(call_id=c.call_id, name=c.name, arguments=jsonable(c.arguments))
                    for c in calls] or None,
        tool_results=[MessageToolResult(call_id=r.call_id, result=jsonable(r.result)) for r in results] or None)


def usage_of(usage: UsageDetails) -> Usage:
    """Token usage as events and transcripts carry it; `cachedInputTokens` where the endpoint reports it."""
    return Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, total_tokens=usage.total_tokens,
                 cached_input_tokens=usage.cached_input_tokens, reasoning_tokens=usage.reasoning_tokens)


def milliseconds(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _of_requested_agent(call: ObservedCall | None) -> bool:
    """The call belongs to the run's requested agent (not to an agent it called as a tool)."""
    return call is not None and call.parent is not None and call.parent.parent is None


def _within(call: ObservedCall) -> str | None:
    """The call id of the tool call `call` was made in (an agent called as a tool), or None."""
    outer = call.parent
    while outer is not None and not (outer.kind == "tool" and outer.call_id):
        outer = outer.parent
    return outer.call_id if outer is not None else None


class CallLog:
    """Observes a run's calls (a `CallObserver`) for its events: a `modelCall` event as each model call
    ends, the duration of each tool call of the requested agent for its `toolResult` event, the `toolCall` and
    `toolResult` events of the tool calls of agents called as tools (with `agentId` and `within`, the call id of
    the tool call they were made in: the requested agent's own come from its stream), and a `warning` where an
    answer is cut off, stopped or not what `tool_choice` asked for."""

    wants_content = False

    def __init__(self, emit: Callable[[RunEventBase], Any]) -> None:
        self.emit = emit
        self.tool_durations: dict[str, float] = {}
        self.usage = UsageDetails()
        """The tokens of every model call of the run."""
        self.incomplete: Incomplete | None = None
        """`{reason, message}` when the requested agent's answer is cut off or was stopped (its last model call
        ended on `length` or a content filter, or a guard stopped its tool loop after it)."""

    def call_started(self, call: ObservedCall) -> None:
        within = _within(call) if call.kind == "tool" and call.call_id else None
        if within is not None:
            self.emit(ToolCallEvent(call_id=call.call_id, name=call.name, arguments=jsonable(call.arguments),
                                    agent_id=call.agent_id, within=within))

    def _nested_result(self, call: ObservedCall, within: str) -> None:
        result = ToolResultEvent(call_id=call.call_id, name=call.name, agent_id=call.agent_id, within=within,
                                 duration_ms=milliseconds(call.duration))
        if call.error is not None:
            result.error = describe_exception(call.error) if isinstance(call.error, Exception) else "cancelled"
        else:
            result.result = jsonable(serialize_result(call.result))
            result.denied = call.result == APPROVAL_DENIED
        self.emit(result)

    def call_ended(self, call: ObservedCall) -> None:
        if call.kind == "model":
            usage: Usage | None = None
            if call.usage is not None:
                self.usage.add(call.usage)
                usage = usage_of(call.usage)
                if usage.reasoning_tokens is None and call.reasoning_tokens is not None:
                    usage.reasoning_tokens = call.reasoning_tokens  # counted here
            predicted = call.predicted_input_tokens
            self.emit(ModelCallEvent(
                agent_id=call.agent_id, model=call.name, duration_ms=milliseconds(call.duration),
                response_model=call.response_model or None, usage=usage, finish_reason=call.finish_reason or None,
                predicted_input_tokens=predicted, prediction_exact=predicted is None or call.counted_exactly,
                failed=call.error is not None))
            if call.error is None:
                self._check_answer(call)
        elif call.kind == "tool" and call.call_id:
            within = _within(call)
            if within is not None:
                self._nested_result(call, within)
            elif call.parent is not None and call.parent.parent is None:
                self.tool_durations[call.call_id] = call.duration

    def _check_answer(self, call: ObservedCall) -> None:
        from oscova_runtime.completions import CUT_OFF, cut_off_words

        options = call.options
        cut = cut_off_words(call.finish_reason, options.max_tokens if options is not None else None)
        requested = _of_requested_agent(call)
        if cut is not None:
            reason = "cutOff" if call.finish_reason == "length" else "contentFilter"
            self.warning(reason, f"The answer of {self._whose(call)} was cut off: it {cut}", call)
        elif requested:
            self.incomplete = None  # the last answer decides
        if options is not None and options.tool_choice == "required" and options.tools and not call.tool_calls \
                and call.finish_reason not in CUT_OFF:
            self.warning("toolChoiceIgnored", f"The model of {self._whose(call)} was required to call a tool "
                         "(`tool_choice: required`) and answered in text only", call)

    @staticmethod
    def _whose(call: ObservedCall | None) -> str:
        agent = call.agent_id if call is not None else None
        if agent is None:
            return "the agent"
        return f"`{agent}`" + ("" if _of_requested_agent(call) else " (called as a tool)")

    def warning(self, reason: str, message: str, call: ObservedCall | None = None) -> None:
        """Emits a `warning` event; one about the requested agent's answer makes the run `incomplete`."""
        agent = call.agent_id if call is not None else None
        self.emit(WarningEvent(reason=reason, agent_id=agent or None, message=message))
        if _of_requested_agent(call) and reason != "toolChoiceIgnored":
            self.incomplete = Incomplete(reason=reason, message=message)

    def heard(self, warning: RunWarning) -> None:
        """A runtime warning (`oscova_runtime.notices.warn`), said of the call in progress (a tool call's agent)."""
        call = current_call()
        self.warning(warning.reason, warning.message.replace(AGENT, self._whose(call)), call)
