"""The file against its model: a value of the wrong type (OSC002), a key the format does not have (OSC003).

`files.py` validates each definition and host configuration here while parsing it, so a file's validated
model and its schema findings come from one pass.
"""

from __future__ import annotations

import copy
from typing import Any

from oscova_runtime.definition import AgentDefinition
from pydantic import BaseModel, ValidationError

from ..diagnostics import Fix, Problem, TextEdit
from ..suggest import did_you_mean
from ..text import Range
from ..toml_source import TomlDocument
from ..yaml_source import Path, YamlDocument
from .rule import E, Rule, W

SCHEMA = Rule(
    "OSC002", E, "definitions, host configuration, evaluations", "Schema violation",
    """A value has the wrong type, a required key such as `id` is missing, an enum value is not one of
its choices, or `instructions` and `instructions_file` are both set. The agent cannot be built from this
definition. `oscova-lsp schema` prints the JSON Schema the definition is validated against. In `[lint]`, a code
that names no rule (`E501`, `OSC999`) is one too, reported whatever `select` and `ignore` say: a typo must
not pass for a clean check.""")

MISSING_KEY = "missing required key"
"""How the message of a missing required key begins (a file mid-edit drops these: its keys may be on the
broken lines)."""


def not_a_mapping(doc: YamlDocument, what: str = "an agent definition") -> Problem:
    return SCHEMA.problem(doc.best_range(()), f"{what} must be a YAML mapping")


UNKNOWN_KEY = Rule(
    "OSC003", W, "definitions, host configuration, evaluations", "Unknown key",
    """The key is not part of the format, so it is ignored. It is most often a typo of a known key.""",
    "rename it to the closest known key")


def _unknown_key(path: str, doc: YamlDocument | TomlDocument, where: Path, key: str, known: list[str]) -> Problem:
    rng = doc.key_range(where) or doc.best_range(where)
    close = did_you_mean(key, known)
    fix = Fix(f"Rename to `{close.name}`", (TextEdit(path, rng, close.name),)) if close else None
    return UNKNOWN_KEY.problem(rng, f"unknown key `{key}`" + (close.words if close else ""), fix=fix)


def validate(path: str, model: type[BaseModel], data: dict[str, Any], doc: YamlDocument | TomlDocument,
             problems: list[Problem], known_keys: list[str], prefix: Path = (),
             index_map: dict[int, int] | None = None) -> Any:
    """Validates `data` (the file at `path`); reports OSC002/OSC003; retries without the faulty keys so the rest
    is checked."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    reported: set[Path] = set()
    drop: list[tuple[Any, ...]] = []
    for error in errors:
        loc = tuple(error["loc"])
        where = _document_path(loc, doc, prefix, index_map or {})
        drop.append(loc)
        if where in reported:
            continue
        reported.add(where)
        if error["type"] == "extra_forbidden":
            problems.append(_unknown_key(path, doc, where, str(loc[-1]), _known_keys_at(model, loc[:-1]) or known_keys))
        else:
            problems.append(SCHEMA.problem(_error_range(error, where, doc, prefix), _error_message(error, loc)))
    if any(loc[:1] == ("id",) for loc in drop) and model is AgentDefinition:
        return None
    return _validate_without(model, data, drop)


def _validate_without(model: type[BaseModel], data: dict[str, Any], drop: list[tuple[Any, ...]]) -> Any:
    """Validates again with each faulty value removed, so one bad key does not hide the rest of the file."""
    lenient: Any = copy.deepcopy(data)
    for _ in range(8):
        for loc in drop:
            _remove_path(lenient, loc)
        try:
            return model.model_validate(lenient)
        except ValidationError as exc:
            drop = [tuple(e["loc"]) for e in exc.errors(include_url=False)]
        except (TypeError, ValueError):
            return None
    return None


def _remove_path(data: Any, loc: tuple[Any, ...]) -> None:
    """Removes the value at a pydantic location (union tags skipped); a model-level error removes nothing."""
    parent = data
    keys = [part for part in loc if isinstance(part, int) or not _is_union_tag(part)]
    if not keys:
        # The one model-level rule: `instructions` with `instructions_file`; keep the inline text.
        if isinstance(data, dict):
            data.pop("instructions_file", None)
        return
    for part in keys[:-1]:
        try:
            parent = parent[part]
        except (KeyError, IndexError, TypeError):
            return
    last = keys[-1]
    if isinstance(parent, dict):
        parent.pop(last, None)
    elif isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
        parent.pop(last)


def _is_union_tag(part: Any) -> bool:
    return isinstance(part, str) and (part in ("str", "ProviderEntry", "bool", "CompactionSettings") or "[" in part)


def _known_keys_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    current: Any = model
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel) and isinstance(part, str):
            field_info = current.model_fields.get(part)
            if field_info is None:
                return []
            annotation = field_info.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                current = annotation
                continue
            args = getattr(annotation, "__args__", ())
            models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
            current = models[-1] if models else None
        elif isinstance(part, str) and current is not None and not isinstance(current, type):
            return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or name for name, f in current.model_fields.items()]
    return []


def _document_path(loc: tuple[Any, ...], doc: YamlDocument | TomlDocument, prefix: Path,
                   index_map: dict[int, int]) -> Path:
    """Pydantic's error location as a document path: union tags dropped, list indices remapped."""
    path: list[str | int] = list(prefix)
    for i, part in enumerate(loc):
        if isinstance(part, int):
            if i == 1 and loc[0] == "context_providers":
                part = index_map.get(part, part)
            path.append(part)
        elif (*path, part) in doc.spans:
            path.append(part)
        elif _is_union_tag(part):
            continue
        else:
            path.append(part)
    return tuple(path)


def _error_range(error: Any, path: Path, doc: YamlDocument | TomlDocument, prefix: Path) -> Range:
    if error["type"] == "missing":
        parent = path[:-1]
        if len(parent) > len(prefix):
            return doc.key_range(parent) or doc.best_range(parent)
        first = next((p for p in doc.spans if len(p) == len(prefix) + 1 and p[: len(prefix)] == prefix), None)
        if first is not None:
            return doc.key_range(first) or doc.best_range(first)
        return doc.best_range(prefix)
    if not error["loc"]:
        # A model-level rule: point at `instructions_file`, which is what conflicts.
        return doc.key_range((*prefix, "instructions_file")) or doc.best_range(prefix)
    return doc.best_range(path)


def _error_message(error: Any, loc: tuple[Any, ...]) -> str:
    where = ".".join(str(p) for p in loc if not (isinstance(p, str) and (p in ("str", "ProviderEntry") or "[" in p)))
    msg = str(error["msg"])
    msg = msg.removeprefix("Value error, ")
    if error["type"] == "missing":
        return f"{MISSING_KEY} `{loc[-1]}`"
    if "context_providers" in loc and error["type"] in ("string_type", "model_type", "model_attributes_type"):
        return f"`{where}`: a provider entry is a type name or a mapping with `type`"
    if where:
        return f"`{where}`: {msg[0].lower() + msg[1:] if msg else msg}"
    return msg
