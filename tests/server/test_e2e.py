"""Every feature of docs/editors.md end to end: the server as a subprocess, once with real VS Code 1.139's
capabilities (pull diagnostics) and once with Neovim 0.7's (push diagnostics)."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from .conftest import Editor, codes

pytestmark = pytest.mark.asyncio(loop_scope="module")

TRIAGE = "agents/triage.agent.yaml"
POS = lsp.Position


def doc(uri: str) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=uri)


def edits_of(edit: lsp.WorkspaceEdit) -> dict[str, list[lsp.TextEdit]]:
    """A WorkspaceEdit's edits by URI, whether it came as `changes` or `documentChanges`."""
    if edit.document_changes:
        return {change.text_document.uri: list(change.edits) for change in edit.document_changes}
    return {uri: list(items) for uri, items in (edit.changes or {}).items()}


async def test_initialize_and_background_check(editor: Editor):
    caps = editor.initialize_result.capabilities
    assert editor.initialize_result.server_info.name == "oscova-lsp"
    assert caps.completion_provider.trigger_characters
    assert caps.diagnostic_provider.inter_file_dependencies is True
    assert caps.text_document_sync.change == lsp.TextDocumentSyncKind.Incremental
    ends = [r for reports in editor.client.progress_reports.values() for r in reports
            if isinstance(r, lsp.WorkDoneProgressEnd)]
    assert ends and "files checked" in ends[0].message
    # A file nobody opened was checked in the background.
    found = await editor.wait_diagnostics("templates/orphan.j2", lambda d: "OSC107" in codes(d))
    assert found[0].source == "oscova"


async def test_watchers_registered_when_the_client_supports_it(editor: Editor):
    methods = [r.method for r in editor.registrations]
    if editor.mode == "pull":  # VS Code registers watchers dynamically; Neovim 0.7 does not support it
        assert lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES in methods
    else:
        assert methods == []


async def test_open_definition_gets_diagnostics_with_related_information(editor: Editor):
    uri = editor.open(TRIAGE)
    found = await editor.wait_diagnostics(TRIAGE, lambda d: {"OSC101", "OSC021"} <= set(codes(d)))
    unbound = next(d for d in found if d.code == "OSC101")
    assert (unbound.range.start.line, unbound.range.start.character) == (5, 19)
    assert (unbound.range.end.line, unbound.range.end.character) == (5, 31)
    exposed = next(d for d in found if d.code == "OSC021")
    assert exposed.related_information and exposed.related_information[0].location.uri.endswith("writer.agent.yaml")
    if editor.mode == "push":
        await editor.wait_for(lambda: editor.published_versions.get(uri) == 1)


async def test_edit_updates_diagnostics_and_tags_the_version(editor: Editor):
    rel = "agents/writer.agent.yaml"
    uri = editor.open(rel)
    await editor.wait_diagnostics(rel, lambda d: "OSC101" not in codes(d))
    # An incremental change: `user_name` -> `user_nam`, unbound.
    version = editor.edit(rel, (2, 43), (2, 44), "")
    found = await editor.wait_diagnostics(rel, lambda d: "OSC101" in codes(d))
    assert "user_nam" in found[0].message
    if editor.mode == "push":
        await editor.wait_for(lambda: editor.published_versions.get(uri) == version)
    editor.edit(rel, (2, 43), (2, 43), "e")
    await editor.wait_diagnostics(rel, lambda d: "OSC101" not in codes(d))
    editor.close(rel)


async def test_exposing_an_agent_clears_osc021_in_another_file(editor: Editor):
    if editor.mode == "pull":
        editor.open("agents/boss.agent.yaml")
    await editor.wait_diagnostics("agents/boss.agent.yaml", lambda d: codes(d) == ["OSC021"])
    minion = "agents/minion.agent.yaml"
    editor.open(minion)
    editor.replace(minion, "id: minion\ndescription: Does the legwork.\nexposed_as_tool: true\n")
    await editor.wait_diagnostics("agents/boss.agent.yaml", lambda d: codes(d) == [])
    editor.close(minion)  # back to the file on disk: not exposed again
    await editor.wait_diagnostics("agents/boss.agent.yaml", lambda d: codes(d) == ["OSC021"])
    if editor.mode == "pull":
        editor.close("agents/boss.agent.yaml")


