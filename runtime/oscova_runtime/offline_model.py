"""The offline model (`[models.NAME] kind = "offline"`): an OpenAI-compatible endpoint served inside the process,
so runs, agent tests, evaluations, review and the debugger work on a machine with no model at all.

It is not a stand-in for the client: the `openai` library and this package's stream handling talk to it exactly
as to a real server, through an `httpx` transport that answers chat completions, streamed (server-sent events:
a role chunk, the answer word by word, tool calls in fragments, the finish reason, usage in a last chunk with no
choices, `[DONE]`) or whole. Its answers are deterministic: "You said: <the input>", unless a script (`script =
"offline.yaml"`, relative to the workspace root) says otherwise:

    replies:                      # the first whose `when` the last user message contains (any case) answers
      - when: weather
        say: It is sunny.
      - when: look up
        call: {tool: read_file, arguments: {path: notes.md}}
        then: "The file says: {result}"   # said once the tool's result comes back
      - say: I only know the weather.     # no `when`: matches anything
    delay_ms: 20                  # between streamed chunks

A `say` longer than the request's `max_tokens` (a word a token) is cut there and ends with `finish_reason:
"length"`, as a real endpoint's would. A script that cannot be read or is not of this shape is answered as an
endpoint answers a bad request: HTTP 400 with the reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import paths

OFFLINE_BASE_URL = "http://offline.invalid/v1"
"""The address the `openai` client is given: `.invalid` never resolves, and the transport answers before any
connection would be made."""
MAX_SCRIPT_BYTES = 256 * 1024
_RESULT_CHARS = 400
"""How much of a tool's result `{result}` (and the default answer to it) repeats."""


class ToolCallSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str = Field(description="The tool to call, by name; it must be one the request offers.")
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptedReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    when: str | None = Field(default=None, description="Matches when the last user message contains it (any case).")
    say: str | None = None
    call: ToolCallSpec | None = None
    then: str | None = Field(default=None, description="Said after the call's result; `{result}` is the result.")
    reasoning: str | None = Field(default=None, description="Sent before the answer as the model's reasoning.")


class OfflineScript(BaseModel):
    model_config = ConfigDict(extra="forbid")

    replies: list[ScriptedReply] = Field(default_factory=list)
    delay_ms: int = Field(default=0, ge=0, le=10_000)


class ScriptError(Exception):
    """The script cannot be read or has the wrong shape: the words say which and why."""


def load_script(root: str, relative: str | None) -> OfflineScript:
    """The script at `relative` (inside `root`, through the file gateway), or the empty script."""
    if not relative:
        return OfflineScript()
    import yaml

    path = paths.resolve_in_root(root, root, relative)
    if path is None:
        raise ScriptError(f"the offline model's script {relative} is outside the workspace root; it is not read")
    try:
        text = paths.read_text(path, root=root, limit=MAX_SCRIPT_BYTES)
        data = yaml.safe_load(text) or {}
        return OfflineScript.model_validate(data)
    except (paths.FileRefused, OSError) as error:
        raise ScriptError(f"the offline model's script {relative} cannot be read: {error}") from None
    except yaml.YAMLError as error:
        raise ScriptError(f"the offline model's script {relative} is not YAML: {error}") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the top level"
        raise ScriptError(f"the offline model's script {relative}: {where}: {first['msg']}") from None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


class _Answer:
    """What the offline model says to one request: reasoning, text or one tool call, and why it stopped."""

    def __init__(self, reasoning: str = "", text: str = "", call: ToolCallSpec | None = None,
                 finish: str = "stop") -> None:
        self.reasoning, self.text, self.call, self.finish = reasoning, text, call, finish


