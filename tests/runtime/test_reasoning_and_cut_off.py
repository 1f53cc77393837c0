"""Reasoning models and answers cut off by the token limit, through the real `openai` client and the local
server: each wire shape of reasoning (`reasoning_content`, `reasoning`, `<think>` left inline) becomes a
`ReasoningContent` apart from the answer, and a tool call cut at `max_tokens` says so and keeps its usage."""

from __future__ import annotations

import re

import pytest
from conftest import Reply, ToolCall
from oscova_runtime.agent import ChatClientAgent, ChatClientAgentOptions
from oscova_runtime.chat_client import ChatClientError
from oscova_runtime.completions import InlineThinking
from oscova_runtime.messages import (
    ChatMessage,
    ChatOptions,
    ReasoningContent,
    TextContent,
    updates_to_messages,
)

DOUBLED_WORD = re.compile(r"\b(\w+) \1\b", re.IGNORECASE)


async def streamed(client, options: ChatOptions | None = None) -> tuple[list, ChatMessage]:
    updates = [u async for u in client.get_streaming_response([ChatMessage.of("user", "hi")], options or ChatOptions())]
    [message] = updates_to_messages(updates)
    return updates, message


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
async def test_streamed_reasoning_is_apart_from_the_answer(openai_client, fake_openai, field):
    fake_openai.enqueue(Reply(reasoning="The user greets me. I greet back.", reasoning_field=field, text="Hello!",
                              chunk_size=4))
    updates, message = await streamed(openai_client)
    assert message.reasoning == "The user greets me. I greet back."
    assert message.text == "Hello!"
    assert "".join(u.reasoning for u in updates) == message.reasoning  # it streams as it comes
    assert [type(c) for c in message.contents] == [ReasoningContent, TextContent]


async def test_a_reply_that_is_all_reasoning_has_an_empty_answer_not_the_reasoning(openai_client, fake_openai):
    """What a reasoning template gives a model that never closes its thinking: `content` stays empty."""
    fake_openai.enqueue(Reply(reasoning="Thinking and thinking", text=None, finish_reason="length"))
    updates, message = await streamed(openai_client)
    assert (message.text, message.reasoning) == ("", "Thinking and thinking")
    assert updates[-1].finish_reason == "length"


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 7, 100])
async def test_a_think_block_left_inline_is_reasoning(openai_client, fake_openai, chunk_size):
    fake_openai.enqueue(Reply(text="<think>\nWhat is 2+2? It is 4.\n</think>\n\nThe answer is 4.", chunk_size=chunk_size))
    _, message = await streamed(openai_client)
    assert message.reasoning == "\nWhat is 2+2? It is 4.\n"
    assert message.text == "The answer is 4."


async def test_text_that_only_mentions_think_is_the_answer(openai_client, fake_openai):
    fake_openai.enqueue(Reply(text="Write <think> tags around it. </think> closes them.", chunk_size=3))
    _, message = await streamed(openai_client)
    assert (message.text, message.reasoning) == ("Write <think> tags around it. </think> closes them.", "")


def test_inline_thinking_holds_back_only_what_could_be_a_marker():
    inline = InlineThinking()
    assert inline.feed("  <thi") == []  # it may still become `<think>`
    assert inline.feed("nk>abc</th") == [ReasoningContent("abc")]
    assert inline.feed("ink>  ") == []
    assert inline.feed("Answer") == [TextContent("Answer")]
    assert inline.flush() == []
    unclosed = InlineThinking()
    assert unclosed.feed("<think>still thinking</") == [ReasoningContent("still thinking")]
    assert unclosed.flush() == [ReasoningContent("</")]


@pytest.mark.parametrize(("reply", "reasoning", "text"), [
    (Reply(reasoning="Because.", text="Yes."), "Because.", "Yes."),
    (Reply(reasoning="Because.", reasoning_field="reasoning", text="Yes."), "Because.", "Yes."),
    (Reply(text="<think>Because.</think>Yes."), "Because.", "Yes."),
], ids=["reasoning_content", "reasoning", "inline-think"])
async def test_a_whole_answer_keeps_its_reasoning_apart(openai_client, fake_openai, reply, reasoning, text):
    fake_openai.enqueue(reply)
    response = await openai_client.get_response([ChatMessage.of("user", "hi")], ChatOptions())
    [message] = response.messages
    assert (message.reasoning, message.text, response.text) == (reasoning, text, text)


async def test_reasoning_tokens_are_read_from_the_usage(openai_client, fake_openai):
    fake_openai.enqueue(Reply(reasoning="Hmm.", text="Ok.", completion_tokens=30, reasoning_tokens=22))
    updates, _ = await streamed(openai_client)
    assert (updates[-1].usage.output_tokens, updates[-1].usage.reasoning_tokens) == (30, 22)


async def test_reasoning_is_kept_in_the_history_but_never_sent_back(openai_client, fake_openai):
    agent = ChatClientAgent(openai_client, ChatClientAgentOptions("r"))
    session = agent.create_session()
    fake_openai.enqueue(Reply(reasoning="secret chain of thought", text="Four."), Reply(text="Five."))
    assert "".join([u.text async for u in agent.run_streaming("2+2?", session=session)]) == "Four."
    assert "".join([u.text async for u in agent.run_streaming("and +1?", session=session)]) == "Five."
    history = agent.chat_history_provider.messages(session)
    assert history[1].reasoning == "secret chain of thought" and history[1].text == "Four."
    sent = fake_openai.requests[1].messages
    assert {"role": "assistant", "content": "Four."} in sent
    assert "secret chain of thought" not in str(sent)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_a_tool_call_cut_at_max_tokens_names_the_limit_and_keeps_its_usage(openai_client, fake_openai, stream):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", '{"path": "notes', "c1")], finish_reason="length",
                              prompt_tokens=275, completion_tokens=12))
    options = ChatOptions(max_tokens=12)
    with pytest.raises(ChatClientError) as raised:
        if stream:
            await streamed(openai_client, options)
        else:
            await openai_client.get_response([ChatMessage.of("user", "hi")], options)
    message = str(raised.value)
    assert message == ("The model's answer reached its token limit (`max_tokens` 12) in the middle of the arguments "
                       "of the tool 'read_file', so the tool was not called; raise `max_tokens` in the agent's "
                       "`chat_options`")
    assert (raised.value.usage.input_tokens, raised.value.usage.output_tokens) == (275, 12)


async def test_a_tool_call_cut_without_max_tokens_says_whose_limit_it_was(openai_client, fake_openai):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", '{"pa', "c1")], finish_reason="length"))
    with pytest.raises(ChatClientError) as raised:
        await streamed(openai_client)
    assert str(raised.value) == (
        "The model's answer reached its token limit (no `max_tokens` is set: the endpoint's own limit, or its "
        "context was full) in the middle of the arguments of the tool 'read_file', so the tool was not called; "
        "shorten the conversation or raise the endpoint's limit")


async def test_malformed_arguments_repeat_no_word(openai_client, fake_openai):
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("read_file", '{"path": "notes', "c1")]))
    with pytest.raises(ChatClientError) as raised:
        await streamed(openai_client)
    assert "(Unterminated string starting at character 9)" in str(raised.value)
    assert not DOUBLED_WORD.search(str(raised.value)), str(raised.value)
