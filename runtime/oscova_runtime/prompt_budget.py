"""Limits on a request's prompt tokens (`context_window`, `max_prompt_tokens`): the sentence for a request over
one, and the chat-client middleware that refuses such a request before anything is sent."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass

from .chat import ChatClient, DelegatingChatClient
from .messages import ChatMessage, ChatOptions, ChatResponse, ChatResponseUpdate
from .tokens import ESTIMATED_NOTE, RequestTokens, Tokenizer, count_request, figure, prompt_tokens

# --------------------------------------------------------------------------------------------------
# Budgets


@dataclass(frozen=True, slots=True)
class PromptLimit:
    """A ceiling on a request's prompt tokens and the setting that sets it, in words (`the context window of
    [models.default]`)."""

    tokens: int
    setting: str


class PromptTooLongError(Exception):
    """A request over a `PromptLimit`, refused before it was sent; the message gives the figures."""


def over_limit(counted: RequestTokens, limits: Sequence[PromptLimit]) -> str | None:
    """The sentence for the first limit `counted` exceeds, or None."""
    for limit in limits:
        if counted.total > limit.tokens:
            exact = counted.exact
            return (f"The request would be {figure(counted.total, exact)} prompt tokens (instructions "
                    f"{figure(counted.instructions, exact)}, messages {figure(counted.messages, exact)}, tools "
                    f"{figure(counted.tools, exact)}{'' if exact else f'; {ESTIMATED_NOTE}'}"
                    f"), over the {limit.tokens:,} of {limit.setting}")
    return None


class PromptBudgetClient(DelegatingChatClient):
    """Chat-client middleware: counts each request as the endpoint will and refuses one over a limit before
    anything is sent (rather than after the endpoint's 400)."""

    def __init__(self, inner: ChatClient, tokenizer: Tokenizer, limits: Sequence[PromptLimit]) -> None:
        super().__init__(inner)
        self.tokenizer = tokenizer
        self.limits = tuple(limits)

    def _check(self, messages: Sequence[ChatMessage], options: ChatOptions) -> None:
        from .completions import to_openai_messages
        from .tools import AIFunction

        wire_tools = [t.schema() for t in options.tools or () if isinstance(t, AIFunction)]
        wire_messages = to_openai_messages(messages, options.instructions)
        total = prompt_tokens(wire_messages, wire_tools, self.tokenizer)
        if all(total <= limit.tokens for limit in self.limits):
            return
        refusal = over_limit(count_request(wire_messages, wire_tools, self.tokenizer), self.limits)
        if refusal is not None:
            raise PromptTooLongError(f"{refusal}; nothing was sent. Shorten the input, the instructions or the "
                                     "history, or raise the limit")

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        self._check(messages, options)
        return await self.inner.get_response(messages, options)

    async def get_streaming_response(  # type: ignore[override]  # an async generator, as the protocol's callers use it
        self, messages: Sequence[ChatMessage], options: ChatOptions,
    ) -> AsyncGenerator[ChatResponseUpdate, None]:
        self._check(messages, options)
        async for update in self.inner.get_streaming_response(messages, options):
            yield update
