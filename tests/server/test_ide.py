"""The editor features at the plain-data layer: a workspace on disk, a cursor marked `‸` in a file's text,
the expected result. No protocol involved."""

from __future__ import annotations

from pathlib import Path

import pytest
from oscova_lsp.analysis.engine import Analysis
from oscova_lsp.analysis.text import LineIndex, Position
from oscova_lsp.ide import completion, hints, hover, navigation, symbols
from oscova_lsp.ide.model import RenameError

from .conftest import WORKSPACE

CURSOR = "‸"


@pytest.fixture(scope="module")
def analysis() -> Analysis:
    found = Analysis(str(WORKSPACE))
    found.load()
    return found


def at(analysis: Analysis, rel: str, marked: str):
    """Puts `marked` (with one cursor) into the workspace as `rel`; returns (workspace, parsed, position)."""
    offset = marked.index(CURSOR)
    text = marked.replace(CURSOR, "")
    path = str(WORKSPACE / rel)
    analysis.update(path, text)
    return analysis.workspace, analysis.workspace.files[path], LineIndex(text).position(offset)


@pytest.fixture
def restore(analysis: Analysis):
    touched: list[str] = []
    yield touched
    for rel in touched:
        path = WORKSPACE / rel
        analysis.update(str(path), path.read_text() if path.exists() else None)


COMPLETIONS = [
    # (file, text with cursor, labels that must be offered, labels that must not)
    ("templates/common.j2", "Team: {{ te‸ }}", {"team", "agent_name", "user_name"}, {"os", "open_tickets"}),
    ("templates/tickets.j2", "{{ ‸ }}", {"open_tickets", "ticket_owner"}, {"agent_name"}),
    ("templates/environment.j2", "{{ ‸", {"os", "workspace_directories", "working_directory"}, {"team"}),
    ("templates/common.j2", "{% ‸", {"if", "for", "include", "team"}, set()),
    ("templates/common.j2", "{{ team | up‸ }}", {"upper"}, {"team", "lower"}),
    ("templates/common.j2", "{{ team.‸ }}", set(), {"team", "upper"}),
    ("templates/common.j2", "{% include \"templates/‸", {"templates/research.j2", "templates/tickets.j2"}, {"team"}),
    ("templates/common.j2", "plain text ‸", set(), {"team"}),
    ("templates/common.j2", "{{ team }} after ‸", set(), {"team"}),
    ("agents/x.agent.yaml", "id: x\ninstructions: Hi {{ ‸ }}\n", {"agent_name", "team"}, {"os"}),
    ("agents/x.agent.yaml", "id: x\nagent_tools:\n  - ‸\n", {"minion", "research", "writer"}, {"x"}),
    ("agents/x.agent.yaml", "id: x\ncontext_providers:\n  - type: tic‸\n", {"tickets", "memory"}, set()),
    ("agents/x.agent.yaml", "id: x\nshared: ‸\n", {"true", "false"}, set()),
    ("agents/x.agent.yaml", "id: x\nname: ‸\n", set(), {"true", "default"}),
    ("agents/x.agent.yaml", "id: x\n  ‸", set(), {"id", "model"}),
    ("e.eval.yaml", "‸", {"agent", "models", "repeat", "pass_rate", "judge", "cases"}, {"id", "contains"}),
    ("e.eval.yaml", "agent: tri‸", {"triage", "writer"}, {"default"}),
    ("e.eval.yaml", "agent: triage\nmodels: [‸", {"default"}, {"triage"}),
    ("e.eval.yaml", "agent: triage\njudge: ‸", {"default"}, {"triage"}),
    ("e.eval.yaml", "agent: triage\ncases:\n  - ‸", {"name", "input", "variables", "expect"}, {"agent"}),
    ("e.eval.yaml", "agent: triage\ncases:\n  - name: a\n    ‸", {"input", "expect"}, {"agent", "contains"}),
    ("e.eval.yaml", "agent: triage\ncases:\n  - name: a\n    expect:\n      - ‸",
     {"contains", "tools", "tool_called", "judge", "max_tokens", "instructions_contain"}, {"input", "agent"}),
    ("e.eval.yaml", "agent: triage\ncases:\n  - name: a\n    expect:\n      - no_tool: [‸",
     {"read_file", "writer", "research"}, {"write_file", "default"}),
    ("e.eval.yaml", "agent: triage\ncases:\n  - name: a\n    expect:\n      - tools: { mode: in_order, calls: [wri‸",
     {"writer", "read_file"}, {"in_order"}),
    ("e.eval.yaml", "agent: triage\ncases:\n  - name: a\n    expect:\n      - tools: { mode: ‸",
     {"exact", "in_order", "any_order"}, {"read_file"}),
    ("e.eval.yaml", "agent: triage\ncases:\n  - name: a\n    expect:\n      - status: ‸",
     {"completed", "failed", "cancelled"}, set()),
    ("e.eval.yaml", "agent: triage\ncases:\n  - name: a\n    expect:\n      - judge: ‸", set(), {"default"}),
]


