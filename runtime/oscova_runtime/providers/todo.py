"""TodoListContextProvider: instructions, a synthetic user message with the list, and todo tools.

The list lives in the session's state bag under the provider's state key.
"""

from __future__ import annotations

from typing import Any

from ..context import AIContext, AIContextProvider, InvokingContext, block
from ..messages import ChatMessage
from ..session import AgentSession
from ..tools import AIFunction, function_from_callable

TODO_INSTRUCTIONS = (
    "For work with several steps, keep a todo list: write it with `todo_write` (the whole list each time, "
    "each item with a status of pending, in_progress or done) and read it with `todo_read`."
)
STATUSES = ("pending", "in_progress", "done")
_MARK = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}


def format_todo(items: list[dict[str, str]]) -> str:
    if not items:
        return "(empty)"
    return "\n".join(f"- {_MARK.get(i['status'], '[ ]')} {i['content']}" for i in items)


class TodoListContextProvider(AIContextProvider):
    def _items(self, session: AgentSession) -> list[dict[str, str]]:
        return session.state_bag.setdefault(self.state_keys[0], [])

    def tools_for(self, session: AgentSession) -> list[AIFunction]:
        async def todo_read() -> str:
            """Reads the todo list."""
            return format_todo(self._items(session))

        async def todo_write(items: list[dict[str, Any]]) -> str:
            """Replaces the todo list; each item is {"content": text, "status": pending|in_progress|done}."""
            cleaned = []
            for item in items:
                content = str(item.get("content", "")).strip() if isinstance(item, dict) else str(item).strip()
                status = item.get("status", "pending") if isinstance(item, dict) else "pending"
                if content:
                    cleaned.append({"content": content, "status": status if status in STATUSES else "pending"})
            session.state_bag[self.state_keys[0]] = cleaned
            return "Todo list updated:\n" + format_todo(cleaned)

        return [function_from_callable(todo_read), function_from_callable(todo_write)]

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        items = self._items(context.session)
        message = ChatMessage.of("user", f"<todo_list>\n{format_todo(items)}\n</todo_list>")
        return AIContext(instructions=block(TODO_INSTRUCTIONS), messages=[message], tools=self.tools_for(context.session))
