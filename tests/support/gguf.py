"""A GGUF file's header and metadata written for tests (no tensors): what `oscova_runtime.chat_templates` reads
from a model file, without a 100 MB model in the repository."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

UINT32, INT32, BOOL, STRING, ARRAY = 4, 5, 7, 8, 9


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def _value(value: Any) -> tuple[int, bytes]:
    if isinstance(value, bool):
        return BOOL, struct.pack("<?", value)
    if isinstance(value, int):
        return UINT32, struct.pack("<I", value)
    if isinstance(value, str):
        return STRING, _string(value)
    if isinstance(value, list):
        if all(isinstance(item, str) for item in value):
            return ARRAY, struct.pack("<IQ", STRING, len(value)) + b"".join(_string(item) for item in value)
        return ARRAY, struct.pack("<IQ", INT32, len(value)) + b"".join(struct.pack("<i", item) for item in value)
    raise TypeError(type(value))


def write_gguf(path: Path, metadata: dict[str, Any], *, tail: bytes = b"\0" * 64) -> Path:
    """Version 3, no tensors, then `tail` (where a model's tensor data would start)."""
    body = b"".join(_string(key) + struct.pack("<I", kind) + data
                    for key, (kind, data) in ((k, _value(v)) for k, v in metadata.items()))
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(metadata)) + body + tail)
    return path


def gguf_of_tokenizer_json(path: Path, tokenizer_json: Path, *, template: str, pre: str = "gpt-2",
                           add_bos: bool = False) -> Path:
    """A GGUF holding the vocabulary and merges of a byte-level BPE `tokenizer.json`, its added tokens as control
    tokens, and `template` as its chat template."""
    data = json.loads(tokenizer_json.read_text())
    vocab = data["model"]["vocab"]
    tokens = [token for token, _ in sorted(vocab.items(), key=lambda pair: pair[1])]
    merges = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    special = {added["content"] for added in data.get("added_tokens", ()) if added.get("special")}
    return write_gguf(path, {
        "general.architecture": "llama",
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": pre,
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": [3 if token in special else 1 for token in tokens],
        "tokenizer.ggml.merges": merges,
        "tokenizer.ggml.bos_token_id": tokens.index("<|im_start|>"),
        "tokenizer.ggml.eos_token_id": tokens.index("<|im_end|>"),
        "tokenizer.ggml.add_bos_token": add_bos,
        "tokenizer.chat_template": template,
    })
