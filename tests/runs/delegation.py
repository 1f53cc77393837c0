"""A run that calls another agent and a tool: `coordinator` asks the agent `repeater` (an agent used as a
tool) and reads a file, then answers. The local server answers each agent by its instructions, with
fixed token counts, so usage per call is known."""

from __future__ import annotations

from typing import Any

from tests.support.fake_openai import Reply, ToolCall

AGENTS = {
    "coordinator": """\
        id: coordinator
        name: Coordinator
        instructions: Ask the repeater, read the notes, answer.
        tools: [read_file]
        workspaces: [data]
        agent_tools: [repeater]
        """,
    "repeater": """\
        id: repeater
        name: Repeater
        description: Repeats what it is told.
        exposed_as_tool: true
        instructions: Repeat the query.
        """,
}

FIRST = (23, 9)
"""(prompt, completion) tokens of the coordinator's first call, its second, and the repeater's call."""
SECOND = (41, 6)
REPEATER = (5, 3)
REPEATER_ANSWER = "launch on Tuesday"
ANSWER = "It is on Tuesday."


def responder(leak: str = "") -> Any:
    """Answers each request by the agent that sent it; `leak` is put into the repeater's answer (a model
    that repeats a secret) to show it never reaches a span."""

    def answer(body: dict[str, Any]) -> Reply:
        messages = body.get("messages", [])
        system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
        if "Repeat the query" in system:
            return Reply(text=REPEATER_ANSWER + leak, prompt_tokens=REPEATER[0], completion_tokens=REPEATER[1],
                         model="fake-model-2025")
        if not any(m.get("role") == "tool" for m in messages):
            return Reply(tool_calls=[ToolCall("repeater", {"query": "When is the launch?"}, "call_agent"),
                                     ToolCall("read_file", {"path": "data/notes.txt"}, "call_file")],
                         prompt_tokens=FIRST[0], completion_tokens=FIRST[1], model="fake-model-2025")
        return Reply(text=ANSWER, prompt_tokens=SECOND[0], completion_tokens=SECOND[1], model="fake-model-2025")

    return answer
