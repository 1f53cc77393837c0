"""The two kinds of wire model: what the server writes (`WireModel`) and what it is sent (`Arguments`).

Both are snake_case in Python and camelCase on the wire (`to_camel`), and read either spelling. A field of a
`WireModel` is always written unless it is declared with `exclude_if` (`Field(default=None, exclude_if=is_none)`,
`Field(default=False, exclude_if=is_false)`): then it is left out while it holds that value, as the events and
reports have always left out what a run did not have. The JSON Schema says the same (`written_fields`): an always
written field is required, a left-out one optional, so the TypeScript generated from it tells the two apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel


def is_none(value: object) -> bool:
    return value is None


def is_false(value: object) -> bool:
    return value is False


def is_true(value: object) -> bool:
    return value is True


def _drop_null(schema: dict[str, Any]) -> None:
    """A field left out when None is never written as null: its schema without the null branch."""
    branches = schema.get("anyOf")
    if isinstance(branches, list) and {"type": "null"} in branches:
        kept = [b for b in branches if b != {"type": "null"}]
        del schema["anyOf"]
        if len(kept) == 1:
            schema.update(kept[0])
        else:
            schema["anyOf"] = kept


def written_fields(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """A `WireModel`'s schema as it is written: the fields always written are required (those with `exclude_if`
    are not), and a field left out when None is not nullable. Defaults are the writer's business, not the
    reader's: they are left out."""
    properties = schema.get("properties", {})
    required = []
    for name, field in model.model_fields.items():
        key = field.serialization_alias or field.alias or name
        prop = properties.get(key)
        if prop is None:
            continue
        prop.pop("default", None)
        if field.exclude_if is None:
            required.append(key)
        elif field.default is None:
            _drop_null(prop)
    schema["required"] = required


class WireModel(BaseModel):
    """A message the server writes: an event, a command's result, a report. Read back (from the run host, the
    review's process) it must be exactly that: a key the model does not know is an error, not a loss."""

    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True, extra="forbid", use_attribute_docstrings=True,
                              json_schema_extra=written_fields, defer_build=True)

    def wire(self) -> dict[str, Any]:
        """The JSON object, camelCase."""
        return self.model_dump(mode="json", by_alias=True)


def _sent_fields(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """An `Arguments` schema as a client sends it: what has a default may be left out; no defaults shown."""
    for prop in schema.get("properties", {}).values():
        prop.pop("default", None)


@dataclass(frozen=True, slots=True)
class Expect:
    """What an argument must be, in the words of the error that refuses another value (`Annotated` metadata)."""

    words: str


class Arguments(WireModel):
    """The argument object of an `oscova.*` command, as a client sends it: strict (a number is not a string, nor
    `"true"` a boolean); keys it does not know are ignored."""

    model_config = ConfigDict(strict=True, extra="ignore", json_schema_extra=_sent_fields)

    @classmethod
    def refusal(cls, command: str, error: ValidationError) -> str:
        """The first problem of `error` in a sentence: "oscova.runAgent needs `agentId` (a non-empty string)",
        "oscova.runTest: `update` must be true or false"."""
        problem = error.errors()[0]
        loc = problem["loc"]
        key = str(loc[0]) if loc else ""
        field = next((f for name, f in cls.model_fields.items() if key in (name, f.alias)), None)
        words = next((m.words for m in field.metadata if isinstance(m, Expect)), None) if field else None
        words = words or "a string"
        if problem["type"] == "missing":
            return f"{command} needs `{key}` ({words})"
        return f"{command}: `{key}` must be {words}"
