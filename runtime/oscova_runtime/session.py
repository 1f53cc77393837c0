"""Agent sessions, their state bag, and the in-memory chat-history provider."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .catalogue import CHAT_HISTORY_STATE_KEY
from .messages import ChatMessage, MessageSource, MessageSourceType, full_type_name


@dataclass(slots=True)
class AgentSession:
    """A conversation. Providers keep per-session state in `state_bag` under their state keys."""

    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    state_bag: dict[str, Any] = field(default_factory=dict)


class ChatReducer(Protocol):
    async def reduce(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]: ...


class ReducerTrigger(enum.Enum):
    """When the in-memory history's reducer runs (the framework's `ChatReducerTriggerEvent`)."""

    BEFORE_MESSAGES_RETRIEVAL = "BeforeMessagesRetrieval"
    """The default: the stored history is compacted when it is loaded for a run."""
    AFTER_MESSAGE_ADDED = "AfterMessageAdded"
    """After each store."""


class InMemoryChatHistoryProvider:
    """Keeps the session's history in its state bag under `state_key`; an optional reducer compacts it, by
    default when the history is loaded for a run (`trigger`).

    As the framework's provider: loaded messages are stamped as chat history with this provider's full type
    name; after a successful run it stores the request messages `store_input_request_message_filter` keeps (by
    default every one not loaded from history: the input and the context providers' messages) and every
    response message `store_input_response_message_filter` keeps (by default all).
    """

    def __init__(self, reducer: ChatReducer | None = None, *, state_key: str = CHAT_HISTORY_STATE_KEY,
                 trigger: ReducerTrigger = ReducerTrigger.BEFORE_MESSAGES_RETRIEVAL) -> None:
        self.reducer = reducer
        self.state_key = state_key
        self.trigger = trigger
        self._stamp = MessageSource(MessageSourceType.CHAT_HISTORY, full_type_name(self))

    @property
    def state_keys(self) -> tuple[str, ...]:
        return (self.state_key,)

    def messages(self, session: AgentSession) -> list[ChatMessage]:
        return list(session.state_bag.get(self.state_key, ()))

    async def invoking(self, session: AgentSession, *, reduce: bool = True) -> list[ChatMessage]:
        """The stored history, attributed to chat history; compacted first (and stored so) when the reducer runs
        before retrieval. `reduce=False` (a preview): as stored, without compacting."""
        stored = session.state_bag.get(self.state_key, [])
        if reduce and self.reducer is not None and self.trigger is ReducerTrigger.BEFORE_MESSAGES_RETRIEVAL:
            stored = session.state_bag[self.state_key] = list(await self.reducer.reduce(list(stored)))
        return [m.with_source(self._stamp) for m in stored]

    def store_input_request_message_filter(self, message: ChatMessage) -> bool:
        return message.source.type is not MessageSourceType.CHAT_HISTORY

    def store_input_response_message_filter(self, message: ChatMessage) -> bool:
        return True

    async def invoked(
        self, session: AgentSession, request: Sequence[ChatMessage], response: Sequence[ChatMessage] | None,
        exception: BaseException | None,
    ) -> None:
        """On success stores the request and response messages the store filters keep; nothing on failure."""
        if exception is not None:
            return
        stored = list(session.state_bag.get(self.state_key, ()))
        stored.extend(m for m in request if self.store_input_request_message_filter(m))
        stored.extend(m for m in response or () if self.store_input_response_message_filter(m))
        if self.reducer is not None and self.trigger is ReducerTrigger.AFTER_MESSAGE_ADDED:
            stored = list(await self.reducer.reduce(stored))
        session.state_bag[self.state_key] = stored