def answer(script: OfflineScript, request: dict[str, Any]) -> _Answer:
    """The deterministic answer to a chat completions request."""
    messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
    offered = [t.get("function", {}).get("name") for t in request.get("tools") or [] if isinstance(t, dict)]
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        result = _text_of(last.get("content"))[:_RESULT_CHARS]
        rule = _rule_of_call(script, messages)
        said = (rule.then if rule is not None and rule.then is not None
                else f"The tool returned: {result}").replace("{result}", result)
        return _cut(_Answer(text=said), request)
    user = next((_text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    rule = _matching(script, user)
    reasoning = rule.reasoning or "" if rule is not None else ""
    if rule is not None and rule.call is not None:
        if rule.call.tool in offered:
            return _Answer(reasoning, call=rule.call, finish="tool_calls")
        return _cut(_Answer(reasoning, f"I would call {rule.call.tool}, but this request does not offer it."), request)
    choice = request.get("tool_choice")
    forced = choice.get("function", {}).get("name") if isinstance(choice, dict) else (
        offered[0] if choice == "required" and offered else None)
    if forced:
        return _Answer(reasoning, call=ToolCallSpec(tool=forced), finish="tool_calls")
    said = rule.say if rule is not None and rule.say is not None else f"You said: {user}"
    return _cut(_Answer(reasoning, said), request)


def _matching(script: OfflineScript, user: str) -> ScriptedReply | None:
    lowered = user.lower()
    return next((r for r in script.replies if r.when is None or r.when.lower() in lowered), None)


def _rule_of_call(script: OfflineScript, messages: list[dict[str, Any]]) -> ScriptedReply | None:
    """The rule that made the call whose result came back: the one the last user message matched."""
    user = next((_text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    rule = _matching(script, user)
    return rule if rule is not None and rule.call is not None else None


def _cut(found: _Answer, request: dict[str, Any]) -> _Answer:
    """The answer cut at `max_tokens` words, as an endpoint cuts a reply at its token limit."""
    limit = request.get("max_tokens") or request.get("max_completion_tokens")
    words = found.text.split(" ")
    if isinstance(limit, int) and 0 < limit < len(words):
        return _Answer(found.reasoning, " ".join(words[:limit]), None, "length")
    return found


def _usage(request: dict[str, Any], found: _Answer) -> dict[str, int]:
    prompt = sum(len(json.dumps(m)) for m in request.get("messages") or []) // 4 + 3
    completion = len(found.text.split()) + len(found.reasoning.split()) + (8 if found.call else 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _call_id(request: dict[str, Any], call: ToolCallSpec) -> str:
    """The id of a tool call: the same for the same request and call, and (as an endpoint's ids are) another for
    each call of a conversation and for the calls of an agent called as a tool."""
    seen = json.dumps([request.get("messages"), call.tool, call.arguments], sort_keys=True, default=str)
    return "call_offline_" + hashlib.sha256(seen.encode()).hexdigest()[:12]


def _completion(request: dict[str, Any], found: _Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": found.text or None}
    if found.reasoning:
        message["reasoning_content"] = found.reasoning
    if found.call is not None:
        message["tool_calls"] = [{"id": _call_id(request, found.call), "type": "function", "function": {
            "name": found.call.tool, "arguments": json.dumps(found.call.arguments)}}]
    return {"id": "offline", "object": "chat.completion", "model": request.get("model", "offline"),
            "choices": [{"index": 0, "message": message, "finish_reason": found.finish}],
            "usage": _usage(request, found)}


def _chunks(request: dict[str, Any], found: _Answer) -> list[dict[str, Any]]:
    """The stream of one answer, chunk by chunk, as an OpenAI-compatible server sends it."""
    model = request.get("model", "offline")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "offline", "object": "chat.completion.chunk", "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_content": word}) for word in _words(found.reasoning)]
    out += [chunk({"content": word}) for word in _words(found.text)]
    if found.call is not None:
        arguments = json.dumps(found.call.arguments)
        half = len(arguments) // 2
        out.append(chunk({"tool_calls": [{"index": 0, "id": _call_id(request, found.call), "type": "function",
                                          "function": {"name": found.call.tool, "arguments": arguments[:half]}}]}))
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]}))
    out.append(chunk({}, found.finish))
    if (request.get("stream_options") or {}).get("include_usage"):
        out.append({"id": "offline", "object": "chat.completion.chunk", "model": model, "choices": [],
                    "usage": _usage(request, found)})
    return out


def _words(text: str) -> list[str]:
    """`text` in pieces that join back to it: each word with the space after it."""
    pieces = text.split(" ")
    return [piece + (" " if i < len(pieces) - 1 else "") for i, piece in enumerate(pieces) if piece or i < len(pieces) - 1]


def transport(root: str, script: str | None, httpx: Any) -> Any:
    """The transport that serves the offline model for the workspace at `root`, for the HTTP library `httpx`
    (the one `openai` itself is built on: `httpx`, or `httpx2` in later releases)."""

    class OfflineTransport(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: Any) -> Any:
            if not request.url.path.endswith("/chat/completions"):
                return _error(404, f"the offline model answers chat completions only, not {request.url.path}")
            try:
                loaded = load_script(root, script)
            except ScriptError as error:
                return _error(400, str(error))
            try:
                body = json.loads(await request.aread())
            except ValueError:
                return _error(400, "the request is not JSON")
            found = answer(loaded, body if isinstance(body, dict) else {})
            if not body.get("stream"):
                return httpx.Response(200, json=_completion(body, found))
            return httpx.Response(200, headers={"content-type": "text/event-stream"},
                                  stream=_EventStream(_chunks(body, found), loaded.delay_ms / 1000))

    class _EventStream(httpx.AsyncByteStream):
        def __init__(self, chunks: list[dict[str, Any]], delay: float) -> None:
            self.chunks, self.delay = chunks, delay

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for item in self.chunks:
                if self.delay:
                    await asyncio.sleep(self.delay)
                yield f"data: {json.dumps(item)}\n\n".encode()
            yield b"data: [DONE]\n\n"

    def _error(status: int, message: str) -> Any:
        return httpx.Response(status, json={"error": {"message": message, "type": "invalid_request_error"}})

    return OfflineTransport()
