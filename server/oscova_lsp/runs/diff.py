"""Comparing recorded runs: the first model request that differs, the tool calls, the answers.

A request is shown as text in four parts, in the order the model reads them: `instructions` (the system
message), `messages` (each line tagged with its role; tool calls with their arguments, tool results),
`tools` (name, description, parameter schema) and `options` (model, temperature, …). A difference is a
unified diff of that text, with a first line saying which request and which part differs.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Sequence
from typing import Any

from oscova_runtime.prompt_cache import shared_prefix
from oscova_runtime.tokens import figure, tokenizer_for

from .transcript import (
    Recording,
    load_recording,
    relocate,
)

PARTS = ("instructions", "messages", "tools", "options")
PART_NAMES = {"instructions": "the instructions", "messages": "the messages", "tool-call": "the tool-call arguments",
              "tool-result": "the tool results", "tools": "the tool list", "options": "the options"}
CONTEXT_LINES = 2


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _content_lines(content: Any) -> list[str]:
    if isinstance(content, str):
        return content.splitlines() or [""]
    if isinstance(content, list):  # parts: text and images
        lines: list[str] = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                lines += str(part.get("text", "")).splitlines() or [""]
            elif isinstance(part, dict) and part.get("type") == "image_url":
                url = str((part.get("image_url") or {}).get("url", ""))
                lines.append(f"(image, {len(url)} characters of data)")
            else:
                lines.append(_compact(part))
        return lines
    return [] if content is None else [_compact(content)]


def _message_lines(message: dict[str, Any]) -> list[tuple[str, str]]:
    """`(part, line)` pairs: a message's text lines, then its tool calls."""
    role = str(message.get("role", "?"))
    if role == "tool":
        tag, part = f"[tool {message.get('tool_call_id', '')}]", "tool-result"
    else:
        tag, part = f"[{role}]", "messages"
    out = [(part, f"{tag} {line}" if index == 0 else f"  {line}")
           for index, line in enumerate(_content_lines(message.get("content")))]
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        arguments = function.get("arguments", "")
        try:
            arguments = _compact(json.loads(arguments)) if isinstance(arguments, str) and arguments else arguments
        except json.JSONDecodeError:
            pass
        out.append(("tool-call", f"[{role} → {function.get('name', '')} {call.get('id', '')}] {arguments}"))
    return out


def request_lines(request: dict[str, Any]) -> list[tuple[str, str]]:
    """A model request (wire form) as `(part, line)` pairs, headed by `## part` lines."""
    messages = list(request.get("messages") or [])
    lines: list[tuple[str, str]] = [("instructions", "## instructions")]
    if messages and isinstance(messages[0], dict) and messages[0].get("role") == "system":
        lines += [("instructions", line) for line in _content_lines(messages[0].get("content"))]
        messages = messages[1:]
    lines.append(("messages", "## messages"))
    for message in messages:
        lines += _message_lines(message if isinstance(message, dict) else {"content": message})
    lines.append(("tools", "## tools"))
    for tool in request.get("tools") or ():
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        lines.append(("tools", f"{function.get('name', '')}: {function.get('description', '')}"))
        lines.append(("tools", f"  parameters: {_compact(function.get('parameters'))}"))
    lines.append(("options", "## options"))
    lines += [("options", f"{key}: {_compact(value)}") for key, value in sorted(request.items())
              if key not in ("messages", "tools")]
    return lines


def _first_part(a: list[tuple[str, str]], b: list[tuple[str, str]]) -> str:
    """The part of the first line that differs (the newer request's, where it has that line)."""
    for index in range(max(len(a), len(b))):
        if index >= len(a) or index >= len(b) or a[index][1] != b[index][1]:
            return b[index][0] if index < len(b) else a[index][0]
    return "options"


def unified(a: Sequence[str], b: Sequence[str], from_name: str, to_name: str) -> str:
    return "\n".join(difflib.unified_diff(list(a), list(b), from_name, to_name, n=CONTEXT_LINES, lineterm=""))


def request_difference(number: int, recorded: dict[str, Any] | None, now: dict[str, Any] | None,
                       from_name: str = "recorded", to_name: str = "now", within: str | None = None) -> str:
    """Which part of model request `number` differs, then the unified diff of the two requests (an absent
    request is empty). `within`: the tool call the request was made in (an agent called as a tool)."""
    a = request_lines(recorded) if recorded is not None else []
    b = request_lines(now) if now is not None else []
    if recorded is None:
        headline = f"model request {number} is not in the {from_name} run"
    elif now is None:
        headline = f"model request {number} is not in the {to_name} run"
    else:
        headline = f"model request {number} differs in {PART_NAMES[_first_part(a, b)]}"
    if within:
        headline += f" (a request made inside the tool call {within})"
    body = unified([line for _, line in a], [line for _, line in b], f"{from_name} request {number}",
                   f"{to_name} request {number}")
    return f"{headline}\n{body}" if body else headline


