"""Counting a request as a chat-template server does: the chat template read from a Jinja file, a
`tokenizer_config.json` or a GGUF file, the request rendered with its tools, the text tokenized (a GGUF file's own
vocabulary too). The real server's figures are checked in tests/realmodel/ and replayed from its recordings in
tests/runs/test_recorded_streams.py; here the parts, on material the tests make."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from oscova_runtime import prompt_budget, tokens
from oscova_runtime.chat_templates import (
    ChatTemplateUnavailable,
    gguf_metadata,
    load_chat_template,
)
from test_tokens import train_tokenizer_json

from tests.support.gguf import gguf_of_tokenizer_json, write_gguf

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "llama-server" / "templates"
QWEN = (TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()
CORPUS = ["You are a helpful assistant.", "Read the notes.", "read_file", "Read a file of the workspace."] * 40
TOOL = {"type": "function", "function": {"name": "read_file", "description": "Read a file of the workspace.",
                                         "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                        "required": ["path"]}}}
MESSAGES = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Read the notes."}]


@pytest.fixture
def model_files(tmp_path: Path) -> Path:
    tokenizer_json = train_tokenizer_json(tmp_path / "tokenizer.json", CORPUS)
    gguf_of_tokenizer_json(tmp_path / "model.gguf", tokenizer_json, template=QWEN)
    (tmp_path / "qwen.jinja").write_text(QWEN)
    return tmp_path


def test_a_gguf_files_metadata_is_read_without_its_tensors(tmp_path):
    path = write_gguf(tmp_path / "m.gguf", {"tokenizer.chat_template": "{{ messages }}", "general.name": "tiny",
                                           "tokenizer.ggml.add_bos_token": True, "tokenizer.ggml.token_type": [1, 3]},
                      tail=b"\xff" * 4096)
    assert gguf_metadata(str(path)) == {"tokenizer.chat_template": "{{ messages }}", "general.name": "tiny",
                                        "tokenizer.ggml.add_bos_token": True, "tokenizer.ggml.token_type": [1, 3]}


@pytest.mark.parametrize(("content", "says"), [(b"GGML....", "not a GGUF file"), (b"GGUF\x03\0\0\0" + b"\0" * 7,
                                                                                   "ends inside its metadata")])
def test_a_file_that_is_not_gguf_says_so(tmp_path, content, says):
    (tmp_path / "m.gguf").write_bytes(content)
    with pytest.raises(ChatTemplateUnavailable, match=says):
        gguf_metadata(str(tmp_path / "m.gguf"))


def test_the_template_is_read_from_each_kind_of_file(model_files):
    (model_files / "tokenizer_config.json").write_text(json.dumps(
        {"chat_template": [{"name": "default", "template": "plain"}, {"name": "tool_use", "template": QWEN}],
         "bos_token": {"content": "<s>"}, "eos_token": "</s>", "add_bos_token": True}))
    jinja, config, gguf = (load_chat_template(str(model_files / name)) for name in
                           ("qwen.jinja", "tokenizer_config.json", "model.gguf"))
    assert jinja.source == config.source == gguf.source == QWEN
    assert (config.bos_token, config.eos_token, config.add_bos) == ("<s>", "</s>", True)
    assert (gguf.bos_token, gguf.eos_token, gguf.add_bos) == ("<|im_start|>", "<|im_end|>", False)


def test_the_gguf_vocabulary_counts_as_its_tokenizer_json_does(model_files):
    from tokenizers import Tokenizer

    own = Tokenizer.from_file(str(model_files / "tokenizer.json"))
    counted = tokens.tokenizer_for("local-model", "model.gguf", root=str(model_files))
    assert counted.exact and counted.note is None
    for text in ["Read the notes.", "<|im_start|>user\nRead a file of the workspace.<|im_end|>\n", "Ünïcode 🤖 12345"]:
        assert counted.count(text) == len(own.encode(text, add_special_tokens=False).ids)
    assert counted.count("<|im_start|>") == 1  # a control token is one token, as the server matches it


def test_a_request_with_tools_is_counted_through_the_template(model_files):
    counted_by = tokens.tokenizer_for("local-model", chat_template="model.gguf", root=str(model_files))
    assert counted_by.template is not None and counted_by.exact  # the GGUF gives the tokenizer too
    counted = tokens.count_request(MESSAGES, [TOOL], counted_by)
    rendered = counted_by.template.render(MESSAGES, [TOOL])
    assert "# Tools" in rendered and '"name": "read_file"' in rendered and rendered.endswith("<|im_start|>assistant\n")
    assert counted.templated and counted.note is None
    assert counted.total == counted_by.count_prompt(rendered)
    assert counted.tools == counted.total - counted_by.count_prompt(counted_by.template.render(MESSAGES, []))
    assert counted.per_tool == [counted.tools]
    by_rule = tokens.count_request(MESSAGES, [TOOL], tokens.tokenizer_for("local-model", "model.gguf",
                                                                          root=str(model_files)))
    assert counted.tools > by_rule.tools  # the template's preamble, which the rule does not know
    assert by_rule.note == tokens.TOOLS_ESTIMATED_NOTE


def test_tool_call_arguments_reach_the_template_as_objects(model_files):
    template = load_chat_template(str(model_files / "qwen.jinja"))
    called = [*MESSAGES, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}]}]
    assert '{"name": "read_file", "arguments": {"path": "a.txt"}}' in template.render(called, [TOOL])


def test_a_template_that_refuses_the_request_falls_back_to_the_rule_and_says_why(model_files):
    (model_files / "strict.jinja").write_text("{{ raise_exception('Conversation roles must alternate') }}")
    counted_by = tokens.tokenizer_for("local-model", "model.gguf", root=str(model_files), chat_template="strict.jinja")
    counted = tokens.count_request(MESSAGES, [TOOL], counted_by)
    assert not counted.templated
    assert counted.note == ("the chat template refuses the request: Conversation roles must alternate; this request is "
                            "counted by OpenAI's rule")


def test_a_chat_template_that_cannot_be_read_is_said(model_files):
    (model_files / "broken.jinja").write_text("{% for %}")
    counted_by = tokens.tokenizer_for("local-model", "model.gguf", root=str(model_files), chat_template="broken.jinja")
    assert counted_by.template is None
    assert "the chat template broken.jinja could not be read (the chat template is not valid Jinja (line 1" in \
        counted_by.note
    missing = tokens.tokenizer_for("local-model", "model.gguf", root=str(model_files), chat_template="gone.jinja")
    assert missing.template is None and "(gone.jinja: there is no such file or folder)" in missing.note


def test_the_bos_token_is_counted_once_where_the_server_adds_it(model_files):
    with_bos = gguf_of_tokenizer_json(model_files / "bos.gguf", model_files / "tokenizer.json", template=QWEN,
                                      add_bos=True)
    counted_by = tokens.tokenizer_for("m", chat_template=str(with_bos))
    assert counted_by.count_prompt("<|im_start|>user") == counted_by.count("<|im_start|>user")  # it begins with BOS
    assert counted_by.count_prompt("hello") == counted_by.count("hello") + 1


async def test_a_limit_is_kept_as_the_server_counts_tools_included(model_files):
    """`context_window` against a chat-template server: a request the rule counts under the limit but the
    server's template puts over it is refused before it is sent."""
    from conftest import ScriptedChatClient
    from oscova_runtime.messages import ChatMessage, ChatOptions
    from oscova_runtime.tools import function_from_callable

    def read_file(path: str) -> str:
        """Read a file of the workspace."""
        return path

    templated = tokens.tokenizer_for("local-model", chat_template="model.gguf", root=str(model_files))
    by_rule = tokens.tokenizer_for("local-model", "model.gguf", root=str(model_files))
    tool = function_from_callable(read_file)
    messages, options = [ChatMessage.of("user", "Read the notes.")], ChatOptions(instructions="You are a helpful "
                                                                                "assistant.", tools=[tool])
    wire = [{"role": "system", "content": options.instructions}, {"role": "user", "content": "Read the notes."}]
    served = tokens.count_request(wire, [tool.schema()], templated).total
    ruled = tokens.count_request(wire, [tool.schema()], by_rule).total
    assert ruled < served
    limit = prompt_budget.PromptLimit((ruled + served) // 2, "the context window of [models.local]")
    inner = ScriptedChatClient("fine")
    await prompt_budget.PromptBudgetClient(inner, by_rule, [limit]).get_response(messages, options)  # the rule lets it by
    with pytest.raises(prompt_budget.PromptTooLongError, match=f"The request would be {served:,} prompt tokens"):
        await prompt_budget.PromptBudgetClient(inner, templated, [limit]).get_response(messages, options)
    assert len(inner.requests) == 1  # nothing was sent the second time
