"""The chat-completions wire format, apart from any HTTP library: a request's messages as the endpoint takes
them (`to_openai_messages`, also what token counts and spans read), and an endpoint's answer read defensively:
each field checked for its JSON kind (`field`), a body that is not a completion or arguments that are not a
JSON object raising `Malformed` with the words of what the endpoint did, a reasoning model's thinking split from
the answer (`reasoning_text`, `InlineThinking`), and the `finish_reason`s that cut an answer short (`CUT_OFF`).
`chat_client.py` sends and streams; this module only reads and writes plain data, and imports no `openai`."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from .messages import ChatMessage, Content, DataContent, ReasoningContent, TextContent, UsageDetails

CUT_OFF = {"length": "reached its token limit", "content_filter": "was stopped by the endpoint's content filter"}
"""`finish_reason`s that end an answer before the model did, in words: the answer (or a tool call) is incomplete."""


def cut_off_words(finish_reason: str | None, max_tokens: int | None) -> str | None:
    """Why an answer ended early, in words (`reached its token limit (`max_tokens` 64)`), or None."""
    words = CUT_OFF.get(finish_reason or "")
    if words is None:
        return None
    if finish_reason == "length":
        return words + (f" (`max_tokens` {max_tokens})" if max_tokens is not None else
                        " (no `max_tokens` is set: the endpoint's own limit, or its context was full)")
    return words


def to_openai_messages(messages: Sequence[ChatMessage], instructions: str | None) -> list[dict[str, Any]]:
    """The wire form of a request's messages (the system message from `instructions` first), as sent and as counted."""
    out: list[dict[str, Any]] = []
    if instructions:
        out.append({"role": "system", "content": instructions})
    for message in messages:
        if message.role == "tool":
            for result in message.function_results:
                out.append({"role": "tool", "tool_call_id": result.call_id or "",
                            "content": result.result if isinstance(result.result, str)
                            else json.dumps(result.result, default=str)})
            continue
        calls = message.function_calls
        if message.role == "assistant":
            # An answer that was all reasoning is sent back as an empty answer (the reasoning never is).
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or (None if calls else "")}
            if calls:
                entry["tool_calls"] = [
                    {"id": c.call_id, "type": "function",
                     "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for c in calls
                ]
            out.append(entry)
            continue
        if any(isinstance(c, DataContent) for c in message.contents):
            parts: list[dict[str, Any]] = []
            for content in message.contents:
                if isinstance(content, TextContent):
                    parts.append({"type": "text", "text": content.text})
                elif isinstance(content, DataContent):
                    url = f"data:{content.media_type};base64,{base64.b64encode(content.data).decode()}"
                    parts.append({"type": "image_url", "image_url": {"url": url}})
            out.append({"role": message.role, "content": parts})
        else:
            out.append({"role": message.role, "content": message.text})
    return out


MAX_JSON_DEPTH = 64
"""Nesting allowed in tool arguments: deeper data is refused before anything walks it recursively."""


class Malformed(Exception):
    """The endpoint's answer does not have the chat-completions shape; the message says where."""


def loads_json(raw: str | bytes, what: str, *, plural: bool = False) -> Any:
    verb = "are" if plural else "is"
    try:
        return json.loads(raw)
    except json.JSONDecodeError as error:
        where = error.msg.removesuffix(" at")  # "Unterminated string starting at": its position follows
        raise Malformed(f"{what} that {verb} not valid JSON ({where} at character {error.pos})") from None
    except RecursionError:
        raise Malformed(f"{what} nested too deeply to read") from None
    except UnicodeDecodeError:
        raise Malformed(f"{what} that {verb} not UTF-8 text") from None


def depth_exceeds(value: Any, limit: int) -> bool:
    """True when `value` nests containers deeper than `limit` (iterative: no recursion on hostile data)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def parse_arguments(raw: str | None, tool: str) -> dict[str, Any]:
    if not raw:
        return {}
    what = f"arguments for the tool {tool!r}"
    value = loads_json(raw, f"sent {what}", plural=True)
    if not isinstance(value, dict):
        raise Malformed(f"sent {what} that are not a JSON object")
    if depth_exceeds(value, MAX_JSON_DEPTH):
        raise Malformed(f"sent {what} nested more than {MAX_JSON_DEPTH} levels deep")
    return value


_KINDS = {str: "a string", int: "an integer", dict: "an object", list: "an array"}


def describe_json(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return _KINDS.get(type(value), type(value).__name__)


def field(container: dict[str, Any], key: str, kind: type, path: str, what: str) -> Any:
    """`container[key]` when it is absent, null or of `kind`; otherwise the answer is malformed."""
    value = container.get(key)
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    raise Malformed(f"sent {what} that is not a chat completion: `{path}{key}` is {describe_json(value)}, "
                     f"not {_KINDS[kind]}")


def read_usage(raw: Any, what: str) -> UsageDetails | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise Malformed(f"sent {what} that is not a chat completion: `usage` is {describe_json(raw)}, not an object")
    prompt, completion, total = (field(raw, key, int, "usage.", what) or 0
                                 for key in ("prompt_tokens", "completion_tokens", "total_tokens"))
    details = raw.get("prompt_tokens_details")
    cached = field(details, "cached_tokens", int, "usage.prompt_tokens_details.", what) \
        if isinstance(details, dict) else None
    output = raw.get("completion_tokens_details")
    reasoning = field(output, "reasoning_tokens", int, "usage.completion_tokens_details.", what) \
        if isinstance(output, dict) else None
    return UsageDetails(prompt, completion, total, cached_input_tokens=cached, reasoning_tokens=reasoning)


def first_choice(payload: Any, what: str) -> dict[str, Any] | None:
    if not isinstance(payload, dict):
        raise Malformed(f"sent {what} that is {describe_json(payload)}, not a JSON object")
    error = payload.get("error")
    if error is not None:
        message = error.get("message") if isinstance(error, dict) else error
        detail = f": {message[:300]}" if isinstance(message, str) and message else ""
        raise Malformed(f"reported an error instead of an answer{detail}")
    choices = field(payload, "choices", list, "", what) or []
    if not choices:
        return None
    if not isinstance(choices[0], dict):
        raise Malformed(f"sent {what} that is not a chat completion: `choices[0]` is {describe_json(choices[0])}, "
                         "not an object")
    field(choices[0], "finish_reason", str, "choices[0].", what)
    return choices[0]


def tool_call_parts(holder: dict[str, Any], path: str, what: str) -> list[tuple[int, str, str, str]]:
    """`(index, id, name, arguments)` of each tool call (or streamed piece of one) in `holder`."""
    parts = []
    for number, call in enumerate(field(holder, "tool_calls", list, path, what) or ()):
        where = f"{path}tool_calls[{number}]."
        if not isinstance(call, dict):
            raise Malformed(f"sent {what} that is not a chat completion: `{where[:-1]}` is {describe_json(call)}, "
                             "not an object")
        index = field(call, "index", int, where, what)
        function = field(call, "function", dict, where, what) or {}
        parts.append((number if index is None else index, field(call, "id", str, where, what) or "",
                      field(function, "name", str, where + "function.", what) or "",
                      field(function, "arguments", str, where + "function.", what) or ""))
    return parts


REASONING_FIELDS = ("reasoning_content", "reasoning")
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def reasoning_text(holder: dict[str, Any], path: str, what: str) -> str | None:
    """The reasoning text of a message or delta: `reasoning_content`, else `reasoning`."""
    for name in REASONING_FIELDS:
        value = field(holder, name, str, path, what)
        if value:
            return value
    return None


def _held_back(text: str, marker: str) -> int:
    """How many characters at the end of `text` could be the start of `marker` (held until the next piece)."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:size]):
            return size
    return 0


class InlineThinking:
    """Splits a `<think>…</think>` block at the start of an answer's text out of it, as the text streams in:
    `feed` each piece, `flush` at the end. What it holds back is at most the length of a marker. Text that
    does not begin with `<think>` (after white space) passes unchanged."""

    def __init__(self) -> None:
        self._state = "start"  # start (undecided), think, gap (white space after `</think>`), answer
        self._held = ""

    def feed(self, text: str) -> list[Content]:
        out: list[Content] = []
        self._held += text
        while self._held:
            if self._state == "start":
                stripped = self._held.lstrip()
                if stripped.startswith(THINK_OPEN):
                    self._held, self._state = stripped[len(THINK_OPEN):], "think"
                elif not stripped or THINK_OPEN.startswith(stripped):
                    break  # it may still become `<think>`
                else:
                    self._state = "answer"
            elif self._state == "think":
                at = self._held.find(THINK_CLOSE)
                if at == -1:
                    keep = _held_back(self._held, THINK_CLOSE)
                    if len(self._held) > keep:
                        out.append(ReasoningContent(self._held[:len(self._held) - keep]))
                        self._held = self._held[len(self._held) - keep:]
                    break
                if at:
                    out.append(ReasoningContent(self._held[:at]))
                self._held, self._state = self._held[at + len(THINK_CLOSE):], "gap"
            elif self._state == "gap":
                self._held = self._held.lstrip()
                if self._held:
                    self._state = "answer"
            else:
                out.append(TextContent(self._held))
                self._held = ""
        return out

    def flush(self) -> list[Content]:
        """What is still held: reasoning inside an unclosed block, else text."""
        held, self._held = self._held, ""
        if not held or self._state == "gap":
            return []
        return [ReasoningContent(held) if self._state == "think" else TextContent(held)]
