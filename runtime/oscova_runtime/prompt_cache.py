"""What of a request an endpoint can serve from its prompt cache: the shortest prefix each endpoint caches
(`cache_minimum`, a table with its sources), the prefix a request keeps stable across runs (`stable_prefix`: up to
the first text that changes per day, user or run) and the prefix two requests share (`shared_prefix`), in the
model's tokens (`tokens.py` counts them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .tokens import RequestTokens, Tokenizer, count_request, message_tokens, tokenizer_for, tool_tokens

# --------------------------------------------------------------------------------------------------
# The shortest prefix an endpoint caches


@dataclass(frozen=True, slots=True)
class CacheMinimum:
    """The shortest prompt prefix an endpoint caches, in tokens, and who says so (for messages)."""

    tokens: int
    endpoint: str
    """How a message names the endpoint and its rule, e.g. "OpenAI caches a prompt prefix of 1,024 tokens or more"."""


# Each endpoint's documented minimum, read on 2026-12-02 (the pages' own dates in brackets):
# - OpenAI, Azure OpenAI: 1,024 tokens — developers.openai.com/api/docs/guides/prompt-caching.
# - Anthropic: 1,024 (Sonnet 4.x, Opus 4, 4.1), 2,048 (Haiku 3, 3.5), 4,096 (Opus 4.5, 4.6, Haiku 4.5) —
#   platform.claude.com/docs/en/docs/build-with-claude/prompt-caching.
# - Google Gemini: 2,048 (2.5 Flash, 2.5 Pro), 4,096 (3.x and later) — ai.google.dev/gemini-api/docs/caching
#   [2026-10-13].
# - DeepSeek: 64 (its cache's storage unit) — api-docs.deepseek.com/guides/kv_cache.
# - A local server (llama.cpp's llama-server, Ollama, vLLM on this machine): 0 — it keeps the previous request's
#   KV cache and reuses any common prefix (llama-server's `cache_prompt`, on by default).
# An endpoint not listed is taken for OpenAI-compatible: 1,024. `[models.NAME] cache_min_tokens` overrides.
NEVER_CACHED = 2**62
"""A minimum no request reaches."""
_ANTHROPIC_MODELS = (("claude-opus-4-5", 4096), ("claude-opus-4-6", 4096), ("claude-haiku-4-5", 4096),
                     ("claude-3-haiku", 2048), ("claude-3-5-haiku", 2048), ("claude-haiku-3", 2048))
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0", "host.docker.internal"})


def cache_minimum(model: str, base_url: str | None, configured: int | None = None, *,
                  offline: bool = False) -> CacheMinimum:
    """The shortest prefix the endpoint at `base_url` (None: OpenAI) caches for `model`: `configured` when set,
    else what the endpoint documents. `offline`: the offline model, which caches nothing."""
    from urllib.parse import urlsplit

    if offline:
        return CacheMinimum(NEVER_CACHED, "the offline model caches nothing")
    host = (urlsplit(base_url).hostname or "").lower() if base_url else "api.openai.com"
    if configured is not None:
        return CacheMinimum(configured, f"`cache_min_tokens` says the endpoint caches a prefix of {configured:,} "
                                        "tokens or more")
    if host in _LOCAL_HOSTS or host.endswith(".local"):
        return CacheMinimum(0, "a local server reuses any common prefix of the previous request")
    if host.endswith("anthropic.com"):
        tokens = next((n for prefix, n in _ANTHROPIC_MODELS if model.startswith(prefix)), 1024)
        return CacheMinimum(tokens, f"Anthropic caches a prompt prefix of {tokens:,} tokens or more for {model}")
    if host.endswith("googleapis.com"):
        tokens = 2048 if model.startswith("gemini-2.5") else 4096
        return CacheMinimum(tokens, f"Gemini caches a prompt prefix of {tokens:,} tokens or more for {model}")
    if host.endswith("deepseek.com"):
        return CacheMinimum(64, "DeepSeek caches prompt prefixes in units of 64 tokens")
    if host == "api.openai.com" or host.endswith(".openai.azure.com"):
        return CacheMinimum(1024, "OpenAI caches a prompt prefix of 1,024 tokens or more")
    return CacheMinimum(1024, f"an OpenAI-compatible endpoint ({host}) is taken to cache a prompt prefix of 1,024 "
                              "tokens or more (`cache_min_tokens` sets its own)")


# --------------------------------------------------------------------------------------------------
# The cacheable prefix


@dataclass(frozen=True, slots=True)
class Changing:
    """A part of the instructions that changes: its rendered `text`, where it comes from and how often it
    changes (`personal: `current_date``, `changes daily`)."""

    text: str
    where: str
    why: str
    start: int = 0
    """Where in the instructions to look for `text` (its provider's contribution begins there)."""


@dataclass(frozen=True, slots=True)
class Prefix:
    """The leading tokens of a request an endpoint can reuse from its cache, and what ends them."""

    tokens: int
    ends: str


def _leading(tools: Sequence[Mapping[str, Any]], messages: Sequence[Mapping[str, Any]], tokenizer: Tokenizer,
             cut: int | None, ends: str, content_tokens: int | None = None) -> Prefix:
    """The tools, then the system message up to character `cut` of its content (None: all of it), or its first
    `content_tokens`."""
    rule = tokenizer.rule
    total = sum(tool_tokens(t, tokenizer) for t in tools) + (rule.tools_end if tools else 0)
    if not messages or messages[0].get("role") != "system":
        return Prefix(total, ends)
    if cut is None:
        return Prefix(total + message_tokens(messages[0], tokenizer), ends)
    content = str(messages[0].get("content") or "")
    # The tokens of the whole content that lie before the cut (a space before a value is its token's start).
    kept = content_tokens if content_tokens is not None else tokenizer.shared(content, content[:cut])
    return Prefix(total + rule.per_message - 1 + tokenizer.count("system") + kept, ends)


def stable_prefix(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], tokenizer: Tokenizer,
                  changing: Sequence[Changing]) -> Prefix:
    """The prefix predicted from the request alone: in the order the endpoint reads it (tools, instructions,
    history, input), everything before the first part that changes. The tools are fixed for the deployment;
    in the instructions, the first `changing` text ends it; the messages after them change per run."""
    content = str(messages[0].get("content") or "") if messages and messages[0].get("role") == "system" else ""
    found = [(at, c) for c in changing if c.text and (at := content.find(c.text, c.start)) != -1]
    if not found:
        return _leading(tools, messages, tokenizer, None, "the messages after the instructions change per run")
    at, first = min(found, key=lambda pair: pair[0])
    return _leading(tools, messages, tokenizer, at, f"{first.where} {first.why}")


