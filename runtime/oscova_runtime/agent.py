"""`ChatClientAgent`: runs the provider pipeline around a chat client (seed: Microsoft Agent Framework)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from .catalogue import CHAT_HISTORY_STATE_KEY
from .chat import ChatClient
from .context import AIContext, AIContextProvider, InvalidOperationError, InvokedContext, InvokingContext
from .messages import (
    EXTERNAL,
    ChatMessage,
    ChatOptions,
    ChatResponseUpdate,
    UpdateAccumulator,
    UsageDetails,
)
from .session import AgentSession, InMemoryChatHistoryProvider
from .stepping import current_stepper
from .tools import AIFunction, ToolArgumentError


@dataclass(slots=True)
class ChatClientAgentOptions:
    id: str
    name: str | None = None
    description: str | None = None
    chat_options: ChatOptions = field(default_factory=ChatOptions)
    ai_context_providers: list[AIContextProvider] = field(default_factory=list)
    chat_history_provider: InMemoryChatHistoryProvider | None = None


@dataclass(slots=True)
class AgentResponse:
    messages: list[ChatMessage]
    usage: UsageDetails | None = None

    @property
    def text(self) -> str:
        return "".join(m.text for m in self.messages if m.role == "assistant")


_SCALARS = ("temperature", "top_p", "max_tokens", "seed", "tool_choice", "continuation_token")

RunInput = str | ChatMessage | Sequence[ChatMessage] | None


def _as_messages(value: RunInput) -> list[ChatMessage]:
    if value is None:
        return []
    if isinstance(value, str):
        return [ChatMessage.of("user", value)]
    if isinstance(value, ChatMessage):
        return [value]
    return list(value)


def _blank(text: str | None) -> bool:
    return text is None or not text.strip()


def merge_chat_options(agent: ChatOptions, run: ChatOptions | None) -> ChatOptions:
    """The request's options: the agent's defaults merged with the run's as the framework's `ChatClientAgent`
    does (`ChatClientAgent_ChatOptionsMergingTests`): a run value wins, a missing one falls back to the agent's;
    instructions are the agent's then the run's, joined by a newline (a blank side gives way to the other);
    stop sequences and tools are the run's followed by the agent's; extra fields of the run win."""
    merged = agent.clone()
    if run is None:
        return merged
    for name in _SCALARS:
        value = getattr(run, name)
        if value is not None:
            setattr(merged, name, value)
    if not _blank(run.instructions):
        merged.instructions = run.instructions if _blank(agent.instructions) else f"{agent.instructions}\n{run.instructions}"
    if run.stop:
        merged.stop = [*run.stop, *(agent.stop or ())]
    if run.tools:
        merged.tools = [*run.tools, *(agent.tools or ())]
    merged.extra.update(copy.deepcopy(run.extra))
    return merged


def validate_providers(providers: Sequence[Any], history: InMemoryChatHistoryProvider | None) -> None:
    """Raises InvalidOperationError for a null entry, a key two context providers share, or a key of the
    chat-history provider (any of its keys) that a context provider uses."""
    owners: dict[str, str] = {}
    history_keys = set(history.state_keys) if history is not None else {CHAT_HISTORY_STATE_KEY}
    for index, provider in enumerate(providers):
        if provider is None:
            raise InvalidOperationError(f"Context provider {index + 1} is null; remove the entry")
        for key in provider.state_keys:
            if key in owners:
                raise InvalidOperationError(
                    f"{owners[key]} and {type(provider).__name__} share the state key {key!r}; give one a unique key"
                )
            owners[key] = type(provider).__name__
    for key in history_keys:
        if key in owners:
            raise InvalidOperationError(
                f"{owners[key]} uses the state key {key!r} of the chat-history provider "
                f"({type(history).__name__ if history is not None else 'InMemoryChatHistoryProvider'}); give it "
                "another key")


RunScope = Callable[[], AbstractAsyncContextManager[Any]]


class ChatClientAgent:
    """An agent: options (id, name, providers, chat options) over a composed chat client.

    `run_scope`, when given, makes one scope per run; the whole run happens inside it.
    """

    def __init__(
        self, chat_client: ChatClient, options: ChatClientAgentOptions, *, run_scope: RunScope | None = None,
    ) -> None:
        self.chat_options = options.chat_options
        providers = list(options.ai_context_providers)
        history = options.chat_history_provider or InMemoryChatHistoryProvider()
        validate_providers(providers, history)
        self.chat_client = chat_client
        self.options = options
        self.id = options.id
        self.name = options.name or options.id
        self.description = options.description
        self.context_providers: tuple[AIContextProvider, ...] = tuple(providers)
        self.chat_history_provider = history
        self.run_scope = run_scope

    def _scope(self) -> AbstractAsyncContextManager[Any]:
        return self.run_scope() if self.run_scope is not None else contextlib.nullcontext()

    def create_session(self) -> AgentSession:
        return AgentSession()

    # -- pipeline --------------------------------------------------------------------------------

    async def _prepare(
        self, messages: RunInput, session: AgentSession, options: ChatOptions | None, *, compact: bool = True,
    ) -> tuple[list[ChatMessage], ChatOptions]:
        request_options = merge_chat_options(self.chat_options, options)
        inputs = [m if m.source is EXTERNAL else m.with_source(EXTERNAL) for m in _as_messages(messages)]
        if request_options.continuation_token is not None:
            # A continuation resumes a response: no input, no history and no provider assembly.
            if inputs:
                raise InvalidOperationError(
                    "Input messages are not allowed when continuing a response with a continuation token")
            return [], request_options
        history = await self.chat_history_provider.invoking(session, reduce=compact)
        context = AIContext(request_options.instructions, [*history, *inputs], list(request_options.tools or ()))
        stepper = current_stepper()
        for index, provider in enumerate(self.context_providers):
            context = await provider.invoking(InvokingContext(self, session, context))
            if stepper is not None:  # a debugged run stops after the provider's contribution
                await stepper.provider_contributed(self, index, provider, context, session)
        request_options.instructions = context.instructions
        request_options.tools = context.tools
        return list(context.messages or ()), request_options

    async def assemble(
        self, messages: RunInput = None, *, session: AgentSession | None = None, options: ChatOptions | None = None
    ) -> tuple[list[ChatMessage], ChatOptions]:
        """The provider pipeline without the model: the messages and options the model would be sent. The history
        is shown as stored: compacting it would need the model (and change the session)."""
        return await self._prepare(messages, session or AgentSession(), options, compact=False)

    async def _notify(
        self, session: AgentSession, request: list[ChatMessage], response: list[ChatMessage] | None,
        error: BaseException | None,
    ) -> None:
        await self.chat_history_provider.invoked(session, request, response, error)
        for provider in self.context_providers:
            await provider.invoked(InvokedContext(self, session, request, response, error))

    async def run(
        self, messages: RunInput = None, *, session: AgentSession | None = None, options: ChatOptions | None = None
    ) -> AgentResponse:
        async with self._scope():
            return await self._run(messages, session or AgentSession(), options)

    async def _run(self, messages: RunInput, session: AgentSession, options: ChatOptions | None) -> AgentResponse:
        request, request_options = await self._prepare(messages, session, options)
        try:
            response = await self.chat_client.get_response(request, request_options)
        except (Exception, asyncio.CancelledError) as error:
            await self._notify(session, request, None, error)
            raise
        for message in response.messages:  # every response message carries the agent's name
            if message.author_name is None:
                message.author_name = self.options.name
        await self._notify(session, request, list(response.messages), None)
        return AgentResponse(list(response.messages), response.usage)

    async def run_streaming(
        self, messages: RunInput = None, *, session: AgentSession | None = None, options: ChatOptions | None = None
    ) -> AsyncGenerator[ChatResponseUpdate, None]:
        async with self._scope(), contextlib.aclosing(
                self._run_streaming(messages, session or AgentSession(), options)) as updates:
            async for update in updates:
                yield update

    async def _run_streaming(
        self, messages: RunInput, session: AgentSession, options: ChatOptions | None
    ) -> AsyncGenerator[ChatResponseUpdate, None]:
        request, request_options = await self._prepare(messages, session, options)
        updates = UpdateAccumulator()
        try:
            async with contextlib.aclosing(self.chat_client.get_streaming_response(request, request_options)) as stream:
                async for update in stream:
                    if update.author_name is None:
                        update.author_name = self.options.name
                    updates.add(update)
                    yield update
        except (Exception, asyncio.CancelledError, GeneratorExit) as error:
            if not isinstance(error, GeneratorExit):
                await self._notify(session, request, None, error)
            raise
        await self._notify(session, request, updates.messages(), None)

    # -- as a tool ---------------------------------------------------------------------------------

    def as_ai_function(self, *, name: str | None = None, description: str | None = None) -> AIFunction:
        """This agent as a tool: one `query` argument, a fresh session per call, the answer text as result. A call
        with other arguments, or without `query`, raises `ToolArgumentError` naming them."""

        async def call_agent(**arguments: Any) -> str:
            unknown = [f"`{given}`" for given in arguments if given != "query"]
            if unknown or "query" not in arguments:
                gave = f"not {', '.join(unknown)}" if unknown else "and the call gave none"
                raise ToolArgumentError(f"the agent `{self.id}` takes `query`, {gave}")
            response = await self.run(arguments["query"])
            return response.text

        return AIFunction(
            name or self.id, description or self.description or f"Ask the agent {self.name}.",
            {"type": "object", "properties": {"query": {"type": "string", "description": "The request for the agent."}},
             "required": ["query"]},
            call_agent,
            agent_id=self.id,
        )
