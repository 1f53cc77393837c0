"""Run events and results as plain JSON-ready dicts, and the redaction every outgoing text passes through.

An event is `{runId, seq, kind, time, ...}`; `kind` is one of `EVENT_KINDS` (`oscova/runEvent`, docs/editors.md).
`modelCall` (one per model call, nested agents' included) carries `agentId`, `model`, `responseModel`,
`durationMs`, `usage` `{inputTokens, outputTokens, totalTokens, cachedInputTokens?}` and `failed` (when it did); `toolResult`
carries `durationMs`. `notice` (`source`: a provider's full type name, `provider`: its class name, `message`)
says what a provider left out of the run and why (private notes that were refused).
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from oscova_runtime.host_config import HostConfig
from oscova_runtime.messages import ChatMessage, FunctionCallContent, FunctionResultContent, UsageDetails
from oscova_runtime.telemetry import ObservedCall

EVENT_KINDS = ("started", "message", "delta", "modelCall", "toolCall", "toolResult", "notice", "completed", "failed",
               "cancelled")
FINAL_KINDS = frozenset({"completed", "failed", "cancelled"})
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


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def describe_exception(error: BaseException) -> str:
    """`Type: message` (or the type alone), without a traceback."""
    text = str(error).strip()
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


def message_to_dict(message: ChatMessage) -> dict[str, Any]:
    """`{role, source, sourceId?, text, toolCalls?, toolResults?}`."""
    out: dict[str, Any] = {"role": message.role, "source": message.source.type.value, "text": message.text}
    if message.source.source_id:
        out["sourceId"] = message.source.source_id
    if message.author_name:
        out["authorName"] = message.author_name
    calls = [c for c in message.contents if isinstance(c, FunctionCallContent)]
    if calls:
        out["toolCalls"] = [{"callId": c.call_id, "name": c.name, "arguments": jsonable(c.arguments)} for c in calls]
    results = [c for c in message.contents if isinstance(c, FunctionResultContent)]
    if results:
        out["toolResults"] = [{"callId": r.call_id, "result": jsonable(r.result)} for r in results]
    return out


def usage_fields(usage: UsageDetails) -> dict[str, int]:
    """Token usage as events and transcripts carry it; `cachedInputTokens` where the endpoint reports it."""
    fields = {"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens, "totalTokens": usage.total_tokens}
    if usage.cached_input_tokens is not None:
        fields["cachedInputTokens"] = usage.cached_input_tokens
    return fields


def milliseconds(seconds: float) -> float:
    return round(seconds * 1000, 1)


class CallLog:
    """Observes a run's calls (a `CallObserver`) for its events: a `modelCall` event as each model call
    ends, and the duration of each tool call of the requested agent for its `toolResult` event."""

    wants_content = False

    def __init__(self, emit: Callable[..., Any]) -> None:
        self.emit = emit
        self.tool_durations: dict[str, float] = {}
        self.usage = UsageDetails()
        """The tokens of every model call of the run."""

    def call_started(self, call: ObservedCall) -> None:
        pass

    def call_ended(self, call: ObservedCall) -> None:
        if call.kind == "model":
            fields: dict[str, Any] = {"agentId": call.agent_id, "model": call.name,
                                      "durationMs": milliseconds(call.duration)}
            if call.response_model:
                fields["responseModel"] = call.response_model
            if call.usage is not None:
                self.usage.add(call.usage)
                fields["usage"] = usage_fields(call.usage)
            if call.error is not None:
                fields["failed"] = True
            self.emit("modelCall", **fields)
        elif call.kind == "tool" and call.call_id and call.parent is not None and call.parent.parent is None:
            self.tool_durations[call.call_id] = call.duration
