"""An agent called as a tool, through the real command line on the offline model: a call with an argument the agent
does not take says which, in words (the model is still told only `Error: Function failed.`), and the tool calls
the called agent makes show under the call that made them, in the terminal and in the run's events."""

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


def test_the_tool_calls_of_an_agent_called_as_a_tool_show_under_its_call(tmp_path: Path) -> None:
    done = run_cli("run", "lead", "delegate", cwd=workspace(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Echo says: The notes say: Buy milk.\n"
    lines = done.stderr.splitlines()
    at = lines.index('→ echo(query="read the notes")')
    assert lines[at:at + 4] == ['→ echo(query="read the notes")',
                                '  echo → read_file(path="notes.md")',
                                "  echo ← read_file: Buy milk.",
                                "← echo: The notes say: Buy milk."]


def test_the_events_of_a_nested_tool_call_name_its_agent_and_the_call_it_was_made_in(tmp_path: Path) -> None:
    done = run_cli("run", "lead", "delegate", "--json", cwd=workspace(tmp_path))
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    tools = [e for e in events if e["kind"] in ("toolCall", "toolResult")]
    assert [(e["kind"], e["name"], e.get("agentId"), "within" in e) for e in tools] == [
        ("toolCall", "echo", None, False), ("toolCall", "read_file", "echo", True),
        ("toolResult", "read_file", "echo", True), ("toolResult", "echo", None, False)]
    outer, inner = tools[0], tools[1]
    assert inner["within"] == outer["callId"] and inner["arguments"] == {"path": "notes.md"}
    assert tools[2]["result"] == "Buy milk.\n" and tools[2]["callId"] == inner["callId"]
    assert isinstance(tools[2]["durationMs"], float)


def test_a_run_with_nested_tool_calls_replays_as_recorded_and_so_does_one_recorded_without_their_events(
        tmp_path: Path) -> None:
    root = workspace(tmp_path)
    recorded = run_cli("run", "lead", "delegate", cwd=root)
    assert recorded.returncode == 0, recorded.stderr
    [transcript] = (root / ".oscova" / "runs").glob("*.jsonl")
    replayed = run_cli("run", "--replay", str(transcript), cwd=root)
    assert replayed.returncode == 0 and "✓ replay matches the recording" in replayed.stderr, replayed.stderr
    older = root / "older.jsonl"  # as written before nested tool calls had events of their own
    older.write_text("".join(line + "\n" for line in transcript.read_text().splitlines()
                             if '"within": "call' not in line or '"record"' in line))
    assert older.read_text().count('"kind": "toolCall"') == 1
    replayed = run_cli("run", "--replay", str(older), cwd=root)
    assert replayed.returncode == 0 and "✓ replay matches the recording" in replayed.stderr, replayed.stderr


def test_the_tool_lines_of_a_run_show_nested_calls_indented_under_their_caller() -> None:
    from oscova_lsp.runs.diff import tool_lines

    events = [{"kind": "toolCall", "callId": "a", "name": "echo", "arguments": {"query": "q"}},
              {"kind": "toolCall", "callId": "b", "name": "read_file", "arguments": {"path": "n"}, "agentId": "echo",
               "within": "a"},
              {"kind": "toolResult", "callId": "b", "name": "read_file", "result": "milk", "agentId": "echo",
               "within": "a"},
              {"kind": "toolResult", "callId": "a", "name": "echo", "result": "milk"}]
    assert tool_lines(events) == ['→ echo {"query": "q"}', '  echo → read_file {"path": "n"}',
                                  "  echo ← read_file: milk", "← echo: milk"]
    assert tool_lines(events, nested=False) == ['→ echo {"query": "q"}', "← echo: milk"]


MEMORY_NOTE = ("note: `echo` is called as a tool here: its memory is off (memory works for the agent a run asks "
               "for)")


def test_the_preview_of_a_caller_says_in_one_line_that_the_memory_of_an_agent_it_calls_as_a_tool_is_off(
        tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "agents/echo.agent.yaml").write_text(AGENTS["echo"] + "memory: true\n")
    shown = run_cli("preview", "lead", "--input", "delegate", cwd=root)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines().count(MEMORY_NOTE) == 1
    as_json = json.loads(run_cli("preview", "lead", "--input", "delegate", "--json", cwd=root).stdout)
    assert as_json["notes"] == [MEMORY_NOTE.removeprefix("note: ")]  # the editor's preview shows the same
    own = run_cli("preview", "echo", "--input", "hi", cwd=root)  # asked for itself, its memory works: no note
    assert own.returncode == 0 and "memory is off" not in own.stdout, own.stderr
    (root / "agents/echo.agent.yaml").write_text(AGENTS["echo"])
    assert "memory is off" not in run_cli("preview", "lead", "--input", "delegate", cwd=root).stdout
