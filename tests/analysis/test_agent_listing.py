"""The `exampleInput` that `oscova.listAgents` answers is the definition's `example_input` as YAML reads it:
the extension offers it as it is and parses no YAML of its own."""

from __future__ import annotations

from pathlib import Path

from oscova_lsp.analysis.agents import agent_list
from oscova_lsp.analysis.host import AnalysisHost

DEFINITIONS = {
    "plain": "example_input: hi there # comment\n",
    "double": 'example_input: "a \\"b\\"\\nc"\n',
    "single": "example_input: 'it''s'\n",
    "literal": "example_input: |\n  line 1\n  line 2\n",
    "folded": "example_input: >-\n  one\n  two\n",
    "nested": "chat_options:\n  example_input: nested\n",
    "none": "",
}


def _listed(root: Path) -> dict[str, str | None]:
    host = AnalysisHost([str(root)])
    folder_root = host.root_of(str(root / "oscova.toml"))
    host.ensure_root(folder_root)
    host.install(folder_root, host.load(folder_root))
    analysis = host.snapshot().analysis(str(root / "oscova.toml"))
    assert analysis is not None
    return {agent.id: agent.example_input for agent in agent_list(analysis.workspace)}


def test_example_input_as_yaml_reads_it(tmp_path: Path):
    (tmp_path / "oscova.toml").write_text("")
    (tmp_path / "agents").mkdir()
    for name, body in DEFINITIONS.items():
        (tmp_path / "agents" / f"{name}.agent.yaml").write_text(f"id: {name}\ninstructions: Help.\n{body}")
    (tmp_path / "agents" / "example.agent.yaml").write_text(
        (Path(__file__).parents[2] / "examples" / "agents" / "summarizer.agent.yaml").read_text())
    listed = _listed(tmp_path)
    assert listed == {"plain": "hi there", "double": 'a "b"\nc', "single": "it's", "literal": "line 1\nline 2\n",
                      "folded": "one two", "nested": None, "none": None,
                      "summarizer": "Summarize the incident timeline."}
