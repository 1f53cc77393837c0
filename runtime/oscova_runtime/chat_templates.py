"""The chat template a chat-template server (llama.cpp, vLLM, Ollama, TGI) applies to a request, for counting its
prompt as the server does: the messages *and the tools* rendered into one text with Jinja2, then tokenized.

`[models.NAME] chat_template` names where the template is: a Jinja file (`.jinja`, e.g. llama.cpp's
`models/templates/`), a Hugging Face `tokenizer_config.json` (its `chat_template`, and its `bos_token`,
`eos_token` and `add_bos_token`), or a GGUF model file (the `tokenizer.chat_template` it carries). A GGUF file also
gives the tokenizer (`gguf_tokenizer`: its byte-level BPE vocabulary, merges and control tokens, pre-tokenized
by the rules llama.cpp applies to its `tokenizer.ggml.pre`), so `chat_template = "model.gguf"` alone counts as the
server that loaded that file does.

Templates are rendered as Hugging Face `transformers` renders them (a sandboxed, immutable Jinja2 environment;
`trim_blocks`, `lstrip_blocks`, `loopcontrols`; `tojson`, `raise_exception`, `strftime_now`), with tool-call
arguments as objects (llama.cpp and `transformers` both pass them so). Files are read through `paths`.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import paths

MAX_TEMPLATE_BYTES = 4 * 1024 * 1024
MAX_GGUF_METADATA = 256 * 1024 * 1024
"""The most of a GGUF file read for its metadata (the tokenizer's vocabulary is in it; the tensors are not read)."""
GGUF_MAGIC = b"GGUF"


class ChatTemplateUnavailable(Exception):
    """A configured chat template cannot be read or rendered; the message says why, in words."""


# --------------------------------------------------------------------------------------------------
# GGUF metadata


class _Short(Exception):
    """The metadata goes on past the bytes read so far."""


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def _parse_gguf(data: bytes) -> dict[str, Any]:
    """The key-value metadata at the start of a GGUF file (versions 2 and 3); `_Short` when `data` ends first."""
    if data[:4] != GGUF_MAGIC[:len(data)] or (len(data) >= 4 and data[:4] != GGUF_MAGIC):
        raise ChatTemplateUnavailable("it is not a GGUF file")
    if len(data) < 24:
        raise _Short
    version, _tensors, count = struct.unpack_from("<IQQ", data, 4)
    if version not in (2, 3):
        raise ChatTemplateUnavailable(f"it is GGUF version {version}; versions 2 and 3 are read")
    at = 24

    def take(fmt: str) -> Any:
        nonlocal at
        size = struct.calcsize(fmt)
        if at + size > len(data):
            raise _Short
        value = struct.unpack_from(fmt, data, at)[0]
        at += size
        return value

    def string() -> str:
        nonlocal at
        size = take("<Q")
        if at + size > len(data):
            raise _Short
        value = data[at:at + size].decode("utf-8", "replace")
        at += size
        return value

    def value(kind: int) -> Any:
        nonlocal at
        if kind == _STRING:
            return string()
        if kind == _ARRAY:
            item_kind, items = take("<I"), take("<Q")
            if item_kind in _SCALARS and item_kind != 7:  # numbers in one slice
                fmt = _SCALARS[item_kind]
                size = struct.calcsize(fmt) * items
                if at + size > len(data):
                    raise _Short
                values = list(struct.unpack_from(f"<{items}{fmt[1]}", data, at))
                at += size
                return values
            return [value(item_kind) for _ in range(items)]
        if kind in _SCALARS:
            return take(_SCALARS[kind])
        raise ChatTemplateUnavailable(f"its metadata has a value of unknown type {kind}")

    metadata: dict[str, Any] = {}
    for _ in range(count):
        key = string()
        metadata[key] = value(take("<I"))
    return metadata


def gguf_metadata(path: str, root: str | None = None) -> dict[str, Any]:
    """The metadata of a GGUF file, read through `paths` a growing head at a time (never its tensors)."""
    limit = 1024 * 1024
    while True:
        try:
            data, more = paths.read_head(path, root=root, limit=limit)
        except paths.FileRefused as refused:
            raise ChatTemplateUnavailable(str(refused)) from None
        try:
            return _parse_gguf(data)
        except _Short:
            if not more:
                raise ChatTemplateUnavailable("the file ends inside its metadata") from None
            if limit >= MAX_GGUF_METADATA:
                raise ChatTemplateUnavailable(f"its metadata is longer than {MAX_GGUF_METADATA >> 20} MB") from None
            limit *= 4


@lru_cache(maxsize=8)
def _gguf_metadata_cached(path: str, root: str | None, stamp: tuple[int, int]) -> dict[str, Any]:
    return gguf_metadata(path, root)


def _stamp(path: str) -> tuple[int, int]:
    try:
        info = os.stat(path)
    except OSError as error:
        raise ChatTemplateUnavailable(paths.describe_os_error(error)) from None
    return info.st_mtime_ns, info.st_size


def cached_gguf_metadata(path: str, root: str | None = None) -> dict[str, Any]:
    """`gguf_metadata`, read once per version of the file."""
    return _gguf_metadata_cached(os.path.realpath(path), root, _stamp(path))


# --------------------------------------------------------------------------------------------------
# Templates


@dataclass(frozen=True)
class ChatTemplate:
    """A model's chat template and the special tokens it writes."""

    source: str
    name: str
    """Where it came from, for messages (`Qwen-Qwen2.5-7B-Instruct.jinja`, `model.gguf`)."""
    bos_token: str = ""
    eos_token: str = ""
    add_bos: bool = False
    """The server puts the BOS token before the prompt (once: a template that writes it is not given a second)."""

    def render(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = (),
               add_generation_prompt: bool = True) -> str:
        """The prompt text of a chat request in wire form, as the server renders it; ChatTemplateUnavailable with
        the template's own words when it refuses the request (`raise_exception`) or fails."""
        try:
            return _compiled(self.source).render(
                messages=[_as_template_message(m) for m in messages], tools=list(tools) or None,
                add_generation_prompt=add_generation_prompt, bos_token=self.bos_token, eos_token=self.eos_token)
        except ChatTemplateUnavailable:
            raise
        except Exception as error:  # noqa: BLE001 - a template's failure, in its words
            raise ChatTemplateUnavailable(f"the chat template {self.name} failed: "
                                          f"{str(error).splitlines()[0] if str(error) else type(error).__name__}") from None


def _as_template_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A wire message as templates read it: tool-call arguments as objects, not JSON text."""
    out = dict(message)
    calls = out.get("tool_calls")
    if calls:
        out["tool_calls"] = [_with_object_arguments(call) for call in calls]
    return out


def _with_object_arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    function = dict(call.get("function") or {})
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            function["arguments"] = json.loads(arguments)
        except json.JSONDecodeError:
            pass
    return {**call, "function": function}


def _raise(message: str) -> None:
    raise ChatTemplateUnavailable(f"the chat template refuses the request: {message}")


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None,
            separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


@lru_cache(maxsize=16)
def _compiled(source: str) -> Any:
    from jinja2 import TemplateSyntaxError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                extensions=["jinja2.ext.loopcontrols"])
    environment.filters["tojson"] = _tojson
    environment.globals["raise_exception"] = _raise
    environment.globals["strftime_now"] = lambda fmt: _dt.datetime.now().strftime(fmt)
    try:
        return environment.from_string(source)
    except TemplateSyntaxError as error:
        raise ChatTemplateUnavailable(f"the chat template is not valid Jinja (line {error.lineno}: "
                                      f"{error.message})") from None


def _token_text(value: Any) -> str:
    """A `tokenizer_config.json` special token: a string, or `{"content": …}`."""
    if isinstance(value, Mapping):
        value = value.get("content")
    return value if isinstance(value, str) else ""


def _from_tokenizer_config(data: Any, name: str) -> ChatTemplate:
    if not isinstance(data, Mapping):
        raise ChatTemplateUnavailable(f"{name} is not a JSON object")
    template = data.get("chat_template")
    if isinstance(template, list):  # named templates: `default` (and `tool_use`, which needs tools to pick)
        named = {str(t.get("name")): t.get("template") for t in template if isinstance(t, Mapping)}
        template = named.get("tool_use") or named.get("default")
    if not isinstance(template, str) or not template:
        raise ChatTemplateUnavailable(f"{name} has no `chat_template`")
    return ChatTemplate(template, name, _token_text(data.get("bos_token")), _token_text(data.get("eos_token")),
                        bool(data.get("add_bos_token", False)))


def _from_gguf(metadata: Mapping[str, Any], name: str) -> ChatTemplate:
    template = metadata.get("tokenizer.chat_template")
    if not isinstance(template, str) or not template:
        raise ChatTemplateUnavailable(f"{name} carries no chat template (`tokenizer.chat_template`)")
    tokens = metadata.get("tokenizer.ggml.tokens") or []

    def token(key: str) -> str:
        index = metadata.get(key)
        return tokens[index] if isinstance(index, int) and 0 <= index < len(tokens) else ""

    return ChatTemplate(template, name, token("tokenizer.ggml.bos_token_id"), token("tokenizer.ggml.eos_token_id"),
                        bool(metadata.get("tokenizer.ggml.add_bos_token", False)))


def load_chat_template(path: str, root: str | None = None) -> ChatTemplate:
    """The chat template in a Jinja file, a `tokenizer_config.json` or a GGUF file (see the module)."""
    name = os.path.basename(path)
    if path.endswith(".gguf"):
        return _from_gguf(cached_gguf_metadata(path, root), name)
    try:
        raw = paths.read_bytes(path, root=root, limit=MAX_TEMPLATE_BYTES)
    except paths.FileRefused as refused:
        raise ChatTemplateUnavailable(f"{name}: {refused}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ChatTemplateUnavailable(f"{name} is not UTF-8 text") from None
    if path.endswith(".json"):
        try:
            return _from_tokenizer_config(json.loads(text), name)
        except json.JSONDecodeError as error:
            raise ChatTemplateUnavailable(f"{name} is not JSON ({error.msg} on line {error.lineno})") from None
    _compiled(text)  # a syntax error is said now, not at the first count
    return ChatTemplate(text, name)


# --------------------------------------------------------------------------------------------------
# The tokenizer a GGUF file carries

_GPT2 = ("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",)
_LLAMA3 = ("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?"
           "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",)
_QWEN2 = ("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?"
          "[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",)
_SMOLLM = ("\\p{N}", *_GPT2)
PRE_TOKENIZERS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("gpt-2", "gpt2", "phi-2", "olmo", "mpt", "jais", "roberta-bpe", "exaone4"), _GPT2),
    **dict.fromkeys(("llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral", "dbrx", "smaug-bpe"), _LLAMA3),
    **dict.fromkeys(("qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"), _QWEN2),
    **dict.fromkeys(("smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b"), _SMOLLM),
}
"""The splitting llama.cpp applies before byte-level BPE, by the GGUF's `tokenizer.ggml.pre` (its
`llm_tokenizer_bpe`'s expressions, applied one after another)."""
IGNORES_MERGES = frozenset(("llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral"))
CONTROL = 3
"""`tokenizer.ggml.token_type` of a control token (`<|im_start|>`): matched whole in a prompt."""


def gguf_tokenizer(path: str, root: str | None = None) -> tuple[Any, str | None]:
    """A `tokenizers.Tokenizer` built from the vocabulary a GGUF file carries (byte-level BPE only), and a note
    when its pre-tokenizer is not one known here (then GPT-2's splitting is used: counts may differ a little)."""
    try:
        from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers
    except ImportError:
        raise ChatTemplateUnavailable("the package 'tokenizers' is not installed") from None
    name = os.path.basename(path)
    metadata = cached_gguf_metadata(path, root)
    kind = metadata.get("tokenizer.ggml.model")
    if kind != "gpt2":
        raise ChatTemplateUnavailable(f"{name} has a {kind!r} tokenizer; only byte-level BPE (`gpt2`) vocabularies "
                                      "are read from a GGUF file: name the model's tokenizer.json in `tokenizer`")
    tokens = list(metadata.get("tokenizer.ggml.tokens") or ())
    merges = [tuple(m.split(" ", 1)) for m in metadata.get("tokenizer.ggml.merges") or () if " " in m]
    pre = str(metadata.get("tokenizer.ggml.pre") or "default")
    expressions = PRE_TOKENIZERS.get(pre)
    note = None if expressions is not None else (
        f"{name}'s pre-tokenizer {pre!r} is not known here: its text is split as GPT-2's, so counts may differ a "
        "little from the server's")
    model = models.BPE(vocab={token: index for index, token in enumerate(tokens)}, merges=merges,
                       ignore_merges=pre in IGNORES_MERGES)
    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(expression), behavior="isolated") for expression in expressions or _GPT2]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    types = metadata.get("tokenizer.ggml.token_type") or []
    control = [tokens[i] for i, kind in enumerate(types) if kind == CONTROL and i < len(tokens)]
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in control])
    return tokenizer, note


__all__ = ["ChatTemplate", "ChatTemplateUnavailable", "gguf_metadata", "gguf_tokenizer", "load_chat_template"]