async def test_template_created_on_disk_updates_an_agent_that_is_not_open(editor: Editor):
    agent = "agents/watched.agent.yaml"
    await editor.wait_diagnostics(agent, lambda d: codes(d) == ["OSC040"])
    target = editor.root / "templates" / "later.j2"
    target.write_text("Later, {{ agent_name }}.\n")
    editor.client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(
        changes=[lsp.FileEvent(uri=editor.uri("templates/later.j2"), type=lsp.FileChangeType.Created)]))
    await editor.wait_diagnostics(agent, lambda d: codes(d) == [])
    target.unlink()
    editor.client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(
        changes=[lsp.FileEvent(uri=editor.uri("templates/later.j2"), type=lsp.FileChangeType.Deleted)]))
    await editor.wait_diagnostics(agent, lambda d: codes(d) == ["OSC040"])


async def test_open_document_takes_precedence_over_disk(editor: Editor):
    rel = "templates/orphan.j2"
    editor.open(rel, "Nobody renders {{ nonsense_name }.\n")
    await editor.wait_diagnostics(rel, lambda d: "OSC100" in codes(d))
    # The file changes on disk while open: the editor's text still wins.
    editor.client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(
        changes=[lsp.FileEvent(uri=editor.uri(rel), type=lsp.FileChangeType.Changed)]))
    await asyncio.sleep(0.3)
    assert "OSC100" in codes(await editor.current(rel))
    editor.close(rel)
    await editor.wait_diagnostics(rel, lambda d: "OSC100" not in codes(d))


async def test_completion_of_variables_in_inline_instructions(editor: Editor):
    uri = editor.open(TRIAGE)
    result = await editor.client.text_document_completion_async(lsp.CompletionParams(
        text_document=doc(uri), position=POS(line=4, character=12)))  # inside `{{ agent_name }}`
    items = {i.label: i for i in result.items}
    assert items["agent_name"].detail == "personal"
    assert items["team"].detail == "personal"
    assert "open_tickets" not in items  # the personal provider does not bind it
    assert "working_directory" not in items


async def test_completion_in_a_template_file_uses_its_renderer(editor: Editor):
    rel = "templates/tickets.j2"
    text = "<tickets>{{ open_tickets }}</tickets> owned by {{ ticket_owner }} {{ ti"
    uri = editor.open(rel, text)
    result = await editor.client.text_document_completion_async(lsp.CompletionParams(
        text_document=doc(uri), position=POS(line=0, character=len(text))))
    items = {i.label: i for i in result.items}
    assert items["ticket_owner"].detail == "tickets"
    assert "agent_name" not in items
    edit = items["ticket_owner"].text_edit
    assert (edit.range.start.character, edit.range.end.character) == (len(text) - 2, len(text))
    editor.close(rel)


@pytest.mark.parametrize(("line_text", "expected", "absent"), [
    ("agent_tools: [wri", {"writer", "research", "minion"}, {"triage"}),
    ("tools: [read_file, ", {"read_file", "write_file", "current_datetime"}, set()),
    ("context_providers: [me", {"memory", "tickets", "environment"}, set()),
    ("model: ", {"default"}, set()),
    ("instructions_file: ", {"../templates/research.j2", "../templates/common.j2"}, set()),
    ("tool_mode: ", {"direct", "search"}, set()),
    ("me", {"memory", "context_providers", "exposed_as_tool"}, {"id", "name"}),
])
async def test_completion_of_definition_keys_and_values(editor: Editor, line_text: str, expected: set[str],
                                                        absent: set[str]):
    rel = "agents/scratch.agent.yaml"
    text = f"id: triage\nname: Scratch\n{line_text}"
    uri = editor.open(rel, text)
    result = await editor.client.text_document_completion_async(lsp.CompletionParams(
        text_document=doc(uri), position=POS(line=2, character=len(line_text))))
    labels = {i.label for i in result.items}
    assert expected <= labels
    assert not (absent & labels)
    editor.close(rel)