@pytest.mark.parametrize(("rel", "marked", "offered", "absent"), COMPLETIONS)
def test_completion(analysis: Analysis, restore: list[str], rel: str, marked: str, offered: set[str],
                    absent: set[str]):
    restore.append(rel)
    ws, parsed, pos = at(analysis, rel, marked)
    labels = {item.label for item in completion.complete(ws, parsed, pos).items}
    assert offered <= labels
    assert not (absent & labels)


def test_completion_replaces_the_word_typed(analysis: Analysis, restore: list[str]):
    restore.append("templates/common.j2")
    ws, parsed, pos = at(analysis, "templates/common.j2", "Team: {{ us‸ }}")
    item = next(i for i in completion.complete(ws, parsed, pos).items if i.label == "user_name")
    assert item.replace is not None
    assert (item.replace.start.character, item.replace.end.character) == (9, 11)


def test_completion_caps_long_lists_and_narrows_by_the_word(analysis: Analysis, restore: list[str]):
    restore.append("agents/x.agent.yaml")
    many = completion.LIMIT + 5
    for n in range(many):
        analysis.update(str(WORKSPACE / f"agents/gen{n}.agent.yaml"), f"id: gen-{n}\nexposed_as_tool: true\n")
        restore.append(f"agents/gen{n}.agent.yaml")
    ws, parsed, pos = at(analysis, "agents/x.agent.yaml", "id: x\nagent_tools: [gen-1‸\n")
    result = completion.complete(ws, parsed, pos)
    assert result.incomplete and len(result.items) <= completion.LIMIT
    assert result.items[0].label.startswith("gen-1")


HOVERS = [
    ("agents/triage.agent.yaml", 4, 14, ["`agent_name`", "personal", "display name"]),
    ("agents/triage.agent.yaml", 5, 22, ["open_tickets", "custom provider `tickets` binds it", "OSC101"]),
    ("agents/triage.agent.yaml", 7, 16, ["**agent** `writer`", "not `exposed_as_tool`", "writer.agent.yaml"]),
    ("agents/triage.agent.yaml", 8, 10, ["read_file", "built-in"]),
    ("agents/triage.agent.yaml", 0, 1, ["**id**", "Cache key"]),
    ("templates/tickets.j2", 0, 14, ["open_tickets", "tickets", "TicketContextProvider"]),
    ("templates/environment.j2", 0, 8, ["`os`", "environment", "operating system"]),
    ("oscova.toml", 7, 1, ["`team`", "[variables]"]),
]


EVAL_FOR_HOVER = """\
agent: triage
cases:
  - name: a
    input: hi
    expect:
      - tools: { mode: in_order, calls: [read_file] }
      - instructions_contain: team
"""


@pytest.mark.parametrize(("line", "character", "expected"), [
    (0, 1, ["**agent**", "The id of an agent"]),
    (0, 9, ["**agent** `triage`", "triage.agent.yaml"]),
    (5, 9, ["**tools** (assertion)", "`exact`", "`in_order`", "`any_order`"]),
    (5, 18, ["**mode**", "others allowed between them"]),
    (5, 43, ["read_file", "built-in"]),
    (6, 12, ["**instructions_contain** (assertion)", "without a model call"]),
])
def test_hover_in_an_evaluation(analysis: Analysis, restore: list[str], line: int, character: int,
                                expected: list[str]):
    restore.append("e.eval.yaml")
    ws, parsed, _ = at(analysis, "e.eval.yaml", EVAL_FOR_HOVER + "‸")
    found = hover.hover(ws, parsed, Position(line, character))
    assert found is not None
    for fragment in expected:
        assert fragment in found.markdown


