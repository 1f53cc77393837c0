"""Chat types: messages, contents, message sources, options and responses (Microsoft.Extensions.AI shapes)."""

from __future__ import annotations

import copy
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


class MessageSourceType(enum.Enum):
    """Where a request message came from (seed: `AgentRequestMessageSourceType`)."""

    EXTERNAL = "External"
    CHAT_HISTORY = "ChatHistory"
    AI_CONTEXT_PROVIDER = "AIContextProvider"


def full_type_name(value: object) -> str:
    """The module-qualified name of `value`'s type (the framework stamps sources with `GetType().FullName`)."""
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def short_type_name(source_id: str) -> str:
    """The class name alone of a module-qualified source id (what an editor may show)."""
    return source_id.rpartition(".")[2]


@dataclass(frozen=True, slots=True)
class MessageSource:
    type: MessageSourceType
    source_id: str | None = None
    """The full (module-qualified) type name of the provider that contributed the message, or of the
    chat-history provider it was loaded from."""


EXTERNAL = MessageSource(MessageSourceType.EXTERNAL)
CHAT_HISTORY = MessageSource(MessageSourceType.CHAT_HISTORY, "oscova_runtime.session.InMemoryChatHistoryProvider")
"""How the default chat-history provider stamps the messages it loads."""


@dataclass(slots=True)
class TextContent:
    text: str


@dataclass(slots=True)
class ReasoningContent:
    """What a reasoning model thought before it answered (`delta.reasoning_content`, `delta.reasoning`, or a
    `<think>` block the endpoint left in the text): shown apart from the answer, kept in transcripts, never
    part of `text` and never sent back to the model."""

    text: str


@dataclass(slots=True)
class DataContent:
    """Binary content (an image) sent to the model as a data URI."""

    data: bytes
    media_type: str


@dataclass(slots=True)
class FunctionCallContent:
    call_id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class FunctionResultContent:
    call_id: str | None
    result: Any = None
    exception: BaseException | None = field(default=None, repr=False, compare=False)
    """The application-side exception: kept for the host, never sent to the model."""


Content = TextContent | ReasoningContent | DataContent | FunctionCallContent | FunctionResultContent


@dataclass(slots=True)
class ChatMessage:
    role: str
    contents: list[Content] = field(default_factory=list)
    source: MessageSource = EXTERNAL
    author_name: str | None = None

    @classmethod
    def of(cls, role: str, text: str, source: MessageSource = EXTERNAL) -> ChatMessage:
        return cls(role, [TextContent(text)], source)

    @property
    def text(self) -> str:
        return "".join(c.text for c in self.contents if isinstance(c, TextContent))

    @property
    def reasoning(self) -> str:
        return "".join(c.text for c in self.contents if isinstance(c, ReasoningContent))

    @property
    def function_calls(self) -> list[FunctionCallContent]:
        return [c for c in self.contents if isinstance(c, FunctionCallContent)]

    @property
    def function_results(self) -> list[FunctionResultContent]:
        return [c for c in self.contents if isinstance(c, FunctionResultContent)]

    def with_source(self, source: MessageSource) -> ChatMessage:
        return ChatMessage(self.role, self.contents, source, self.author_name)


@dataclass(slots=True)
class UsageDetails:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int | None = None
    """Input tokens the endpoint read from its prompt cache (`usage.prompt_tokens_details.cached_tokens`); None
    where it does not say."""
    reasoning_tokens: int | None = None
    """Output tokens spent on reasoning (`usage.completion_tokens_details.reasoning_tokens`); None where the
    endpoint does not say."""

    def add(self, other: UsageDetails | None) -> None:
        if other is not None:
            self.input_tokens += other.input_tokens
            self.output_tokens += other.output_tokens
            self.total_tokens += other.total_tokens
            if other.cached_input_tokens is not None:
                self.cached_input_tokens = (self.cached_input_tokens or 0) + other.cached_input_tokens
            if other.reasoning_tokens is not None:
                self.reasoning_tokens = (self.reasoning_tokens or 0) + other.reasoning_tokens


