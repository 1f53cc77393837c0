"""An agent called as a tool, through the real command line on the offline model: a call with an argument the agent
does not take says which, in words (the model is still told only `Error: Function failed.`)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.analysis.test_examples import run_cli

HOST = '[host]\nuser_id = "me"\n\n[models.default]\nkind = "offline"\nmodel = "offline"\nscript = "offline.yaml"\n'
SCRIPT = """\
replies:
  - when: wrong argument
    call: {tool: echo, arguments: {input: hi}}
    then: "The agent said: {result}"
  - when: delegate
    call: {tool: echo, arguments: {query: read the notes}}
    then: "Echo says: {result}"
  - when: read the notes
    call: {tool: read_file, arguments: {path: notes.md}}
    then: "The notes say: {result}"
"""
AGENTS = {
    "lead": "id: lead\ninstructions: Delegate to echo.\nagent_tools: [echo]\n",
    "echo": "id: echo\ndescription: Repeats what it is told.\nexposed_as_tool: true\ninstructions: Repeat.\n"
            "tools: [read_file]\nworkspaces: [\".\"]\n",
}


def workspace(root: Path) -> Path:
    files = {"oscova.toml": HOST, "offline.yaml": SCRIPT, "notes.md": "Buy milk.\n",
             **{f"agents/{name}.agent.yaml": text for name, text in AGENTS.items()}}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_an_unknown_argument_of_an_agent_tool_is_named_in_the_terminal(tmp_path: Path) -> None:
    done = run_cli("run", "lead", "call it with the wrong argument", cwd=workspace(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "← echo failed: the agent `echo` takes `query`, not `input`" in done.stderr.splitlines()
    assert "TypeError" not in done.stderr and "call_agent" not in done.stderr
    assert done.stdout == "The agent said: Error: Function failed.\n"  # the model is told no more, as the framework does


def test_an_unknown_argument_of_an_agent_tool_is_named_in_the_events(tmp_path: Path) -> None:
    done = run_cli("run", "lead", "call it with the wrong argument", "--json", cwd=workspace(tmp_path))
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [result] = [e for e in events if e["kind"] == "toolResult"]
    assert result["name"] == "echo" and result["error"] == "the agent `echo` takes `query`, not `input`"
    assert events[-1]["text"] == "The agent said: Error: Function failed."
