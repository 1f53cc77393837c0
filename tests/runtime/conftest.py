"""Fixtures for the runtime tests: the local OpenAI-compatible server and small helpers."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))

from fake_openai import FakeOpenAI, Reply, ToolCall  # noqa: E402
from oscova_runtime.chat_client import OpenAIChatClient  # noqa: E402
from oscova_runtime.definition import AgentDefinition  # noqa: E402
from oscova_runtime.messages import (  # noqa: E402
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    TextContent,
)
from oscova_runtime.orchestrator import AgentBuildRequest  # noqa: E402

__all__ = ["Reply", "ToolCall"]


@pytest.fixture(autouse=True)
async def _close_chat_clients(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """Closes every OpenAIChatClient a test created (hosts create their own) before its loop ends."""
    created: list[OpenAIChatClient] = []
    original = OpenAIChatClient.__init__

    def tracking_init(self: OpenAIChatClient, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        created.append(self)

    monkeypatch.setattr(OpenAIChatClient, "__init__", tracking_init)
    yield
    for client in created:
        await client.aclose()


@pytest.fixture
async def openai_client(fake_openai: FakeOpenAI) -> AsyncIterator[OpenAIChatClient]:
    """The real `openai`-based chat client, pointed at the local server; closed after the test."""
    client = OpenAIChatClient("fake-model", base_url=fake_openai.base_url, timeout=10)
    yield client
    await client.aclose()


class ScriptedChatClient:
    """An in-process chat client for unit tests that need no HTTP: replies in order, records requests."""

    def __init__(self, *replies: ChatResponse | Exception | str) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[list[ChatMessage], ChatOptions]] = []
        self.default: ChatResponse | None = None

    def _next(self) -> ChatResponse:
        if not self.replies:
            if self.default is not None:
                return self.default
            raise AssertionError("ScriptedChatClient ran out of replies")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, str):
            return ChatResponse([ChatMessage.of("assistant", reply)])
        return reply

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        self.requests.append((list(messages), options.clone()))
        return self._next()

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate]:
        self.requests.append((list(messages), options.clone()))
        response = self._next()
        for message in response.messages:
            for content in message.contents:
                yield ChatResponseUpdate(message.role, [content])


def call_reply(name: str, arguments: dict[str, Any] | None = None, call_id: str = "c1") -> ChatResponse:
    return ChatResponse([ChatMessage("assistant", [FunctionCallContent(call_id, name, arguments or {})])])


def text_reply(text: str) -> ChatResponse:
    return ChatResponse([ChatMessage("assistant", [TextContent(text)])])


def make_request(definition: AgentDefinition, client: Any, providers: Any = (), **kwargs: Any) -> AgentBuildRequest:
    """A build request with fixed factories; `providers` may be a list or a factory."""
    available = kwargs.pop("available", [definition])
    factory = providers if callable(providers) else (lambda d, ctx: list(providers))
    return AgentBuildRequest(
        chat_client_factory=lambda d, ctx: client,
        agent_definition=definition,
        available_agent_definitions=available,
        context_provider_factory=factory,
        workspace_resolver=kwargs.pop("workspaces", lambda d: []),
        **kwargs,
    )
