"""Agent sessions, their state bag, and the in-memory chat-history provider."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .catalogue import CHAT_HISTORY_STATE_KEY
from .messages import CHAT_HISTORY, ChatMessage, MessageSourceType


@dataclass(slots=True)
class AgentSession:
    """A conversation. Providers keep per-session state in `state_bag` under their state keys."""

    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    state_bag: dict[str, Any] = field(default_factory=dict)


class ChatReducer(Protocol):
    async def reduce(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]: ...


class InMemoryChatHistoryProvider:
    """Keeps the session's history in its state bag; an optional reducer compacts it after each store."""

    state_key = CHAT_HISTORY_STATE_KEY

    def __init__(self, reducer: ChatReducer | None = None) -> None:
        self.reducer = reducer

    @property
    def state_keys(self) -> tuple[str, ...]:
        return (self.state_key,)

    def messages(self, session: AgentSession) -> list[ChatMessage]:
        return list(session.state_bag.get(self.state_key, ()))

    async def invoking(self, session: AgentSession) -> list[ChatMessage]:
        """The stored history, attributed to chat history."""
        return [m.with_source(CHAT_HISTORY) for m in session.state_bag.get(self.state_key, ())]

    async def invoked(
        self, session: AgentSession, request: Sequence[ChatMessage], response: Sequence[ChatMessage] | None,
        exception: BaseException | None,
    ) -> None:
        """On success stores the external request messages and every response message."""
        if exception is not None:
            return
        stored = list(session.state_bag.get(self.state_key, ()))
        stored.extend(m for m in request if m.source.type is MessageSourceType.EXTERNAL)
        stored.extend(response or ())
        if self.reducer is not None:
            stored = list(await self.reducer.reduce(stored))
        session.state_bag[self.state_key] = stored
