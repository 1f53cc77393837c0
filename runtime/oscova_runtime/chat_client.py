"""An OpenAI-compatible chat client on `openai.AsyncOpenAI`: chat completions, streaming, tool calls, usage.

`openai` is imported on first use, never at import time. The key is read from the environment variable
named by `api_key_env` and never appears in logs or error messages.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from .messages import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    DataContent,
    FunctionCallContent,
    TextContent,
    UsageDetails,
)
from .tools import AIFunction

NO_KEY_PLACEHOLDER = "not-needed"


class ChatClientError(Exception):
    """A model call failed; the message is written for the user and never holds the key."""


def _to_openai_messages(messages: Sequence[ChatMessage], instructions: str | None) -> list[dict[str, Any]]:
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
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
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


def _parse_arguments(raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _usage(raw: Any) -> UsageDetails | None:
    if raw is None:
        return None
    return UsageDetails(raw.prompt_tokens or 0, raw.completion_tokens or 0, raw.total_tokens or 0)


class OpenAIChatClient:
    """Speaks to any OpenAI-compatible endpoint. One instance holds one `AsyncOpenAI` client."""

    def __init__(
        self, model: str, *, base_url: str | None = None, api_key_env: str | None = None,
        timeout: float = 60.0, max_retries: int = 0, model_name: str = "default",
    ) -> None:
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

        self._client = openai.AsyncOpenAI(
            api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=self.max_retries
        )
        return self._client

    async def aclose(self) -> None:
        """Closes the HTTP client (the host owns the lifetime of its chat clients)."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def _arguments(self, messages: Sequence[ChatMessage], options: ChatOptions, stream: bool) -> dict[str, Any]:
        args: dict[str, Any] = {"model": self.model, "messages": _to_openai_messages(messages, options.instructions)}
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
        if isinstance(error, openai.AuthenticationError):
            return ChatClientError(
                f"The model endpoint rejected the API key from {self.api_key_env or 'the configuration'}"
            )
        if isinstance(error, openai.NotFoundError):
            return ChatClientError(f"The model endpoint at {self._where()} does not know the model {self.model!r}")
        if isinstance(error, openai.RateLimitError):
            return ChatClientError("The model endpoint is rate limiting requests; try again later")
        if isinstance(error, openai.APIStatusError):
            detail = _error_detail(error)
            key = os.environ.get(self.api_key_env) if self.api_key_env else None
            if key:
                detail = detail.replace(key, "***")
            return ChatClientError(f"The model returned an error (HTTP {error.status_code}){detail}")
        return ChatClientError(f"The model call failed: {type(error).__name__}")

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        import openai

        client = self._ensure_client()
        try:
            completion = await client.chat.completions.create(**self._arguments(messages, options, False))
        except openai.OpenAIError as error:
            raise self._translate(error) from None
        result: list[ChatMessage] = []
        finish = None
        for choice in completion.choices[:1]:
            finish = choice.finish_reason
            contents: list[Any] = []
            if choice.message.content:
                contents.append(TextContent(choice.message.content))
            for call in choice.message.tool_calls or ():
                contents.append(FunctionCallContent(call.id, call.function.name, _parse_arguments(call.function.arguments)))
            result.append(ChatMessage("assistant", contents))
        return ChatResponse(result, _usage(completion.usage), finish, completion.model)

    async def get_streaming_response(  # type: ignore[override]
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncGenerator[ChatResponseUpdate, None]:
        import openai

        client = self._ensure_client()
        try:
            stream = await client.chat.completions.create(**self._arguments(messages, options, True))
        except openai.OpenAIError as error:
            raise self._translate(error) from None
        calls: dict[int, dict[str, str]] = {}
        finish: str | None = None
        usage: UsageDetails | None = None
        try:
            async with stream:
                async for chunk in stream:
                    if chunk.usage is not None:
                        usage = _usage(chunk.usage)
                    for choice in chunk.choices[:1]:
                        delta = choice.delta
                        if choice.finish_reason:
                            finish = choice.finish_reason
                        if delta is None:
                            continue
                        if delta.content:
                            yield ChatResponseUpdate("assistant", [TextContent(delta.content)])
                        for part in delta.tool_calls or ():
                            slot = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                            if part.id:
                                slot["id"] = part.id
                            if part.function is not None:
                                slot["name"] += part.function.name or ""
                                slot["arguments"] += part.function.arguments or ""
        except openai.OpenAIError as error:
            raise self._translate(error) from None
        finished = [FunctionCallContent(c["id"], c["name"], _parse_arguments(c["arguments"]))
                    for _, c in sorted(calls.items())]
        yield ChatResponseUpdate("assistant", list(finished), usage, finish)


def _error_detail(error: Any) -> str:
    body = getattr(error, "body", None)
    message = None
    if isinstance(body, dict):
        message = body.get("message")
        if not message and isinstance(body.get("error"), dict):
            message = body["error"].get("message")
    return f": {message[:300]}" if isinstance(message, str) and message else ""


__all__ = ["ChatClientError", "OpenAIChatClient"]
