"""An OpenAI-compatible chat client on `openai.AsyncOpenAI`: chat completions, streaming, tool calls, usage.

`openai` is imported on first use, never at import time. The key is read from the environment variable
named by `api_key_env` and never appears in logs or error messages.

The endpoint's answer is read as raw HTTP (server-sent events for a stream) and checked against the
chat-completions format: a body that is not a completion (an HTML page), data that is not JSON, a chunk
of the wrong shape, a stream that ends before `data: [DONE]`, a connection closed mid-answer and tool
arguments that are not a JSON object each raise `ChatClientError` with a sentence saying what the
endpoint did; tool arguments cut off by the token limit (`finish_reason: "length"`) say that instead, and keep
the call's usage. Parsing the JSON ourselves also keeps a long stream cheap (no model object per chunk).

A reasoning model's thinking arrives in one of three shapes, each read into a `ReasoningContent` apart from
the answer's text: `reasoning_content` beside `content` (llama.cpp, vLLM, DeepSeek), `reasoning` (OpenRouter,
Ollama, newer vLLM), or a `<think>…</think>` block at the start of `content` where the server leaves it inline.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

from .completions import (
    InlineThinking,
    Malformed,
    cut_off_words,
    field,
    first_choice,
    loads_json,
    parse_arguments,
    read_usage,
    reasoning_text,
    to_openai_messages,
    tool_call_parts,
)
from .messages import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionCallContent,
    ReasoningContent,
    UsageDetails,
)
from .recording import current_tap
from .stepping import current_stepper
from .tools import AIFunction

NO_KEY_PLACEHOLDER = "not-needed"


def load_library() -> None:
    """Imports `openai` now (about half a second) rather than on the first model call: the language server
    calls it off its event loop before its first run. Nothing happens when `openai` is not installed."""
    try:
        import openai  # noqa: F401
    except ImportError:
        pass


class ChatClientError(Exception):
    """A model call failed; the message is written for the user and never holds the key. `usage`: what the
    endpoint reported the call cost, when it answered before the failure was found (a cut tool call)."""

    def __init__(self, message: str, usage: UsageDetails | None = None) -> None:
        super().__init__(message)
        self.usage = usage


def _http() -> Any:
    """The HTTP library `openai` is built on (`httpx`; `httpx2` in later releases), for its exceptions."""
    import importlib

    import openai._base_client as base

    for name in ("httpx2", "httpx"):
        module = getattr(base, name, None)
        if module is not None:
            return module
    return importlib.import_module("httpx")


def tls_context() -> Any:
    """The TLS settings of this process's clients, as the HTTP library builds them by default: the system's CA
    certificates, or those SSL_CERT_FILE or SSL_CERT_DIR name (built again when either changes). Building them
    reads every certificate (50 ms of CPU); a client of its own each (one for each endpoint of each run) did it
    again. One context serves any number of connections."""
    return _tls_context_for(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _tls_context_for(cert_file: str | None, cert_dir: str | None) -> Any:
    """The context for these variables' values (the library reads them itself). True (each client builds its
    own, as before) with an `httpx` older than its public `create_ssl_context`."""
    build = getattr(_http(), "create_ssl_context", None)
    return build() if build is not None else True


async def _server_sent_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    """`(event type, data)` of each server-sent event; comments and other fields are skipped."""
    data: list[str] = []
    kind = "message"
    async for line in lines:
        if not line:
            if data:
                yield kind, "\n".join(data)
            data, kind = [], "message"
        elif line.startswith("data:"):
            data.append(line[6:] if line.startswith("data: ") else line[5:])
        elif line.startswith("event:"):
            kind = line[6:].strip()
    if data:
        yield kind, "\n".join(data)


class OpenAIChatClient:
    """Speaks to any OpenAI-compatible endpoint. One instance holds one `AsyncOpenAI` client."""

    def __init__(
        self, model: str, *, base_url: str | None = None, api_key_env: str | None = None,
        timeout: float = 60.0, max_retries: int = 0, model_name: str = "default", transport: Any = None,
    ) -> None:
        self.transport = transport
        """An `httpx` transport that answers in place of the network (the offline model's), or None."""
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.max_retries = max_retries
        self.model_name = model_name
        self._client: Any = None

    def _where(self) -> str:
        return self.base_url or "the default OpenAI endpoint"

    def _ensure_client(self) -> Any:
        if self._client is not None:
            return self._client
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ChatClientError(
                    f"The environment variable {self.api_key_env} (`api_key_env` of [models.{self.model_name}]) "
                    "is not set; set it to the endpoint's API key"
                )
        elif self.base_url:
            key = NO_KEY_PLACEHOLDER
        else:
            raise ChatClientError(
                f"[models.{self.model_name}] sets neither `base_url` nor `api_key_env`; configure an endpoint"
            )
        import openai

        from .network import EndpointRefused, model_client

        try:  # the network gateway: this endpoint only, no redirect followed
            self._client = model_client(openai, base_url=self.base_url, api_key=key, timeout=self.timeout,
                                        max_retries=self.max_retries, verify=tls_context(),
                                        what=f"`base_url` of [models.{self.model_name}]", transport=self.transport)
        except EndpointRefused as refused:
            raise ChatClientError(str(refused)) from None
        return self._client

    async def aclose(self) -> None:
        """Closes the HTTP client (the host owns the lifetime of its chat clients)."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def _arguments(self, messages: Sequence[ChatMessage], options: ChatOptions, stream: bool) -> dict[str, Any]:
        args: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(messages, options.instructions)}
        tools = [t.schema() for t in options.tools or () if isinstance(t, AIFunction)]
        if tools:
            args["tools"] = tools
            if options.tool_choice:
                args["tool_choice"] = options.tool_choice
        for name in ("temperature", "top_p", "max_tokens", "seed", "stop"):
            value = getattr(options, name)
            if value is not None:
                args[name] = value
        if options.extra:
            args["extra_body"] = dict(options.extra)
        if stream:
            args["stream"] = True
            args["stream_options"] = {"include_usage": True}
        return args

    def _translate(self, error: Exception) -> ChatClientError:
        import openai

        if isinstance(error, openai.APITimeoutError):
            return ChatClientError(f"The model endpoint at {self._where()} did not answer in time")
        if isinstance(error, openai.APIConnectionError):
            return ChatClientError(f"The model endpoint at {self._where()} is unreachable; is it running?")
        if isinstance(error, openai.NotFoundError):
            return ChatClientError(f"The model endpoint at {self._where()} does not know the model {self.model!r}")
        if not isinstance(error, openai.APIStatusError):
            return ChatClientError(f"The model call failed: {type(error).__name__}")
        status = f"(HTTP {error.status_code}){self._detail(error)}"
        if isinstance(error, openai.AuthenticationError):  # the endpoint's own words, then what to check here
            return ChatClientError(f"The model endpoint at {self._where()} refused the request {status}; "
                                   + self._key_advice())
        if isinstance(error, openai.RateLimitError):
            return ChatClientError(f"The model endpoint at {self._where()} is rate limiting requests {status}; "
                                   "try again later")
        return ChatClientError(f"The model returned an error {status}")

    def _detail(self, error: Any) -> str:
        """The endpoint's message (`: …`), with the key blanked should the endpoint echo it."""
        detail = _error_detail(error)
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return detail.replace(key, "***") if key else detail

    def _key_advice(self) -> str:
        where = f"[models.{self.model_name}]"
        if self.api_key_env:
            return f"check the key in {self.api_key_env} (`api_key_env` of {where})"
        return f"{where} sets no `api_key_env`: name the environment variable that holds the endpoint's key"

    def _failure(self, malformed: Malformed) -> ChatClientError:
        return ChatClientError(f"The model endpoint at {self._where()} {malformed}")

    def _check_media_type(self, headers: Any, expected: tuple[str, ...]) -> str:
        media = str(headers.get("content-type") or "").split(";")[0].strip().lower()
        if media in expected:
            return media
        shown = media or "no content type"
        hint = ("; is `base_url` the address of its API (it usually ends in /v1)?" if media == "text/html" else "")
        raise ChatClientError(f"The model endpoint at {self._where()} answered with {shown}, not a chat "
                              f"completion{hint}")

    def _mid_stream(self, error: Exception) -> ChatClientError:
        if isinstance(error, _http().TimeoutException):
            return ChatClientError(f"The model endpoint at {self._where()} went silent in the middle of the answer "
                                   f"(nothing for {self.timeout:g} s): it did not answer in time")
        return ChatClientError(f"The model endpoint at {self._where()} closed the connection in the middle of "
                               "the answer")

    def _completion(self, payload: Any, max_tokens: int | None = None) -> ChatResponse:
        what = "an answer"
        choice = first_choice(payload, what)
        result: list[ChatMessage] = []
        finish = None
        if choice is not None:
            finish = choice.get("finish_reason")
            message = field(choice, "message", dict, "choices[0].", what)
            if message is None:
                raise Malformed(f"sent {what} that is not a chat completion: `choices[0].message` is missing")
            contents: list[Any] = []
            reasoning = reasoning_text(message, "choices[0].message.", what)
            if reasoning:
                contents.append(ReasoningContent(reasoning))
            text = field(message, "content", str, "choices[0].message.", what)
            if text:
                inline = InlineThinking()
                contents.extend([*inline.feed(text), *inline.flush()])
            usage = read_usage(payload.get("usage"), what)
            for _, call_id, name, arguments in tool_call_parts(message, "choices[0].message.", what):
                contents.append(FunctionCallContent(call_id, name, self._arguments_of(arguments, name, finish,
                                                                                      max_tokens, usage)))
            result.append(ChatMessage("assistant", contents))
        model = payload.get("model")
        return ChatResponse(result, read_usage(payload.get("usage"), what), finish,
                            model if isinstance(model, str) else None)

    def _arguments_of(self, raw: str, name: str, finish: str | None, max_tokens: int | None,
                      usage: UsageDetails | None) -> dict[str, Any]:
        """A tool call's arguments; arguments the token limit (or a content filter) cut off are said to be, with
        the call's usage kept, rather than blamed on the endpoint."""
        try:
            return parse_arguments(raw, name)
        except Malformed:
            cut = cut_off_words(finish, max_tokens)
            if cut is None:
                raise
            advice = ("" if finish != "length" else "; raise `max_tokens` in the agent's `chat_options`"
                      if max_tokens is not None else "; shorten the conversation or raise the endpoint's limit")
            raise ChatClientError(f"The model's answer {cut} in the middle of the arguments of the tool {name!r}, "
                                  f"so the tool was not called{advice}", usage) from None

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        request = self._arguments(messages, options, False)
        stepper = current_stepper()  # a debugged run: the debugger sees (and may edit) the request first
        if stepper is not None:
            return await stepper.model_complete(request, self._send)
        return await self._send(request)

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncGenerator[ChatResponseUpdate, None]:
        request = self._arguments(messages, options, True)
        stepper = current_stepper()
        if stepper is not None:
            return stepper.model_stream(request, self._send_streaming)
        return self._send_streaming(request)

    async def _send(self, request: dict[str, Any]) -> ChatResponse:
        tap = current_tap()  # a recorded or replayed run: the tap sees (or answers) the call
        if tap is not None:
            return await tap.complete(request, lambda: self._get_response(request))
        return await self._get_response(request)

    def _send_streaming(self, request: dict[str, Any]) -> AsyncGenerator[ChatResponseUpdate, None]:
        tap = current_tap()
        if tap is not None:
            return tap.stream(request, lambda: self._get_streaming_response(request))
        return self._get_streaming_response(request)

    async def _get_response(self, request: dict[str, Any]) -> ChatResponse:
        import openai

        httpx = _http()

        client = self._ensure_client()
        try:
            raw = await client.chat.completions.with_raw_response.create(**request)
            self._check_media_type(raw.headers, ("application/json",))
            body = await raw.http_response.aread()
        except openai.OpenAIError as error:
            raise self._translate(error) from None
        except httpx.HTTPError as error:
            raise self._mid_stream(error) from None
        try:
            return self._completion(loads_json(body, "sent an answer"), request.get("max_tokens"))
        except Malformed as malformed:
            raise self._failure(malformed) from None

    async def _get_streaming_response(self, request: dict[str, Any]) -> AsyncGenerator[ChatResponseUpdate, None]:
        import openai

        httpx = _http()

        client = self._ensure_client()
        calls: dict[int, dict[str, Any]] = {}
        finish: str | None = None
        usage: UsageDetails | None = None
        answered_by: str | None = None
        done = False
        what = "a stream chunk"
        inline = InlineThinking()
        try:
            async with client.chat.completions.with_streaming_response.create(**request) as response:
                media = self._check_media_type(response.headers, ("text/event-stream", "application/json"))
                if media == "application/json":  # the endpoint ignored `stream`: one whole completion
                    whole = self._completion(loads_json(await response.http_response.aread(), "sent an answer"),
                                             request.get("max_tokens"))
                    for message in whole.messages:
                        yield ChatResponseUpdate("assistant", list(message.contents))
                    yield ChatResponseUpdate("assistant", [], whole.usage, whole.finish_reason, whole.model)
                    return
                async for kind, data in _server_sent_events(response.iter_lines()):
                    if data.strip() == "[DONE]":
                        done = True
                        break
                    payload = loads_json(data, "sent a stream event")
                    if kind == "error" and isinstance(payload, dict) and "error" not in payload:
                        payload = {"error": payload}
                    choice = first_choice(payload, what)
                    usage = read_usage(payload.get("usage"), what) or usage
                    answered_by = payload.get("model") if isinstance(payload.get("model"), str) else answered_by
                    if choice is None:
                        continue
                    finish = choice.get("finish_reason") or finish
                    delta = field(choice, "delta", dict, "choices[0].", what)
                    if delta is None:
                        continue
                    reasoning = reasoning_text(delta, "choices[0].delta.", what)
                    text = field(delta, "content", str, "choices[0].delta.", what)
                    parts = tool_call_parts(delta, "choices[0].delta.", what)
                    for index, call_id, name, arguments in parts:
                        slot = calls.setdefault(index, {"id": "", "name": [], "arguments": []})
                        if call_id:
                            slot["id"] = call_id
                        slot["name"].append(name)
                        slot["arguments"].append(arguments)
                    pieces: list[Content] = [ReasoningContent(reasoning)] if reasoning else []
                    if text:
                        pieces.extend(inline.feed(text))
                    if pieces:
                        yield ChatResponseUpdate("assistant", pieces)
                    # A fast stream is read from a buffer without waiting: let the loop serve others.
                    await asyncio.sleep(0)
            if not done:
                raise Malformed("ended the stream before `data: [DONE]`: the answer is incomplete")
            finished: list[Content] = inline.flush()
            for _, call in sorted(calls.items()):
                name = "".join(call["name"])
                finished.append(FunctionCallContent(call["id"], name, self._arguments_of(
                    "".join(call["arguments"]), name, finish, request.get("max_tokens"), usage)))
        except openai.OpenAIError as error:
            raise self._translate(error) from None
        except httpx.HTTPError as error:
            raise self._mid_stream(error) from None
        except Malformed as malformed:
            raise self._failure(malformed) from None
        yield ChatResponseUpdate("assistant", list(finished), usage, finish, answered_by)


def _error_detail(error: Any) -> str:
    body = getattr(error, "body", None)
    message = None
    if isinstance(body, dict):
        message = body.get("message")
        if not message and isinstance(body.get("error"), dict):
            message = body["error"].get("message")
    return f": {message[:300]}" if isinstance(message, str) and message else ""


__all__ = ["ChatClientError", "OpenAIChatClient"]


def client_for(settings: Any, name: str, root: str) -> OpenAIChatClient:
    """The client of `[models.NAME]` (`settings`: its `ModelSettings`): an endpoint's, or the offline model's
    (`kind = "offline"`), served inside this process through the same client code."""
    if settings.kind == "offline":
        from . import offline_model

        return OpenAIChatClient(settings.model, base_url=offline_model.OFFLINE_BASE_URL, timeout=settings.timeout,
                                model_name=name, transport=offline_model.transport(root, settings.script, _http()))
    return OpenAIChatClient(settings.model, base_url=settings.base_url, api_key_env=settings.api_key_env,
                            timeout=settings.timeout, model_name=name)
