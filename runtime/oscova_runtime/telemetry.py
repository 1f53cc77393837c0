"""Observation of a run's agent invocations, model calls and tool calls: durations, token usage, nesting.

Observers (`CallObserver`) are installed for a block of code with `observe_calls`, in a context
variable: they see the calls made in that task only, including those of agents used as tools (the
nested invocation runs in the same task, so it becomes a child call). The run service uses this for
per-call usage and duration in run events, and for OpenTelemetry spans. Without observers every hook
costs one context-variable read, and nothing else is imported.

The hooks: `AgentInvocationScopes` (an `IAgentRunScopeFactory`: each run of a built agent),
`ObservedChatClient` (wraps a model's chat client: each model call) and `observed_tool` (called by the
function-invocation loop around each tool execution).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .chat import ChatClient, DelegatingChatClient
from .definition import AgentDefinition
from .messages import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    ReasoningContent,
    UsageDetails,
)

if TYPE_CHECKING:
    from .tokens import Tokenizer

CallKind = Literal["agent", "model", "tool"]


@dataclass(slots=True, eq=False)
class ObservedCall:
    """One agent invocation, model call or tool execution, as its observers see it."""

    kind: CallKind
    name: str
    """The agent id, the requested model, or the tool name."""
    parent: ObservedCall | None
    agent_id: str | None
    """The agent this call belongs to (for an agent call: itself)."""
    started: float = field(default_factory=time.perf_counter)
    ended: float | None = None
    error: BaseException | None = None
    # agent calls
    agent_name: str | None = None
    description: str | None = None
    # model calls
    provider: str | None = None
    server_address: str | None = None
    server_port: int | None = None
    usage: UsageDetails | None = None
    response_model: str | None = None
    finish_reason: str | None = None
    messages: Sequence[ChatMessage] = ()
    """The request's messages (model calls), kept by reference: observers that show content read them."""
    options: ChatOptions | None = None
    response: list[ChatMessage] | None = None
    tool_calls: int = 0
    """How many tool calls the model's answer asked for."""
    predicted_input_tokens: int | None = None
    """The request's prompt tokens as counted here before it was sent (`tokens.count_request`), to show beside
    the endpoint's own `usage.input_tokens`."""
    reasoning_tokens: int | None = None
    """The answer's reasoning in tokens: the endpoint's `reasoning_tokens`, else counted here."""
    counted_exactly: bool = True
    """False: `predicted_input_tokens` (and a counted `reasoning_tokens`) are estimates."""
    # tool calls
    call_id: str | None = None
    arguments: Any = None
    result: Any = None
    state: dict[str, Any] = field(default_factory=dict)
    """Room for observers (a span, say), keyed by the observer's own name."""

    @property
    def duration(self) -> float:
        """Seconds from start to end (to now while the call runs)."""
        return (self.ended if self.ended is not None else time.perf_counter()) - self.started


class CallObserver(Protocol):
    wants_content: bool
    """True: model calls keep their response messages for `call_ended` (costs a copy of the stream)."""

    def call_started(self, call: ObservedCall) -> None: ...

    def call_ended(self, call: ObservedCall) -> None: ...


_observers: ContextVar[tuple[CallObserver, ...]] = ContextVar("oscova_call_observers", default=())
_current: ContextVar[ObservedCall | None] = ContextVar("oscova_current_call", default=None)


@contextlib.contextmanager
def observe_calls(*observers: CallObserver) -> Iterator[None]:
    """Installs observers (besides those already installed) for the calls made inside the block."""
    token = _observers.set(_observers.get() + observers)
    try:
        yield
    finally:
        _reset(_observers, token)


def current_call() -> ObservedCall | None:
    return _current.get()


def _reset(var: ContextVar[Any], token: Any) -> None:
    try:
        var.reset(token)
    except ValueError:  # an async generator finalized in another context: that context never saw the set
        pass


def _start(observers: tuple[CallObserver, ...], call: ObservedCall) -> None:
    for observer in observers:
        observer.call_started(call)


def _end(observers: tuple[CallObserver, ...], call: ObservedCall, error: BaseException | None = None) -> None:
    call.ended = time.perf_counter()
    call.error = error
    for observer in observers:
        observer.call_ended(call)


def _enclosing_agent(parent: ObservedCall | None) -> str | None:
    return parent.agent_id if parent is not None else None


# -- agents ------------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _agent_scope(definition: AgentDefinition) -> AsyncIterator[None]:
    observers = _observers.get()
    if not observers:
        yield
        return
    call = ObservedCall("agent", definition.id, _current.get(), definition.id, agent_name=definition.display_name,
                        description=definition.description)
    _start(observers, call)
    token = _current.set(call)
    error: BaseException | None = None
    try:
        yield
    except BaseException as failure:
        error = failure
        raise
    finally:
        _reset(_current, token)
        _end(observers, call, error)


class AgentInvocationScopes:
    """An `IAgentRunScopeFactory` whose scope is an observed agent invocation (a no-op without observers)."""

    def create_scope(self, definition: AgentDefinition) -> contextlib.AbstractAsyncContextManager[Any]:
        return _agent_scope(definition)


# -- model calls -------------------------------------------------------------------------------------


