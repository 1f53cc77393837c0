"""Every LSP handler, each a small function, registered by `create_server` from the one feature table
(`capabilities.FEATURES`); the `oscova.*` commands are `runs.py`'s (`command_handlers`), registered here too.

A request about a document goes through `document`: a snapshot of the host (every edit taken so far), the
parsed file and its path. Requests about a root still being read wait for it first
(`answer_when_ready`), so no answer comes from a partial index; requests about a ready root are answered at
once, in the order they came. A request still waiting after the bound (`READY_TIMEOUT`) is refused:
ContentModified, or ServerCancelled with `retriggerRequest` for a diagnostics pull.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcContentModified, JsonRpcException, JsonRpcInvalidParams

from ..analysis.files import DefinitionFile, EvalFile, ParsedFile
from ..analysis.host import Snapshot
from ..analysis.workspace import Workspace
from ..ide import actions, completion, hints, hover, navigation, symbols
from ..ide.model import RenameError
from . import convert, wire_json
from .capabilities import FEATURES
from .eval_commands import eval_commands, eval_lenses
from .runs import code_lenses, command_handlers, workspace_trust
from .server import OscovaServer
from .settings import Settings

Result = TypeVar("Result")
SERVER_CANCELLED = int(lsp.LSPErrorCodes.ServerCancelled)


@dataclass(frozen=True, slots=True)
class Document:
    """A document as a request sees it: one snapshot, the file's workspace and its parsed form."""

    snapshot: Snapshot
    workspace: Workspace
    parsed: ParsedFile
    path: str


def document(ls: OscovaServer, document_uri: str) -> Document | None:
    """The parsed file of a document in a fresh snapshot (every edit taken so far in it); None for documents the
    analysis does not know."""
    path = wire_json.path_of(document_uri)
    if path is None:
        return None
    snapshot = ls.host.snapshot()
    found = snapshot.parsed(path)
    if found is None:
        return None
    return Document(snapshot, found[0].workspace, found[1], path)


def answer_when_ready(feature: Callable[[OscovaServer, Document, Any], Result]) -> Callable[..., Any]:
    """A document request's handler: waits (bounded) for the document's root to be read, then answers
    `feature(ls, document, params)` (None for unknown documents). A feature that is a generator itself yields
    to a coroutine the same way, after answering what it can from the snapshot.

    A generator handler (pygls runs it at once, up to its first `yield`): a request about a ready root is
    answered before the next message is read, exactly as a plain function would; only one about a root
    still being read yields to `OscovaServer.ready`."""

    @functools.wraps(feature)
    def handler(ls: OscovaServer, params: Any) -> Generator[Any, Any, Result | None]:
        path = wire_json.path_of(params.text_document.uri)
        if path is None:
            return None
        root = ls.host.root_of(path)
        if not ls.is_ready(root) and not (yield ls.ready, (root,), None):
            raise JsonRpcContentModified(ls.not_ready(root))  # the client asks again; never a partial answer
        found = document(ls, params.text_document.uri)
        if found is None:
            return None
        result = feature(ls, found, params)
        return (yield from result) if inspect.isgenerator(result) else result

    return handler


def _formats(ls: OscovaServer, *path: str) -> list[lsp.MarkupKind] | None:
    value = ls.caps(*path)
    return list(value) if value else None


def _workspace_edit(ls: OscovaServer, snapshot: Snapshot, edits: Iterable[Any]) -> lsp.WorkspaceEdit:
    document_changes = bool(ls.caps("workspace", "workspace_edit", "document_changes"))
    versions = {path: doc.version for path, doc in snapshot.documents.items()}
    return convert.workspace_edit(edits, versions, document_changes)


# ------------------------------------------------------------------------------------------- lifecycle


def initialize(ls: OscovaServer, params: lsp.InitializeParams) -> None:
    folders = [wire_json.path_of(f.uri) for f in params.workspace_folders or []]
    if not folders and params.root_uri:
        folders = [wire_json.path_of(params.root_uri)]
    elif not folders and params.root_path:
        folders = [params.root_path]
    ls.settings = Settings.parse(params.initialization_options)
    ls.runs.trusted, trust_problems = workspace_trust(params.initialization_options)
    ls.warn_settings(ls.settings.problems + trust_problems)
    ls.reset_host([f for f in folders if f], ls.settings.lint_options())
    ls.publisher.pull = params.capabilities.text_document is not None and \
        params.capabilities.text_document.diagnostic is not None
    ls.publisher.debounce = ls.settings.debounce
    ls.initial_options = params.initialization_options
    ls.client_pid = ls.client_pid or params.process_id