@dataclass(slots=True)
class ChatOptions:
    """Per-request options. `instructions` and `tools` are filled by the provider pipeline."""

    instructions: str | None = None
    tools: list[Any] | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stop: list[str] | None = None
    tool_choice: str | None = None
    continuation_token: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    _KNOWN = ("temperature", "top_p", "max_tokens", "seed", "stop", "tool_choice")

    @classmethod
    def from_mapping(cls, values: dict[str, Any] | None) -> ChatOptions:
        values = dict(values or {})
        known = {k: values.pop(k) for k in cls._KNOWN if k in values}
        if isinstance(known.get("stop"), str):
            known["stop"] = [known["stop"]]
        return cls(**known, extra=values)

    def clone(self) -> ChatOptions:
        twin = copy.copy(self)
        twin.tools = list(self.tools) if self.tools is not None else None
        twin.stop = list(self.stop) if self.stop is not None else None
        twin.extra = copy.deepcopy(self.extra)
        return twin


@dataclass(slots=True)
class ChatResponse:
    messages: list[ChatMessage] = field(default_factory=list)
    usage: UsageDetails | None = None
    finish_reason: str | None = None
    model: str | None = None

    @property
    def text(self) -> str:
        return "".join(m.text for m in self.messages if m.role == "assistant")


@dataclass(slots=True)
class ChatResponseUpdate:
    """One streamed piece: text deltas, completed function calls or results, usage."""

    role: str | None = "assistant"
    contents: list[Content] = field(default_factory=list)
    usage: UsageDetails | None = None
    finish_reason: str | None = None
    model: str | None = None
    """The model that answered, as the endpoint names it (on the last update of a stream)."""
    author_name: str | None = None
    """The agent that produced it (`ChatClientAgent` sets its name on every update it passes on)."""

    @property
    def text(self) -> str:
        return "".join(c.text for c in self.contents if isinstance(c, TextContent))

    @property
    def reasoning(self) -> str:
        return "".join(c.text for c in self.contents if isinstance(c, ReasoningContent))


class UpdateAccumulator:
    """Streamed updates coalesced into messages as they arrive: consecutive updates of one role form one
    message, consecutive text deltas one text and consecutive reasoning deltas one reasoning (kept as plain
    strings and joined once, so a long stream costs linear time and keeps no object per delta alive for the
    garbage collector to walk)."""

    def __init__(self) -> None:
        self._messages: list[ChatMessage] = []
        self._pieces: list[str] = []  # the text (or reasoning) run at the end of the last message, not yet joined
        self._kind: type[TextContent] | type[ReasoningContent] = TextContent

    def _close_text(self) -> None:
        if self._pieces:
            self._messages[-1].contents.append(self._kind("".join(self._pieces)))
            self._pieces.clear()

    def add(self, update: ChatResponseUpdate) -> None:
        role = update.role or "assistant"
        if not update.contents:
            return
        if not self._messages or self._messages[-1].role != role:
            self._close_text()
            self._messages.append(ChatMessage(role, [], author_name=update.author_name))
        elif self._messages[-1].author_name is None:
            self._messages[-1].author_name = update.author_name
        for content in update.contents:
            if isinstance(content, TextContent | ReasoningContent):
                if type(content) is not self._kind:
                    self._close_text()
                    self._kind = type(content)
                self._pieces.append(content.text)
            else:
                self._close_text()
                self._messages[-1].contents.append(content)

    def messages(self) -> list[ChatMessage]:
        self._close_text()
        return [ChatMessage(m.role, list(m.contents), m.source, m.author_name) for m in self._messages]


def updates_to_messages(updates: Iterable[ChatResponseUpdate]) -> list[ChatMessage]:
    """Coalesces streamed updates into messages (see `UpdateAccumulator`)."""
    accumulator = UpdateAccumulator()
    for update in updates:
        accumulator.add(update)
    return accumulator.messages()
