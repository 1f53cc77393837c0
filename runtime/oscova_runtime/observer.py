"""Task-run observation (seed *Agent Runtime*, "Observe a task run").

`AgentTaskRunObserver` projects model activity into an `AgentTaskRun`. The middleware observes a request
only on the streaming path and a response only on the non-streaming path, exactly as the seed states:
streamed deltas are never appended and raise no response-side signal.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field

from .chat import ChatClient, DelegatingChatClient
from .messages import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    MessageSourceType,
)


@dataclass(slots=True)
class AgentTaskRun:
    """Inspection state of one task run. Initialize `live_messages` before the run."""

    live_messages: list[ChatMessage] | None = None
    user_message: ChatMessage | None = None
    instructions: str | None = None
    live_messages_changed: list[Callable[[AgentTaskRun], None]] = field(default_factory=list)

    def raise_live_messages_changed(self) -> None:
        """Runs subscribers synchronously; their exceptions propagate to the observer's caller."""
        for handler in list(self.live_messages_changed):
            handler(self)


class AgentTaskRunObserver:
    """Stateful: create one per run."""

    def __init__(self, run: AgentTaskRun) -> None:
        self.run = run
        self._live()
        self._seen_call_ids: set[str] = set()

    def _live(self) -> list[ChatMessage]:
        if self.run.live_messages is None:
            raise ValueError("Initialize AgentTaskRun.live_messages before observing a run")
        return self.run.live_messages

    def observe_request(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> None:
        run, live = self.run, self._live()
        appended = False
        if run.instructions is None and options is not None and options.instructions:
            run.instructions = options.instructions
        for message in messages:
            if message.source.type is MessageSourceType.CHAT_HISTORY:
                continue
            if (
                run.user_message is None and message.role == "user"
                and message.source.type is MessageSourceType.EXTERNAL
            ):
                run.user_message = message
                live.append(message)
                appended = True
                continue
            results = message.function_results
            if results:
                ids = [r.call_id for r in results]
                if any(i is None for i in ids) or any(i not in self._seen_call_ids for i in ids):
                    live.append(message)
                    appended = True
                self._seen_call_ids.update(i for i in ids if i is not None)
        if appended:
            run.raise_live_messages_changed()

    def observe_response(self, response: ChatResponse) -> None:
        self._live().extend(response.messages)
        self.run.raise_live_messages_changed()


class AgentRunObserverAccessor:
    """Holds the observer of the run in progress; assign before execution and clear afterwards."""

    def __init__(self, observer: AgentTaskRunObserver | None = None) -> None:
        self.observer = observer


class AgentRunObserverMiddleware(DelegatingChatClient):
    """Request observation on the streaming path only; response observation on the non-streaming path."""

    def __init__(self, inner: ChatClient, accessor: AgentRunObserverAccessor) -> None:
        super().__init__(inner)
        self.accessor = accessor

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        response = await self.inner.get_response(messages, options)
        observer = self.accessor.observer
        if observer is not None:
            observer.observe_response(response)
        return response

    async def get_streaming_response(  # type: ignore[override]
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncGenerator[ChatResponseUpdate, None]:
        observer = self.accessor.observer
        if observer is not None:
            observer.observe_request(messages, options)
        async with contextlib.aclosing(self.inner.get_streaming_response(messages, options)) as stream:
            async for update in stream:
                yield update


def use_agent_run_observer(accessor: AgentRunObserverAccessor) -> Callable[[object], object]:
    """A `configure_builder` callback: `builder.use(...)` the observer middleware."""

    def configure(builder):  # type: ignore[no-untyped-def]
        return builder.use(lambda inner: AgentRunObserverMiddleware(inner, accessor))

    return configure