class ObservedChatClient(DelegatingChatClient):
    """A model's chat client whose calls are observed: duration, token usage, response model."""

    def __init__(self, inner: ChatClient, model: str, *, provider: str = "openai", server_address: str | None = None,
                 server_port: int | None = None, tokenizer: Callable[[], Tokenizer] | None = None) -> None:
        super().__init__(inner)
        self.model = model
        self.provider = provider
        self.server_address = server_address
        self.server_port = server_port
        self.tokenizer = tokenizer
        """The model's tokenizer (loaded on first use): each observed call's request is counted with it."""

    def _call(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ObservedCall:
        parent = _current.get()
        return ObservedCall("model", self.model, parent, _enclosing_agent(parent), provider=self.provider,
                            server_address=self.server_address, server_port=self.server_port, messages=messages,
                            options=options)

    async def _predict(self, call: ObservedCall) -> None:
        """Counts the call's request as the endpoint will (`tokens.prompt_tokens`), in a worker thread: a long
        conversation rendered through a chat template and tokenized keeps the event loop free meanwhile."""
        if self.tokenizer is None or call.options is None:
            return
        options, messages, load = call.options, call.messages, self.tokenizer

        def count() -> tuple[int, bool]:
            from .completions import to_openai_messages
            from .tokens import prompt_tokens
            from .tools import AIFunction

            tokenizer = load()
            wire_tools = [t.schema() for t in options.tools or () if isinstance(t, AIFunction)]
            return prompt_tokens(to_openai_messages(messages, options.instructions), wire_tools, tokenizer), \
                tokenizer.exact

        call.predicted_input_tokens, call.counted_exactly = await asyncio.to_thread(count)

    def _answered(self, call: ObservedCall, messages: Sequence[ChatMessage] | None, reasoning: str) -> None:
        """Notes what the answer asked for and its reasoning's tokens (counted when the endpoint does not say)."""
        if messages is not None:
            call.tool_calls = sum(len(m.function_calls) for m in messages)
        if call.usage is not None and call.usage.reasoning_tokens is not None:
            call.reasoning_tokens = call.usage.reasoning_tokens
        elif reasoning and self.tokenizer is not None:
            tokenizer = self.tokenizer()
            call.reasoning_tokens = tokenizer.count(reasoning)
            call.counted_exactly = call.counted_exactly and tokenizer.exact

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        observers = _observers.get()
        if not observers:
            return await self.inner.get_response(messages, options)
        call = self._call(messages, options)
        await self._predict(call)
        _start(observers, call)
        try:
            response = await self.inner.get_response(messages, options)
        except BaseException as error:
            call.usage = getattr(error, "usage", None)  # what a call that failed late still cost (a cut tool call)
            _end(observers, call, error)
            raise
        call.usage, call.finish_reason = response.usage, response.finish_reason
        call.response_model = response.model
        call.response = list(response.messages)
        self._answered(call, response.messages, "".join(m.reasoning for m in response.messages))
        _end(observers, call)
        return response

    async def get_streaming_response(  # type: ignore[override]
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncGenerator[ChatResponseUpdate, None]:
        observers = _observers.get()
        if not observers:
            async with contextlib.aclosing(self.inner.get_streaming_response(messages, options)) as stream:
                async for update in stream:
                    yield update
            return
        call = self._call(messages, options)
        await self._predict(call)
        keep = any(getattr(o, "wants_content", False) for o in observers)
        updates: list[ChatResponseUpdate] = []
        reasoning: list[str] = []
        _start(observers, call)
        error: BaseException | None = None
        try:
            async with contextlib.aclosing(self.inner.get_streaming_response(messages, options)) as stream:
                async for update in stream:
                    if update.usage is not None:
                        call.usage = call.usage or UsageDetails()
                        call.usage.add(update.usage)
                    call.finish_reason = update.finish_reason or call.finish_reason
                    call.response_model = update.model or call.response_model
                    for content in update.contents:
                        if isinstance(content, FunctionCallContent):
                            call.tool_calls += 1
                        elif isinstance(content, ReasoningContent):
                            reasoning.append(content.text)
                    if keep:
                        updates.append(update)
                    yield update
        except BaseException as failure:
            error = failure
            call.usage = call.usage or getattr(failure, "usage", None)  # a call that failed late still cost tokens
            raise
        finally:
            if keep:
                from .messages import updates_to_messages

                call.response = updates_to_messages(updates)
            if error is None:
                self._answered(call, None, "".join(reasoning))
            _end(observers, call, error)


def observed_model_client(client: ChatClient, model: str, base_url: str | None,
                          tokenizer: Callable[[], Tokenizer] | None = None) -> ObservedChatClient:
    """`client` (an OpenAI-compatible endpoint at `base_url`) with its calls observed (and counted with
    `tokenizer`'s, when given)."""
    from urllib.parse import urlsplit

    from .chat_client import OpenAIChatClient  # imports no `openai` until a call

    address: str | None = None
    port: int | None = None
    if base_url:
        try:
            parts = urlsplit(base_url)
            address, port = parts.hostname, parts.port  # never the user:password part of the URL
        except ValueError:
            pass
    elif isinstance(client, OpenAIChatClient):
        address = "api.openai.com"  # the `openai` client's default endpoint
    return ObservedChatClient(client, model, server_address=address, server_port=port, tokenizer=tokenizer)


# -- tools -------------------------------------------------------------------------------------------


async def observed_tool(call: FunctionCallContent, description: str | None,
                        execute: Callable[[], Awaitable[Any]]) -> Any:
    """Runs `execute` (one tool call) as an observed call; an agent used as a tool runs as its child."""
    observers = _observers.get()
    if not observers:
        return await execute()
    parent = _current.get()
    observed = ObservedCall("tool", call.name, parent, _enclosing_agent(parent), description=description,
                            call_id=call.call_id, arguments=call.arguments)
    _start(observers, observed)
    token = _current.set(observed)
    try:
        observed.result = await execute()
    except BaseException as error:
        _reset(_current, token)
        _end(observers, observed, error)
        raise
    _reset(_current, token)
    _end(observers, observed)
    return observed.result


__all__ = ["AgentInvocationScopes", "CallObserver", "ObservedCall", "ObservedChatClient", "current_call",
           "observe_calls", "observed_model_client", "observed_tool"]
