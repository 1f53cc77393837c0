"""The summarizing chat reducer used when a definition enables compaction."""

from __future__ import annotations

from collections.abc import Sequence

from .chat import ChatClient
from .messages import ChatMessage, ChatOptions

SUMMARY_PREFIX = "Summary of the earlier conversation:\n"
SUMMARY_INSTRUCTIONS = (
    "Summarize the conversation below for your own later use: keep facts, decisions, names, open tasks and "
    "tool results that matter; drop pleasantries. Answer with the summary only."
)


class SummarizingChatReducer:
    """Once history exceeds `keep_last + threshold` messages, everything but the last `keep_last` is
    replaced by one summary message written by the model. The cut never separates a tool result from
    the call that produced it."""

    def __init__(self, chat_client: ChatClient, *, keep_last: int = 8, threshold: int = 8) -> None:
        self.chat_client = chat_client
        self.keep_last = keep_last
        self.threshold = threshold

    def _cut(self, messages: Sequence[ChatMessage]) -> int:
        cut = len(messages) - self.keep_last
        while 0 < cut < len(messages) and messages[cut].role == "tool":
            cut -= 1
        return cut

    async def reduce(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        if len(messages) <= self.keep_last + self.threshold:
            return list(messages)
        cut = self._cut(messages)
        if cut <= 0:
            return list(messages)
        older, kept = messages[:cut], messages[cut:]
        transcript = "\n".join(f"{m.role}: {m.text}" for m in older if m.text)
        response = await self.chat_client.get_response(
            [ChatMessage.of("user", transcript)], ChatOptions(instructions=SUMMARY_INSTRUCTIONS)
        )
        summary = ChatMessage.of("assistant", SUMMARY_PREFIX + response.text.strip())
        return [summary, *kept]
