"""Plain engine and ide values to lsprotocol types, and back, for the answers to requests. A diagnostic's shape is
`wire_json`'s alone: `diagnostic` reads it into lsprotocol's type."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lsprotocol import types as lsp
from pygls.protocol import default_converter

from ..analysis import diagnostics as plain
from ..analysis.text import Position, Range
from ..ide import model
from . import wire_json
from .wire_json import uri

CONVERTER = default_converter()
"""lsprotocol's converter, as pygls builds it."""

COMPLETION_KIND = {
    model.ItemKind.VARIABLE: lsp.CompletionItemKind.Variable,
    model.ItemKind.PROPERTY: lsp.CompletionItemKind.Property,
    model.ItemKind.VALUE: lsp.CompletionItemKind.Value,
    model.ItemKind.AGENT: lsp.CompletionItemKind.Reference,
    model.ItemKind.TOOL: lsp.CompletionItemKind.Function,
    model.ItemKind.PROVIDER: lsp.CompletionItemKind.Class,
    model.ItemKind.MODEL: lsp.CompletionItemKind.EnumMember,
    model.ItemKind.FILE: lsp.CompletionItemKind.File,
    model.ItemKind.KEYWORD: lsp.CompletionItemKind.Keyword,
    model.ItemKind.FUNCTION: lsp.CompletionItemKind.Function,
    model.ItemKind.MODULE: lsp.CompletionItemKind.Module,
    model.ItemKind.TABLE: lsp.CompletionItemKind.Struct,
}

SYMBOL_KIND = {
    model.ItemKind.VARIABLE: lsp.SymbolKind.Variable,
    model.ItemKind.PROPERTY: lsp.SymbolKind.Property,
    model.ItemKind.VALUE: lsp.SymbolKind.String,
    model.ItemKind.AGENT: lsp.SymbolKind.Class,
    model.ItemKind.TOOL: lsp.SymbolKind.Function,
    model.ItemKind.PROVIDER: lsp.SymbolKind.Class,
    model.ItemKind.MODEL: lsp.SymbolKind.EnumMember,
    model.ItemKind.FILE: lsp.SymbolKind.File,
    model.ItemKind.KEYWORD: lsp.SymbolKind.Key,
    model.ItemKind.FUNCTION: lsp.SymbolKind.Function,
    model.ItemKind.MODULE: lsp.SymbolKind.Module,
    model.ItemKind.TABLE: lsp.SymbolKind.Namespace,
}


def position(pos: Position) -> lsp.Position:
    return lsp.Position(line=pos.line, character=pos.character)


def range_(rng: Range) -> lsp.Range:
    return lsp.Range(start=position(rng.start), end=position(rng.end))


def to_position(pos: lsp.Position) -> Position:
    return Position(max(pos.line, 0), max(pos.character, 0))


def to_range(rng: lsp.Range) -> Range:
    return Range(to_position(rng.start), to_position(rng.end))


def location(loc: model.Location) -> lsp.Location:
    return lsp.Location(uri=uri(loc.path), range=range_(loc.range))


def diagnostic(diag: plain.Diagnostic, related_support: bool = True) -> lsp.Diagnostic:
    return CONVERTER.structure(wire_json.diagnostic(diag, related_support), lsp.Diagnostic)


def markup(text: str, formats: Sequence[lsp.MarkupKind] | None) -> lsp.MarkupContent:
    """Markdown where the client takes it, else the same words as plain text."""
    if formats is None or lsp.MarkupKind.Markdown in formats:
        return lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text)
    return lsp.MarkupContent(kind=lsp.MarkupKind.PlainText, value=text.replace("`", "").replace("**", ""))


def completion_item(item: model.CompletionItem, doc_formats: Sequence[lsp.MarkupKind] | None) -> lsp.CompletionItem:
    new_text = item.insert_text or item.label
    edit = lsp.TextEdit(range=range_(item.replace), new_text=new_text) if item.replace is not None else None
    return lsp.CompletionItem(
        label=item.label, kind=COMPLETION_KIND[item.kind], detail=item.detail,
        documentation=markup(item.documentation, doc_formats) if item.documentation else None,
        text_edit=edit, insert_text=None if edit else new_text, sort_text=item.sort_text,
        filter_text=item.label,
    )


def symbol(sym: model.Symbol) -> lsp.DocumentSymbol:
    selection = sym.selection_range
    if not (sym.range.start <= selection.start and selection.end <= sym.range.end):
        selection = Range(sym.range.start, sym.range.start)
    return lsp.DocumentSymbol(
        name=sym.name or "?", kind=SYMBOL_KIND[sym.kind], range=range_(sym.range), selection_range=range_(selection),
        detail=sym.detail, children=[symbol(c) for c in sym.children] or None,
    )


def flat_symbols(symbols: Iterable[model.Symbol], path: str, container: str | None = None) -> list[lsp.SymbolInformation]:
    out = []
    for sym in symbols:
        out.append(lsp.SymbolInformation(name=sym.name or "?", kind=SYMBOL_KIND[sym.kind],
                                         location=lsp.Location(uri=uri(path), range=range_(sym.range)),
                                         container_name=container))
        out += flat_symbols(sym.children, path, sym.name)
    return out


def workspace_edit(edits: Iterable[plain.TextEdit], versions: dict[str, int | None],
                   document_changes: bool) -> lsp.WorkspaceEdit:
    by_path: dict[str, list[lsp.TextEdit]] = {}
    for edit in edits:
        by_path.setdefault(edit.path, []).append(lsp.TextEdit(range=range_(edit.range), new_text=edit.new_text))
    if document_changes:
        return lsp.WorkspaceEdit(document_changes=[
            lsp.TextDocumentEdit(
                text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri(path), version=versions.get(path)),
                edits=list(items))
            for path, items in sorted(by_path.items())])
    return lsp.WorkspaceEdit(changes={uri(path): items for path, items in sorted(by_path.items())})