# -- whole runs ---------------------------------------------------------------------------------------


def tool_lines(events: Sequence[dict[str, Any]], *, nested: bool = True) -> list[str]:
    """The tool calls (`→ name {arguments}`) and results (`← name: result`) of a run's events; those of an
    agent called as a tool (events with `within`) indented under their caller and named by their agent
    (`  echo → read_file {…}`), or left out with `nested=False`."""
    lines = []
    depth = 0  # the open tool calls of agents called as tools: they run one at a time
    for event in events:
        if event["kind"] not in ("toolCall", "toolResult"):
            continue
        at = ""
        if event.get("within") is not None:
            if not nested:
                continue
            depth = max(0, depth - 1) if event["kind"] == "toolResult" else depth + 1
            at = "  " * (depth + (event["kind"] == "toolResult")) + f"{event.get('agentId') or ''} "
        if event["kind"] == "toolCall":
            lines.append(f"{at}→ {event.get('name', '')} {_compact(event.get('arguments'))}")
        else:
            outcome = event.get("error") if "error" in event else event.get("result")
            shown = outcome if isinstance(outcome, str) else _compact(outcome)
            lines.append(f"{at}← {event.get('name', '')}: {shown}")
    return lines


def _answer_lines(recording: Recording) -> list[str]:
    status = recording.status or "unfinished"
    last = recording.events[-1] if recording.events else {}
    lines = [f"status: {status}"] + (recording.text.splitlines() or [""])
    if last.get("error"):
        lines.append(f"error: {last['error']}")
    return lines


def shared_leading_tokens(a: Recording, b: Recording) -> str:
    """How many leading tokens the two runs' first requests share (what an endpoint's prompt cache could reuse
    from one for the other) and where they first differ; '' when either run made no request or they are equal."""
    if not a.exchanges or not b.exchanges:
        return ""
    first = relocate(a.exchanges[0].get("request"), a.root, b.root)
    second = b.exchanges[0].get("request")
    if not isinstance(first, dict) or not isinstance(second, dict) or first == second:
        return ""
    tokenizer = tokenizer_for(str(first.get("model") or ""))
    prefix = shared_prefix(first, second, tokenizer)
    return (f"The first requests share {figure(prefix.tokens, tokenizer.exact)} leading tokens ({tokenizer.name}); "
            f"{prefix.ends}.")


def diff_recordings(a: Recording, b: Recording) -> str:
    """The first model request that differs, the differences in tool calls and answers; '' when equal."""
    name_a, name_b = os.path.basename(a.path), os.path.basename(b.path)
    sections: list[str] = []
    shared = shared_leading_tokens(a, b)
    if shared:
        sections.append(shared)
    for number in range(1, max(len(a.exchanges), len(b.exchanges)) + 1):
        first = relocate(a.exchanges[number - 1].get("request"), a.root, b.root) if number <= len(a.exchanges) else None
        second = b.exchanges[number - 1].get("request") if number <= len(b.exchanges) else None
        if first != second:
            sections.append(f"First difference: {request_difference(number, first, second, name_a, name_b)}")
            break
    tools = unified(tool_lines(a.events), tool_lines(b.events), f"{name_a} tool calls", f"{name_b} tool calls")
    if tools:
        sections.append(f"Tool calls differ:\n{tools}")
    answers = unified(_answer_lines(a), _answer_lines(b), f"{name_a} answer", f"{name_b} answer")
    if answers:
        sections.append(f"Answers differ:\n{answers}")
    return "\n\n".join(sections)


def render_requests(recording: Recording) -> str:
    """Every model request of a recorded run as text (the form the diffs use), for a side-by-side view."""
    blocks = []
    for number, exchange in enumerate(recording.exchanges, start=1):
        within = f" (inside the tool call {exchange['within']})" if exchange.get("within") else ""
        request = exchange.get("request")
        lines = [line for _, line in request_lines(request)] if isinstance(request, dict) else []
        blocks.append("\n".join([f"# model request {number}{within}", *lines]))
    return "\n\n".join(blocks) + "\n" if blocks else ""


def diff_transcripts(a: str, b: str) -> str:
    """`diff_recordings` of two transcript files; raises `RecordingError` for one that cannot be read."""
    return diff_recordings(load_recording(a), load_recording(b))
