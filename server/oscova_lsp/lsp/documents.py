"""The open documents' texts: `didOpen`, `didChange` and `didClose` applied in one place.

A document within the analysis limit lives in pygls's workspace store, which applies incremental edits in
the negotiated position encoding; one over it lives in a `LargeText`, since pygls's document re-joins and
re-splits the whole text on every edit. A document moves between the two when an edit takes it across the
limit. The handlers (`handlers.did_open`, `did_change`, `did_close`) call these methods and read the text
back from here; pygls's own built-in handlers for the three notifications write nothing
(`protocol.OscovaProtocol`).
"""

from __future__ import annotations

from collections.abc import Callable

from lsprotocol import types as lsp
from pygls.workspace import Workspace

from ..analysis.files import MAX_FILE_BYTES
from .large_text import LargeText


class OpenDocuments:
    """The text of every open document, by URI."""

    def __init__(self, store: Callable[[], Workspace]) -> None:
        self._store = store
        """pygls's workspace (made at `initialize`), which keeps the documents within the limit."""
        self._large: dict[str, LargeText] = {}
        """The documents over the limit."""

    def open(self, document: lsp.TextDocumentItem) -> None:
        store = self._store()
        if len(document.text) > MAX_FILE_BYTES:
            self._large[document.uri] = LargeText(document.text, document.language_id)
            store.remove_text_document(document.uri)
        else:
            self._large.pop(document.uri, None)
            store.put_text_document(document)

    def change(self, params: lsp.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        store = self._store()
        large = self._large.get(uri)
        if large is None:
            for change in params.content_changes:
                store.update_text_document(params.text_document, change)
            document = store.get_text_document(uri)
            if len(document.source) > MAX_FILE_BYTES:  # grew too large: its text moves (once)
                self._large[uri] = LargeText(document.source, document.language_id or "")
                store.remove_text_document(uri)
            return
        for change in params.content_changes:
            if isinstance(change, lsp.TextDocumentContentChangePartial):
                large.replace((change.range.start.line, change.range.start.character),
                              (change.range.end.line, change.range.end.character), change.text)
            else:
                large.replace(None, None, change.text)
        if len(large) <= MAX_FILE_BYTES:  # small enough again: back to pygls's document
            del self._large[uri]
            store.put_text_document(lsp.TextDocumentItem(
                uri=uri, language_id=large.language_id, version=params.text_document.version, text=large.text()))

    def close(self, uri: str) -> None:
        self._large.pop(uri, None)
        self._store().remove_text_document(uri)

    def is_large(self, uri: str) -> bool:
        """Whether the document is over the analysis limit (its text is joined only when asked for)."""
        return uri in self._large

    def text(self, uri: str) -> str:
        """The document's text now."""
        large = self._large.get(uri)
        return large.text() if large is not None else self._store().get_text_document(uri).source
