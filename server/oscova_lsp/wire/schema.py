"""The JSON Schema of every wire model, in one document (`oscova-lsp schema --wire`): the VS Code extension
generates its TypeScript types from it (`vscode-client/scripts/generate-schema.mjs`), so a field renamed here fails
the extension's type check until the extension reads the new name."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, models_json_schema

from . import commands, events, reports
from .model import Arguments, WireModel


class _Untitled(GenerateJsonSchema):
    """No title on a field: a generator would make each one a type of its own."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def wire_models() -> list[type[BaseModel]]:
    """Every model of the package, events first, in the order the modules declare them."""
    found: list[type[BaseModel]] = [events.RunEvent]
    for module in (events, commands, reports):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, WireModel) and value.__module__ == module.__name__ \
                    and value not in found and value is not events.RunEventBase:
                found.append(value)
    return found


def wire_json_schema() -> dict[str, Any]:
    """`{title, $defs}`: a definition per model, named by its class."""
    models = wire_models()
    modes: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (m, "validation" if issubclass(m, Arguments) else "serialization") for m in models]
    _, schema = models_json_schema(modes, title="OscovaWire", schema_generator=_Untitled)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "OscovaWire",
            "description": "The messages of oscova-lsp: run events, the oscova.* commands' arguments and answers, "
                           "the JSON reports.", **schema}