async def test_hover(editor: Editor):
    uri = editor.open(TRIAGE)

    async def hover(line: int, character: int) -> str:
        result = await editor.client.text_document_hover_async(lsp.HoverParams(
            text_document=doc(uri), position=POS(line=line, character=character)))
        assert result is not None, (line, character)
        return result.contents.value

    assert "personal" in await hover(4, 14) and "display name" in await hover(4, 14)  # agent_name
    assert "AgentAsToolProvider" not in await hover(7, 16)
    assert "**agent** `writer`" in await hover(7, 16)  # agent id in agent_tools
    assert "read_file" in await hover(8, 10) and "built-in" in await hover(8, 10)  # tool
    assert "OSC101" in await hover(5, 22)  # the diagnostic's code documentation
    assert "gpt-4.1-mini" in await hover(9, 9)  # model
    rel = "agents/providers.agent.yaml"
    puri = editor.open(rel, "id: prov\ncontext_providers: [memory]\n# oscova: ignore[OSC014]\n")
    result = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=doc(puri), position=POS(line=1, character=22)))
    assert "MemoryContextProvider" in result.contents.value
    result = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=doc(puri), position=POS(line=2, character=20)))
    assert "OSC014" in result.contents.value and "Default severity" in result.contents.value
    editor.close(rel)


async def test_go_to_definition(editor: Editor):
    uri = editor.open(TRIAGE)

    async def definition(line: int, character: int, from_uri: str = uri) -> list[lsp.Location]:
        result = await editor.client.text_document_definition_async(lsp.DefinitionParams(
            text_document=doc(from_uri), position=POS(line=line, character=character)))
        return list(result or [])

    [agent] = await definition(7, 24)  # research
    assert agent.uri == editor.uri("agents/research.agent.yaml") and agent.range.start.line == 0
    [include] = await definition(6, 16)  # "templates/common.j2"
    assert include.uri == editor.uri("templates/common.j2")
    [variable] = await definition(4, 35)  # team -> [variables]
    assert variable.uri == editor.uri("oscova.toml") and variable.range.start.line == 7
    ruri = editor.open("agents/research.agent.yaml")
    [template] = await definition(3, 25, ruri)
    assert template.uri == editor.uri("templates/research.j2")


async def test_references_and_rename_of_an_agent_id(editor: Editor):
    uri = editor.open("agents/research.agent.yaml")
    refs = await editor.client.text_document_references_async(lsp.ReferenceParams(
        text_document=doc(uri), position=POS(line=0, character=5),
        context=lsp.ReferenceContext(include_declaration=True)))
    assert {r.uri for r in refs} == {editor.uri("agents/research.agent.yaml"), editor.uri(TRIAGE),
                                     editor.uri("agents/caller.agent.yaml")}
    prepared = await editor.client.text_document_prepare_rename_async(lsp.PrepareRenameParams(
        text_document=doc(uri), position=POS(line=0, character=5)))
    assert prepared is not None
    edit = await editor.client.text_document_rename_async(lsp.RenameParams(
        text_document=doc(uri), position=POS(line=0, character=5), new_name="investigator"))
    by_uri = edits_of(edit)
    assert set(by_uri) == {r.uri for r in refs}
    for items in by_uri.values():
        assert all(e.new_text == "investigator" for e in items)
    caller = by_uri[editor.uri("agents/caller.agent.yaml")][0]
    assert (caller.range.start.line, caller.range.start.character, caller.range.end.character) == (2, 14, 22)
    with pytest.raises(JsonRpcException):
        await editor.client.text_document_rename_async(lsp.RenameParams(
            text_document=doc(uri), position=POS(line=0, character=5), new_name="bad id!"))