def shared_prefix(first: Mapping[str, Any], second: Mapping[str, Any], tokenizer: Tokenizer) -> Prefix:
    """The leading tokens two wire requests (`{"messages", "tools"}`) share, measured on their texts in the same
    order, and where they first differ."""
    tools_a, tools_b = list(first.get("tools") or ()), list(second.get("tools") or ())
    messages_a, messages_b = list(first.get("messages") or ()), list(second.get("messages") or ())
    if tools_a != tools_b:
        same = next((i for i, (a, b) in enumerate(zip(tools_a, tools_b, strict=False)) if a != b),
                    min(len(tools_a), len(tools_b)))
        return Prefix(sum(tool_tokens(t, tokenizer) for t in tools_a[:same]), f"the tools differ at tool {same + 1}")
    if not all(m and m[0].get("role") == "system" for m in (messages_a, messages_b)):
        return _leading(tools_a, [], tokenizer, None, "the first message differs")
    text_a, text_b = str(messages_a[0].get("content") or ""), str(messages_b[0].get("content") or "")
    if text_a == text_b:
        return _leading(tools_a, messages_a, tokenizer, None, "the messages after the instructions differ")
    at = next((i for i, (a, b) in enumerate(zip(text_a, text_b, strict=False)) if a != b), min(len(text_a), len(text_b)))
    line = text_a.count("\n", 0, at) + 1
    return _leading(tools_a, messages_a, tokenizer, at, f"the instructions differ on their line {line}",
                    tokenizer.shared(text_a, text_b))


def request_cost(request: Mapping[str, Any], tokenizer: Tokenizer | None = None,
                 changing: Sequence[Changing] = ()) -> tuple[RequestTokens, Prefix]:
    """What one wire request (`{"model", "messages", "tools"}`: a transcript's recorded request, or what a run
    would send) costs and its predicted cacheable prefix; without a `tokenizer`, the one its `model` implies."""
    tokenizer = tokenizer if tokenizer is not None else tokenizer_for(str(request.get("model") or ""))
    messages, tools = list(request.get("messages") or ()), list(request.get("tools") or ())
    return count_request(messages, tools, tokenizer), stable_prefix(messages, tools, tokenizer, changing)
