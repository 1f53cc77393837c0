"""The chat-client protocol, delegating clients and the builder that composes middleware."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from .messages import ChatMessage, ChatOptions, ChatResponse, ChatResponseUpdate


@runtime_checkable
class ChatClient(Protocol):
    """What a model client offers (seed: `IChatClient`). Cancellation is task cancellation."""

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse: ...

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncGenerator[ChatResponseUpdate, None]: ...


class DelegatingChatClient:
    """Passes everything to `inner`; middleware subclasses override what they change."""

    def __init__(self, inner: ChatClient) -> None:
        self.inner = inner

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        return await self.inner.get_response(messages, options)

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncGenerator[ChatResponseUpdate, None]:
        return self.inner.get_streaming_response(messages, options)

    def get_service(self, kind: type) -> Any:
        if isinstance(self, kind):
            return self
        getter = getattr(self.inner, "get_service", None)
        if getter is not None:
            return getter(kind)
        return self.inner if isinstance(self.inner, kind) else None


ChatClientFactory = Callable[[ChatClient], ChatClient]
FunctionMiddleware = Callable[..., Any]


class ChatClientBuilder:
    """Composes chat-client middleware around an inner client: the first `use` is the outermost layer.

    Function middleware (`use_function_middleware`) wraps each tool call made by the function-invocation
    client, in the order added.
    """

    def __init__(self, inner: ChatClient) -> None:
        self.inner = inner
        self.factories: list[ChatClientFactory] = []
        self.function_middleware: list[FunctionMiddleware] = []

    def use(self, factory: ChatClientFactory) -> ChatClientBuilder:
        self.factories.append(factory)
        return self

    def use_function_middleware(self, middleware: FunctionMiddleware) -> ChatClientBuilder:
        self.function_middleware.append(middleware)
        return self

    def build(self) -> ChatClient:
        client = self.inner
        for factory in reversed(self.factories):
            client = factory(client)
        return client