async def test_references_of_a_variable(editor: Editor):
    uri = editor.open("templates/common.j2")
    refs = await editor.client.text_document_references_async(lsp.ReferenceParams(
        text_document=doc(uri), position=POS(line=0, character=10),
        context=lsp.ReferenceContext(include_declaration=True)))
    where = {(r.uri.rsplit("/", 1)[-1], r.range.start.line) for r in refs}
    assert ("oscova.toml", 7) in where  # the [variables] declaration
    assert ("common.j2", 0) in where and ("triage.agent.yaml", 4) in where and ("orphan.j2", 0) in where


async def test_quick_fix_sets_exposed_as_tool_in_the_other_file(editor: Editor):
    uri = editor.open(TRIAGE)
    found = await editor.wait_diagnostics(TRIAGE, lambda d: "OSC021" in codes(d))
    osc021 = next(d for d in found if d.code == "OSC021")
    actions = await editor.client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=doc(uri), range=osc021.range, context=lsp.CodeActionContext(diagnostics=[osc021])))
    [action] = [a for a in actions if "exposed_as_tool" in a.title]
    assert action.kind == lsp.CodeActionKind.QuickFix and action.is_preferred
    changes = edits_of(action.edit)
    [edit] = changes[editor.uri("agents/writer.agent.yaml")]
    assert "exposed_as_tool: true" in edit.new_text
    # Without the client's diagnostics, the range alone finds the fix too.
    actions = await editor.client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=doc(uri), range=osc021.range, context=lsp.CodeActionContext(diagnostics=[])))
    assert any("exposed_as_tool" in a.title for a in actions)


async def test_inlay_hints_name_the_binding_provider(editor: Editor):
    uri = editor.open("templates/tickets.j2")
    hints = await editor.client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=doc(uri), range=lsp.Range(start=POS(line=0, character=0), end=POS(line=1, character=0))))
    assert [(h.position.character, h.label) for h in hints] == [(24, ": tickets"), (62, ": tickets")]
    editor.close("templates/tickets.j2")


async def test_symbols_and_links(editor: Editor):
    uri = editor.open(TRIAGE)
    result = await editor.client.text_document_document_symbol_async(lsp.DocumentSymbolParams(text_document=doc(uri)))
    # Both clients state hierarchicalDocumentSymbolSupport: the agent with its keys as children.
    [agent] = result
    assert isinstance(agent, lsp.DocumentSymbol)
    assert agent.name == "triage" and agent.detail == "Triage Desk"
    assert {"instructions", "agent_tools"} <= {c.name for c in agent.children}
    found = await editor.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="desk"))
    assert [s.name for s in found] == ["triage (Triage Desk)"]
    found = await editor.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="min"))
    assert [s.name for s in found] == ["minion"]
    links = await editor.client.text_document_document_link_async(lsp.DocumentLinkParams(text_document=doc(uri)))
    assert [link.target for link in links] == [editor.uri("templates/common.j2")]
    host = editor.open("oscova.toml")
    links = await editor.client.text_document_document_link_async(lsp.DocumentLinkParams(text_document=doc(host)))
    assert {link.target for link in links} == {editor.uri("templates/environment.j2"), editor.uri("templates/tickets.j2")}


async def test_settings_change_severity_and_ignore_codes(editor: Editor):
    editor.open(TRIAGE)
    await editor.wait_diagnostics(TRIAGE, lambda d: "OSC101" in codes(d))
    settings = {"severity": {"OSC021": "error"}, "ignore": ["OSC101"], "debounce": 50}
    if editor.mode == "pull":
        editor.client.set_configuration(settings, section="oscova")
        editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    else:
        editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
            settings={"oscova": settings}))
    found = await editor.wait_diagnostics(TRIAGE, lambda d: "OSC101" not in codes(d))
    assert next(d for d in found if d.code == "OSC021").severity == lsp.DiagnosticSeverity.Error
    # And back.
    if editor.mode == "pull":
        editor.client.set_configuration({"debounce": 50}, section="oscova")
        editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    else:
        editor.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
            settings={"oscova": {"debounce": 50}}))
    await editor.wait_diagnostics(TRIAGE, lambda d: "OSC101" in codes(d))