async def initialized(ls: OscovaServer, params: lsp.InitializedParams) -> None:
    if ls.client_pid:
        ls.spawn(ls.watch_client(ls.client_pid))
    ls.spawn(ls.register_watchers())
    await ls.load_settings()
    ls.spawn(ls.check_workspace())


def shutdown(ls: OscovaServer, params: Any) -> None:
    # Synchronous, so the answer precedes an `exit` sent right behind the request.
    ls.publisher.shutdown()
    ls.cancel_tasks()
    ls.runs.shutdown()


# ------------------------------------------------------------------------------------------- documents


def did_open(ls: OscovaServer, params: lsp.DidOpenTextDocumentParams) -> None:
    ls.documents.open(params.text_document)
    path = wire_json.path_of(params.text_document.uri)
    if path is None:
        return
    ls.publisher.opened(path, params.text_document.text, params.text_document.version)
    root = ls.host.root_of(path)
    loading = ls.loading(root)
    ls.root_ready(root)  # a root not asked for yet is read now: its reading looks at its open documents first
    ls.publisher.publish_pending(origin=path)
    if loading and ls.host.is_tracked(path):  # opened while its root is read: what it needs first
        ls.spawn(ls.look_first(root))


def did_change(ls: OscovaServer, params: lsp.DidChangeTextDocumentParams) -> None:
    uri, version = params.text_document.uri, params.text_document.version
    ls.documents.change(params)
    path = wire_json.path_of(uri)
    if path is None:
        return
    # A document over the limit that the analysis skipped as such stays skipped: only its version moves.
    if not ls.documents.is_large(uri) or not ls.host.still_skipped(path, version):
        ls.publisher.changed(path, ls.documents.text(uri), version)


def did_save(ls: OscovaServer, params: lsp.DidSaveTextDocumentParams) -> None:
    """A save changed the file on disk: the host re-reads it unless the editor has it open (its buffer is
    what was saved), and the runs evict what they built from it."""
    path = wire_json.path_of(params.text_document.uri)
    if path is None:
        return
    affected = ls.host.disk_changed(path, deleted=False)
    if affected:
        ls.publisher.invalidate(affected)
        ls.publisher.publish_pending()
    ls.runs.file_saved(path)


def did_close(ls: OscovaServer, params: lsp.DidCloseTextDocumentParams) -> None:
    ls.documents.close(params.text_document.uri)
    path = wire_json.path_of(params.text_document.uri)
    if path is not None:
        ls.publisher.closed(path)