@pytest.mark.parametrize(("rel", "line", "character", "expected"), HOVERS)
def test_hover(analysis: Analysis, rel: str, line: int, character: int, expected: list[str]):
    path = str(WORKSPACE / rel)
    parsed = analysis.workspace.files[path]
    found = hover.hover(analysis.workspace, parsed, Position(line, character), analysis.diagnostics(path))
    assert found is not None
    for fragment in expected:
        assert fragment in found.markdown


def test_hover_on_nothing_is_none(analysis: Analysis):
    path = str(WORKSPACE / "agents/triage.agent.yaml")
    parsed = analysis.workspace.files[path]
    assert hover.hover(analysis.workspace, parsed, Position(2, 30)) is None  # the description's words
    assert hover.hover(analysis.workspace, parsed, Position(500, 0)) is None


def test_definition_targets(analysis: Analysis):
    ws = analysis.workspace

    def go(rel: str, line: int, character: int) -> list[tuple[str, int]]:
        parsed = ws.files[str(WORKSPACE / rel)]
        return [(str(Path(loc.path).relative_to(WORKSPACE)), loc.range.start.line)
                for loc in navigation.definition(ws, parsed, Position(line, character))]

    assert go("agents/triage.agent.yaml", 7, 24) == [("agents/research.agent.yaml", 0)]
    assert go("agents/triage.agent.yaml", 6, 20) == [("templates/common.j2", 0)]
    assert go("agents/triage.agent.yaml", 4, 35) == [("oscova.toml", 7)]
    assert go("agents/triage.agent.yaml", 9, 9) == [("oscova.toml", 12)]  # model -> [models.default]
    assert go("templates/research.j2", 0, 18) == [("oscova.toml", 4)]  # user_name -> [user] name
    assert go("templates/tickets.j2", 0, 14) == [("oscova.toml", 19)]  # a custom provider's variable
    assert go("oscova.toml", 10, 16) == [("templates/environment.j2", 0)]
    assert go("agents/triage.agent.yaml", 2, 20) == []


def test_rename_edits_every_reference_and_refuses_bad_ids(analysis: Analysis):
    ws = analysis.workspace
    parsed = ws.files[str(WORKSPACE / "agents/minion.agent.yaml")]
    edits = navigation.rename(ws, parsed, Position(0, 6), "helper")
    where = sorted((Path(e.path).name, e.range.start.line, e.range.start.character) for e in edits)
    assert where == [("boss.agent.yaml", 2, 4), ("caller.agent.yaml", 2, 24), ("minion.agent.yaml", 0, 4)]
    with pytest.raises(RenameError):
        navigation.rename(ws, parsed, Position(0, 6), "-bad")
    with pytest.raises(RenameError):
        navigation.rename(ws, parsed, Position(0, 6), "writer")  # taken
    with pytest.raises(RenameError):
        navigation.rename(ws, parsed, Position(1, 3), "x")  # not on an agent id


def test_rename_keeps_quotes(analysis: Analysis, restore: list[str]):
    restore.append("agents/quoted.agent.yaml")
    ws, parsed, pos = at(analysis, "agents/quoted.agent.yaml", 'id: "quo‸ted"\n')
    [edit] = navigation.rename(ws, parsed, pos, "plain")
    assert (edit.range.start.character, edit.range.end.character) == (5, 11)


def test_inlay_hints_and_symbols(analysis: Analysis):
    ws = analysis.workspace
    parsed = ws.files[str(WORKSPACE / "agents/triage.agent.yaml")]
    found = [(h.position.line, h.position.character, h.label) for h in hints.inlay_hints(ws, parsed)]
    assert found == [(4, 23, ": personal"), (4, 38, ": personal")]  # open_tickets is unbound: no hint
    [agent] = symbols.document_symbols(ws, parsed)
    assert agent.name == "triage" and "instructions" in [c.name for c in agent.children]
    assert [s.name for s in symbols.workspace_symbols(ws, "rsr")] == ["research (Researcher)"]
    links = navigation.document_links(ws, ws.files[str(WORKSPACE / "agents/research.agent.yaml")])
    assert [Path(link.target).name for link in links] == ["research.j2"]
