"""A stop's data as DAP variables: scopes of named entries, containers opened by reference, edits in place.

An `Entry` holds a live value (a dict or list of the request about to be sent, a tool call's arguments) and,
when it may be edited, where an edit lands (`assign`) and its path (recorded in the transcript). Children of
an editable dict or list are editable: setting one writes into the very object the run sends. Values are
shown as JSON; an edit is read as JSON, and for a text value, text that is not JSON is taken as it is.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]
EditListener = Callable[["Entry", Any, Any], None]
"""Told of each edit: the entry, its value before, its value after."""


class EditRefused(ValueError):
    """An edit that cannot be made; the message says why (the client shows it)."""


@dataclass(slots=True)
class Entry:
    name: str
    value: Any
    assign: Callable[[Any], None] | None = None
    """Sets the value where the run reads it; None: read-only."""
    path: Path = ()
    scope: str = ""
    """The scope the entry belongs to (`request`, `arguments`…), for the transcript's edit record."""


def shown(value: Any) -> str:
    if isinstance(value, dict):
        return "{…}" if value else "{}"
    if isinstance(value, list):
        return f"[{len(value)}]"
    return json.dumps(value, ensure_ascii=False, default=str)


def _type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


def parse_edit(text: str, was: Any) -> Any:
    """The new value typed as `text`: JSON, or for a text value, the text itself when it is not JSON."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        if isinstance(was, str) or was is None:
            return text
        raise EditRefused(f"{text[:60]!r} is not a JSON value; type one (a text value takes plain text)") from None
    if isinstance(was, str) and not isinstance(value, str):
        return text  # `42` typed for a text value is the text "42"
    return value


class Variables:
    """The variable references of one stop (they die when the run resumes)."""

    def __init__(self, on_edit: EditListener) -> None:
        self._on_edit = on_edit
        self._containers: dict[int, list[Entry] | Entry] = {}
        """A scope's entries, or the dict or list entry whose children a reference opens (read live, so an
        edit made through another name shows)."""
        self._by_value: dict[int, int] = {}

    def scope(self, entries: list[Entry] | Entry) -> int:
        reference = len(self._containers) + 1
        self._containers[reference] = entries
        return reference

    def _reference(self, entry: Entry) -> int:
        """The reference that opens a dict or list entry (one per value, so a client's paths stay stable)."""
        if not isinstance(entry.value, dict | list) or not entry.value:
            return 0
        key = id(entry.value)
        if key not in self._by_value:
            self._by_value[key] = self.scope(entry)
        return self._by_value[key]

    @staticmethod
    def _children(entry: Entry) -> list[Entry]:
        container = entry.value
        items = container.items() if isinstance(container, dict) else enumerate(container)
        editable = entry.assign is not None
        out = []
        for key, value in items:
            assign = (lambda v, c=container, k=key: c.__setitem__(k, v)) if editable else None
            out.append(Entry(str(key), value, assign, (*entry.path, key), entry.scope))
        return out

    def entries(self, reference: int) -> list[Entry]:
        found = self._containers.get(reference)
        if found is None:
            raise EditRefused(f"No variables have the reference {reference} (the run has moved on, or it never did)")
        return self._children(found) if isinstance(found, Entry) else found

    def listing(self, reference: int) -> list[dict[str, Any]]:
        return [self.describe(entry) for entry in self.entries(reference)]

    def describe(self, entry: Entry) -> dict[str, Any]:
        out: dict[str, Any] = {"name": entry.name, "value": shown(entry.value), "type": _type(entry.value),
                               "variablesReference": self._reference(entry)}
        if entry.assign is None:
            out["presentationHint"] = {"attributes": ["readOnly"]}
        if entry.path:
            out["evaluateName"] = ".".join([entry.scope, *map(str, entry.path)])
        return out

    def set(self, reference: int, name: str, text: str) -> Entry:
        """Edits the entry `name` of a container; returns it with its new value."""
        for entry in self.entries(reference):
            if entry.name == name:
                return self.assign(entry, text)
        raise EditRefused(f"There is no variable {name!r} here")

    def assign(self, entry: Entry, text: str) -> Entry:
        if entry.assign is None:
            raise EditRefused(f"{entry.name} cannot be edited here: a stop edits what is about to be sent (the "
                              "request at a model stop, the arguments at a tool stop)")
        was = entry.value
        value = parse_edit(text, was)
        entry.assign(value)
        entry.value = value
        self._on_edit(entry, was, value)
        return entry

    def find(self, expression: str) -> Entry:
        """The entry an `evaluateName` names (`request.messages.0.content`), for `setExpression`."""
        scope, *steps = expression.strip().split(".")
        missing = EditRefused(f"{expression.strip()[:80]!r} names nothing at this stop (use a variable's evaluateName, "
                              "such as request.messages.0.content)")
        if not steps:
            raise missing
        roots = [e for entries in self._containers.values() if isinstance(entries, list) for e in entries
                 if e.scope == scope and len(e.path) == 1 and str(e.path[0]) == steps[0]]
        if not roots:
            raise missing
        entry = roots[0]
        for step in steps[1:]:
            if not isinstance(entry.value, dict | list):
                raise missing
            entry = next((child for child in self._children(entry) if child.name == step), None)  # type: ignore[assignment]
            if entry is None:
                raise missing
        return entry