def did_change_watched_files(ls: OscovaServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    affected: set[str] = set()
    for change in params.changes:
        path = wire_json.path_of(change.uri)
        if path is None:
            continue
        affected |= ls.host.disk_changed(path, change.type == lsp.FileChangeType.Deleted)
        ls.runs.file_saved(path)
    if affected:
        ls.publisher.invalidate(affected)
        ls.publisher.publish_pending()


async def did_change_configuration(ls: OscovaServer, params: lsp.DidChangeConfigurationParams) -> None:
    settings = params.settings
    pushed = settings.get("oscova") if isinstance(settings, dict) and isinstance(settings.get("oscova"), dict) \
        else None
    await ls.load_settings(pushed)


def did_change_folders(ls: OscovaServer, params: lsp.DidChangeWorkspaceFoldersParams) -> None:
    for folder in params.event.added:
        path = wire_json.path_of(folder.uri)
        root = ls.host.add_folder(path) if path else None
        if root is not None:
            ls.root_ready(root)


# ----------------------------------------------------------------------------------------- diagnostics


async def document_diagnostic(ls: OscovaServer, params: lsp.DocumentDiagnosticParams) -> Any:
    path = wire_json.path_of(params.text_document.uri)
    if path is None or not ls.host.is_tracked(path):
        return lsp.RelatedFullDocumentDiagnosticReport(items=[])
    root = ls.host.root_of(path)
    if not await ls.ready(root):  # the client pulls again (LSP `ServerCancelled` with `retriggerRequest`)
        raise JsonRpcException(ls.not_ready(root), code=SERVER_CANCELLED, data={"retriggerRequest": True})
    await ls.publisher.settled(path)
    found = ls.publisher.diagnostics(path)
    result_id = ls.publisher.result_id(path, found)
    if params.previous_result_id == result_id:
        return lsp.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    return lsp.RelatedFullDocumentDiagnosticReport(items=[convert.diagnostic(d) for d in found], result_id=result_id)


async def workspace_diagnostic(ls: OscovaServer, params: lsp.WorkspaceDiagnosticParams) -> Any:
    """Every file not open in the editor; held until something changes when nothing has."""
    await ls.checked.wait()
    previous = {p.uri: p.value for p in params.previous_result_ids}
    publisher = ls.publisher
    while True:
        items: list[Any] = []
        changed = False
        snapshot = ls.host.snapshot()
        for path in snapshot.all_files():
            if path in snapshot.documents:
                continue
            found = publisher.diagnostics(path, snapshot)
            result_id = publisher.result_id(path, found)
            uri = convert.uri(path)
            if previous.get(uri) == result_id:
                items.append(lsp.WorkspaceUnchangedDocumentDiagnosticReport(uri=uri, result_id=result_id, version=None))
            else:
                changed = True
                items.append(lsp.WorkspaceFullDocumentDiagnosticReport(
                    uri=uri, items=[convert.diagnostic(d) for d in found], result_id=result_id, version=None))
        del snapshot  # not held while waiting
        if changed or not previous:
            return lsp.WorkspaceDiagnosticReport(items=items)
        await publisher.wait_for_change()


# -------------------------------------------------------------------------------------------- features


@answer_when_ready
def on_completion(ls: OscovaServer, doc: Document, params: lsp.CompletionParams) -> lsp.CompletionList:
    result = completion.complete(doc.workspace, doc.parsed, convert.to_position(params.position))
    formats = _formats(ls, "text_document", "completion", "completion_item", "documentation_format")
    return lsp.CompletionList(is_incomplete=result.incomplete,
                              items=[convert.completion_item(i, formats) for i in result.items])


@answer_when_ready
def on_hover(ls: OscovaServer, doc: Document, params: lsp.HoverParams) -> Generator[Any, Any, lsp.Hover | None]:
    position = convert.to_position(params.position)
    result = hover.hover(doc.workspace, doc.parsed, position, ls.publisher.diagnostics(doc.path, doc.snapshot))
    if result is None:
        return None
    markdown = result.markdown
    asked = hover.token_question(doc.workspace, doc.parsed, position)
    if asked is not None:  # the figures come from the preview, kept per agent (`token_figures.py`)
        markdown += "\n\n---\n\n" + (yield ls.runs.figures.hover_text, (params.text_document.uri, *asked), None)
    formats = _formats(ls, "text_document", "hover", "content_format")
    return lsp.Hover(contents=convert.markup(markdown, formats),
                     range=convert.range_(result.range) if result.range else None)


@answer_when_ready
def on_definition(ls: OscovaServer, doc: Document, params: lsp.DefinitionParams) -> list[lsp.Location]:
    position = convert.to_position(params.position)
    return [convert.location(loc) for loc in navigation.definition(doc.workspace, doc.parsed, position)]


@answer_when_ready
def on_references(ls: OscovaServer, doc: Document, params: lsp.ReferenceParams) -> list[lsp.Location]:
    include = params.context.include_declaration if params.context else True
    found = navigation.references(doc.workspace, doc.parsed, convert.to_position(params.position), include)
    return [convert.location(loc) for loc in found]


@answer_when_ready
def on_prepare_rename(ls: OscovaServer, doc: Document, params: lsp.PrepareRenameParams) -> Any:
    target = navigation.prepare_rename(doc.workspace, doc.parsed, convert.to_position(params.position))
    if target is None:
        return None
    return lsp.PrepareRenamePlaceholder(range=convert.range_(target.range), placeholder=target.value)


@answer_when_ready
def on_rename(ls: OscovaServer, doc: Document, params: lsp.RenameParams) -> lsp.WorkspaceEdit:
    try:
        edits = navigation.rename(doc.workspace, doc.parsed, convert.to_position(params.position), params.new_name)
    except RenameError as exc:
        raise JsonRpcInvalidParams(str(exc)) from None
    return _workspace_edit(ls, doc.snapshot, edits)


@answer_when_ready
def on_code_action(ls: OscovaServer, doc: Document, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
    if params.context.only and not any(str(k).startswith("quickfix") for k in params.context.only):
        return None
    engine = ls.publisher.diagnostics(doc.path, doc.snapshot)
    sent = [(str(d.code), convert.to_range(d.range)) for d in params.context.diagnostics
            if d.source == "oscova" and d.code is not None]
    result = actions.code_actions(engine, convert.to_range(params.range), sent or None)
    client_diags = {(str(d.code), convert.to_range(d.range)): d for d in params.context.diagnostics}
    out = []
    for action in result:
        diag = client_diags.get((action.diagnostic_code, action.diagnostic_range))
        out.append(lsp.CodeAction(title=action.title, kind=lsp.CodeActionKind.QuickFix,
                                  diagnostics=[diag] if diag else None, is_preferred=action.preferred,
                                  edit=_workspace_edit(ls, doc.snapshot, action.edits)))
    return out


@answer_when_ready
def on_code_lens(ls: OscovaServer, doc: Document, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    if isinstance(doc.parsed, EvalFile):
        return eval_lenses(doc.parsed, params.text_document.uri, trusted=ls.runs.trusted)
    if not isinstance(doc.parsed, DefinitionFile):
        return []
    return code_lenses(doc.parsed, params.text_document.uri, trusted=ls.runs.trusted)


async def on_code_lens_resolve(ls: OscovaServer, lens: lsp.CodeLens) -> lsp.CodeLens:
    return await ls.runs.figures.resolve_lens(lens)


@answer_when_ready
def on_inlay_hint(ls: OscovaServer, doc: Document, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
    return [lsp.InlayHint(position=convert.position(h.position), label=h.label, kind=lsp.InlayHintKind.Type,
                          tooltip=h.tooltip)
            for h in hints.inlay_hints(doc.workspace, doc.parsed, convert.to_range(params.range))]


@answer_when_ready
def on_document_symbol(ls: OscovaServer, doc: Document, params: lsp.DocumentSymbolParams) -> Any:
    result = symbols.document_symbols(doc.workspace, doc.parsed)
    if ls.caps("text_document", "document_symbol", "hierarchical_document_symbol_support"):
        return [convert.symbol(s) for s in result]
    return convert.flat_symbols(result, doc.path)


def on_workspace_symbol(ls: OscovaServer, params: lsp.WorkspaceSymbolParams) -> list[lsp.SymbolInformation]:
    out = []
    for analysis in ls.host.snapshot().analyses.values():
        for sym in symbols.workspace_symbols(analysis.workspace, params.query):
            out.append(lsp.SymbolInformation(name=sym.name, kind=convert.SYMBOL_KIND[sym.kind],
                                             location=convert.location(sym.location), container_name=sym.container))
    return out


@answer_when_ready
def on_document_link(ls: OscovaServer, doc: Document, params: lsp.DocumentLinkParams) -> list[lsp.DocumentLink]:
    tooltips = bool(ls.caps("text_document", "document_link", "tooltip_support"))
    return [lsp.DocumentLink(range=convert.range_(link.range), target=convert.uri(link.target),
                             tooltip=link.tooltip if tooltips else None)
            for link in navigation.document_links(doc.workspace, doc.parsed)]


def on_progress_cancel(ls: OscovaServer, params: lsp.WorkDoneProgressCancelParams) -> None:
    ls.runs.cancel_progress(params.token)


# ---------------------------------------------------------------------------------------- registration

def create_server() -> OscovaServer:
    """The server with every handler of `capabilities.FEATURES` registered (its capabilities come from the same
    table: `capabilities.initialize_result`)."""
    server = OscovaServer()
    handlers = globals()
    for feature in FEATURES:
        server.feature(feature.method)(handlers[feature.handler])
    for name, command in command_handlers(server.runs, eval_commands(server.runs)).items():
        server.command(name)(functools.partial(command))  # (pygls tags the callable; a bound method refuses)
    return server
