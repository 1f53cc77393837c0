"""AIContext and AIContextProvider: the provider lifecycle and merge rules of the seed *Context Providers*."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .messages import ChatMessage, MessageSource, MessageSourceType, full_type_name

if TYPE_CHECKING:
    from .session import AgentSession


class InvalidOperationError(RuntimeError):
    """A contract violation (seed: `InvalidOperationException`)."""


@dataclass(slots=True)
class AIContext:
    """Instructions, messages and tools. None means "no contribution"; an empty list adds nothing."""

    instructions: str | None = None
    messages: list[ChatMessage] | None = None
    tools: list[Any] | None = None


@dataclass(slots=True)
class InvokingContext:
    agent: Any
    session: AgentSession
    ai_context: AIContext


@dataclass(slots=True)
class InvokedContext:
    agent: Any
    session: AgentSession
    request_messages: Sequence[ChatMessage]
    response_messages: Sequence[ChatMessage] | None = None
    invoke_exception: BaseException | None = None


def _is_external(message: ChatMessage) -> bool:
    return message.source.type is MessageSourceType.EXTERNAL


def block(text: str) -> str:
    """A built-in provider's text as a block of the instructions: ending with a newline, so the next provider's
    text (merging joins with one newline) starts after a blank line instead of continuing this block's last line
    or list item."""
    return text if text.endswith("\n") else text + "\n"


class AIContextProvider:
    """Adds invocation-specific instructions, messages or tools.

    Subclasses override `provide_ai_context` (and `store_ai_context` for post-run storage). One
    instance serves many invocations and sessions: keep per-session state in `session.state_bag` under
    one of `state_keys`, never in fields.
    """

    _state_keys: tuple[str, ...] | None = None

    @property
    def state_keys(self) -> tuple[str, ...]:
        """The keys this provider owns in `AgentSession.state_bag`; by default the concrete type name."""
        return self._state_keys or (type(self).__name__,)

    @state_keys.setter
    def state_keys(self, keys: Sequence[str]) -> None:
        self._state_keys = tuple(keys)

    @property
    def source_id(self) -> str:
        """The provider type stamped on its messages: its full, module-qualified name (the framework's
        `GetType().FullName`); editors may show the class name alone."""
        return full_type_name(self)

    # -- pre-run ---------------------------------------------------------------------------------

    async def invoking(self, context: InvokingContext) -> AIContext:
        """Returns the merged context the next provider receives."""
        return await self.invoking_core(context)

    async def invoking_core(self, context: InvokingContext) -> AIContext:
        accumulated = context.ai_context
        visible = AIContext(
            accumulated.instructions,
            [m for m in accumulated.messages or () if self.provide_input_message_filter(m)],
            accumulated.tools,
        )
        provided = await self.provide_ai_context(InvokingContext(context.agent, context.session, visible))
        if provided is None:
            raise InvalidOperationError(f"{type(self).__name__}.provide_ai_context returned None; return AIContext()")
        return self.merge(accumulated, provided)

    def provide_input_message_filter(self, message: ChatMessage) -> bool:
        """The default filter: only messages whose source is External."""
        return _is_external(message)

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        return AIContext()

    def merge(self, accumulated: AIContext, provided: AIContext) -> AIContext:
        """Instructions joined with one newline whenever both are not None (`""` and `"x"` give `"\nx"`);
        messages stamped and appended; tools appended; a None property keeps the previous value."""
        instructions = accumulated.instructions
        if provided.instructions is not None:
            instructions = provided.instructions if instructions is None else instructions + "\n" + provided.instructions
        messages = accumulated.messages
        if provided.messages is not None:
            stamp = MessageSource(MessageSourceType.AI_CONTEXT_PROVIDER, self.source_id)
            messages = [*(messages or ()), *(m.with_source(stamp) for m in provided.messages)]
        tools = accumulated.tools
        if provided.tools is not None:
            tools = [*(tools or ()), *provided.tools]
        return AIContext(instructions, messages, tools)

    # -- post-run --------------------------------------------------------------------------------

    async def invoked(self, context: InvokedContext) -> None:
        await self.invoked_core(context)

    async def invoked_core(self, context: InvokedContext) -> None:
        """Skips storage on failure; otherwise stores the request and response messages the two store filters
        keep (by default: external request messages, every response message)."""
        if context.invoke_exception is not None:
            return
        request = [m for m in context.request_messages if self.store_input_message_filter(m)]
        response = [m for m in context.response_messages or () if self.store_input_response_message_filter(m)]
        await self.store_ai_context(InvokedContext(context.agent, context.session, request, response, None))

    def store_input_message_filter(self, message: ChatMessage) -> bool:
        """Which request messages reach `store_ai_context`: by default only External ones."""
        return _is_external(message)

    def store_input_response_message_filter(self, message: ChatMessage) -> bool:
        """Which response messages reach `store_ai_context`: by default all of them."""
        return True

    async def store_ai_context(self, context: InvokedContext) -> None:
        return None

    # -- custom providers with a declared template -------------------------------------------------

    async def template_variables(self, context: InvokingContext) -> dict[str, Any]:
        """The variables a declared `[providers.*] template` is rendered with (custom providers)."""
        return {}


@dataclass(slots=True)
class ProviderContribution:
    """What one provider added during assembly (for previews)."""

    provider: str
    instructions: str | None = None
    messages: list[ChatMessage] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
