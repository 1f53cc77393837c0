"""Plain results of the editor features, converted to LSP types by `oscova_lsp.lsp.convert`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..analysis.diagnostics import TextEdit
from ..analysis.text import Position, Range


class ItemKind(Enum):
    """What a completion item or a symbol stands for (mapped onto LSP kinds by the protocol layer)."""

    VARIABLE = "variable"
    PROPERTY = "property"
    VALUE = "value"
    AGENT = "agent"
    TOOL = "tool"
    PROVIDER = "provider"
    MODEL = "model"
    FILE = "file"
    KEYWORD = "keyword"
    FUNCTION = "function"
    MODULE = "module"
    TABLE = "table"


@dataclass(frozen=True, slots=True)
class Location:
    path: str
    range: Range


@dataclass(frozen=True, slots=True)
class CompletionItem:
    label: str
    kind: ItemKind
    detail: str | None = None
    documentation: str | None = None
    """Markdown."""
    insert_text: str | None = None
    replace: Range | None = None
    """The range the item replaces (the partial word typed so far); None: the client decides."""
    sort_text: str | None = None


@dataclass(frozen=True, slots=True)
class Hover:
    markdown: str
    range: Range | None = None


@dataclass(slots=True)
class Symbol:
    name: str
    kind: ItemKind
    range: Range
    selection_range: Range
    detail: str | None = None
    children: list[Symbol] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class WorkspaceSymbol:
    name: str
    kind: ItemKind
    location: Location
    container: str | None = None


@dataclass(frozen=True, slots=True)
class InlayHint:
    position: Position
    label: str
    tooltip: str | None = None


@dataclass(frozen=True, slots=True)
class DocumentLink:
    range: Range
    target: str
    tooltip: str | None = None


@dataclass(frozen=True, slots=True)
class CodeAction:
    title: str
    edits: tuple[TextEdit, ...]
    diagnostic_code: str
    diagnostic_range: Range
    preferred: bool = False


class RenameError(ValueError):
    """A rename that cannot be done; the message is shown to the user."""