async def test_robustness(editor: Editor):
    uri = editor.open(TRIAGE)
    # Positions out of range and unknown documents answer, with nothing.
    assert await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=doc(uri), position=POS(line=9999, character=9999))) is None
    await editor.client.text_document_completion_async(lsp.CompletionParams(
        text_document=doc(uri), position=POS(line=9999, character=3)))
    assert await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=doc("file:///nowhere/x.agent.yaml"), position=POS(line=0, character=0))) is None
    assert await editor.client.text_document_definition_async(lsp.DefinitionParams(
        text_document=doc("untitled:Untitled-1"), position=POS(line=0, character=0))) is None
    # Bad params and unknown methods get an error for that request only.
    with pytest.raises(JsonRpcException):
        await editor.raw_request(lsp.TEXT_DOCUMENT_HOVER, {"textDocument": {"uri": 3}, "position": {"line": "x"}})
    with pytest.raises(JsonRpcException):
        await editor.raw_request(lsp.TEXT_DOCUMENT_COMPLETION, None)
    with pytest.raises(JsonRpcException):
        await editor.client.protocol.send_request_async("oscova/noSuchMethod", {})
    # Malformed input in a document: diagnostics, not a crash.
    rel = "agents/broken.agent.yaml"
    editor.open(rel, "id: [unclosed\n  : : :\n\x00")
    found = await editor.wait_diagnostics(rel, lambda d: "OSC001" in codes(d))
    assert found
    result = await editor.client.text_document_hover_async(lsp.HoverParams(
        text_document=doc(uri), position=POS(line=7, character=16)))
    assert result is not None  # still serving
    editor.close(rel)


async def test_pull_reports_unchanged_by_result_id(editor: Editor):
    # Push clients may pull too: the server answers `textDocument/diagnostic` whatever the client said.
    uri = editor.open(TRIAGE)
    first = await editor.client.text_document_diagnostic_async(lsp.DocumentDiagnosticParams(text_document=doc(uri)))
    assert first.result_id
    again = await editor.client.text_document_diagnostic_async(lsp.DocumentDiagnosticParams(
        text_document=doc(uri), previous_result_id=first.result_id))
    assert again.kind == "unchanged"


async def test_workspace_diagnostics_are_held_until_something_changes(editor: Editor):
    client = editor.client
    first = await client.workspace_diagnostic_async(lsp.WorkspaceDiagnosticParams(previous_result_ids=[]))
    uris = {item.uri for item in first.items}
    assert editor.uri("templates/orphan.j2") in uris and editor.uri(TRIAGE) not in uris  # open files: pulled per document
    previous = [lsp.PreviousResultId(uri=item.uri, value=item.result_id) for item in first.items]
    pending = asyncio.ensure_future(client.workspace_diagnostic_async(
        lsp.WorkspaceDiagnosticParams(previous_result_ids=previous)))
    await asyncio.sleep(0.3)
    assert not pending.done()  # nothing changed: the request is held (no busy polling)
    orphan = editor.root / "templates" / "orphan.j2"
    original = orphan.read_text()
    orphan.write_text("Nobody renders {{ no_such_name }.\n")
    editor.client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(
        changes=[lsp.FileEvent(uri=editor.uri("templates/orphan.j2"), type=lsp.FileChangeType.Changed)]))
    report = await asyncio.wait_for(pending, 10)
    full = {item.uri: item for item in report.items if item.kind == "full"}
    assert "OSC100" in codes(full[editor.uri("templates/orphan.j2")].items)
    assert all(item.kind == "unchanged" for item in report.items if item.uri not in full)
    orphan.write_text(original)
    editor.client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(
        changes=[lsp.FileEvent(uri=editor.uri("templates/orphan.j2"), type=lsp.FileChangeType.Changed)]))
    await editor.wait_diagnostics("templates/orphan.j2", lambda d: "OSC101" not in codes(d))
