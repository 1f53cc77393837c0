"""The analysis host on its own (no protocol): changes in, snapshots out, old snapshots unchanged."""

from __future__ import annotations

from pathlib import Path

from oscova_lsp.analysis.host import AnalysisHost

from tests.support.host_files import MODELS

FILES = {
    "oscova.toml": '[host]\nuser_id = "alice"\n\n[variables]\nteam = "Platform"\n\n' + MODELS,
    "agents/lead.agent.yaml": "id: lead\nagent_tools: [helper]\ninstructions_file: ../templates/lead.j2\n",
    "agents/helper.agent.yaml": "id: helper\nexposed_as_tool: true\ninstructions: Help.\n",
    "templates/lead.j2": "Lead {{ team }}.\n",
}


def make(root: Path) -> AnalysisHost:
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    host = AnalysisHost([str(root)])
    for found in host.discover_roots():
        host.ensure_root(found)
        host.install(found, host.load(found))
    return host


def ids(host_snapshot, path: str) -> set[str]:
    analysis = host_snapshot.analysis(path)
    return set(analysis.workspace.defs_by_id)


def codes(snapshot, path: str) -> list[str]:
    return sorted(d.code for d in snapshot.diagnostics(path))


def test_a_snapshot_keeps_answering_the_state_it_was_taken_in(tmp_path: Path):
    host = make(tmp_path)
    lead, helper = str(tmp_path / "agents/lead.agent.yaml"), str(tmp_path / "agents/helper.agent.yaml")
    before = host.snapshot()
    assert before.is_loaded(lead) and ids(before, lead) == {"lead", "helper"}
    assert codes(before, lead) == []

    affected = host.open(helper, "id: aide\nexposed_as_tool: true\ninstructions: Help.\n", 2)
    assert lead in affected  # its `agent_tools: [helper]` now names no agent
    after = host.snapshot()
    assert ids(after, lead) == {"lead", "aide"}
    assert codes(after, lead) == ["OSC020"]
    # The old snapshot still sees `helper`, its diagnostics and its files as they were.
    assert ids(before, lead) == {"lead", "helper"}
    assert codes(before, lead) == []
    assert before.parsed(helper)[1].raw_id == "helper"  # type: ignore[index]
    assert before.version(helper) is None and after.version(helper) == 2


def test_an_open_buffer_wins_over_disk_and_close_falls_back_to_disk(tmp_path: Path):
    host = make(tmp_path)
    helper = str(tmp_path / "agents/helper.agent.yaml")
    host.open(helper, "id: helper\nexposed_as_tool: true\ninstructions: Edited.\n", 1)
    (tmp_path / "agents/helper.agent.yaml").write_text("id: helper\nexposed_as_tool: true\ninstructions: Disk.\n")
    assert host.disk_changed(helper, deleted=False) == set()  # the editor has it open: its buffer counts
    open_snapshot = host.snapshot()
    assert "Edited." in open_snapshot.parsed(helper)[1].text  # type: ignore[index]
    assert open_snapshot.unsaved([helper]) == [helper]

    host.close(helper)
    closed = host.snapshot()
    assert "Disk." in closed.parsed(helper)[1].text  # type: ignore[index]
    assert closed.unsaved([helper]) == [] and not host.is_open(helper)
    assert "Edited." in open_snapshot.parsed(helper)[1].text  # type: ignore[index]


def test_disk_changes_and_deletions_reach_the_snapshots_taken_after_them(tmp_path: Path):
    host = make(tmp_path)
    helper = tmp_path / "agents/helper.agent.yaml"
    lead = str(tmp_path / "agents/lead.agent.yaml")
    before = host.snapshot()
    helper.unlink()
    assert lead in host.disk_changed(str(helper), deleted=True)
    assert ids(host.snapshot(), lead) == {"lead"}
    assert ids(before, lead) == {"lead", "helper"}


def test_an_unsaved_buffer_equal_to_disk_is_not_unsaved(tmp_path: Path):
    host = make(tmp_path)
    template = str(tmp_path / "templates/lead.j2")
    host.open(template, FILES["templates/lead.j2"], 1)
    assert host.snapshot().unsaved([template]) == []
    host.change(template, "Lead {{ team }} now.\n", 2)
    assert host.snapshot().unsaved([template]) == [template]


def test_a_root_not_read_yet_is_not_loaded_and_holds_its_open_documents(tmp_path: Path):
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    host = AnalysisHost([str(tmp_path)])
    lead = str(tmp_path / "agents/lead.agent.yaml")
    host.open(lead, FILES["agents/lead.agent.yaml"], 1)
    early = host.snapshot()
    assert not early.is_loaded(lead) and ids(early, lead) == {"lead"}
    root = host.root_of(lead)
    host.install(root, host.load(root))
    assert host.snapshot().is_loaded(lead) and ids(host.snapshot(), lead) == {"lead", "helper"}
    assert not early.is_loaded(lead) and ids(early, lead) == {"lead"}


def test_lint_settings_apply_to_new_snapshots_only(tmp_path: Path):
    from oscova_lsp.analysis.lint import LintOptions

    host = make(tmp_path)
    (tmp_path / "agents/bad.agent.yaml").write_text("id: bad\nmemory: maybe\n")
    bad = str(tmp_path / "agents/bad.agent.yaml")
    host.disk_changed(bad, deleted=False)
    before = host.snapshot()
    assert "OSC002" in codes(before, bad)
    host.set_lint(LintOptions(ignore=frozenset({"OSC002"})))
    assert "OSC002" not in codes(host.snapshot(), bad)
    assert "OSC002" in codes(before, bad)
