"""The offline model (`kind = "offline"`): runs on no endpoint, through the same client code as a real one (the
`openai` library and the stream handling), deterministic, scriptable; every run below is a real run."""

from __future__ import annotations

import json
from pathlib import Path

from oscova_lsp.runs import RunService

from tests.analysis.test_examples import run_cli

HOST = '[host]\nuser_id = "me"\n\n[models.default]\nkind = "offline"\nmodel = "offline"\n'
SCRIPT = """\
replies:
  - when: weather
    say: It is sunny in Paris today.
  - when: notes
    call: {tool: read_file, arguments: {path: notes.md}}
    then: "The notes say: {result}"
  - when: long
    say: one two three four five six seven eight nine ten
"""


def workspace(root: Path, script: str | None = SCRIPT) -> Path:
    host = HOST + ('script = "offline.yaml"\n' if script is not None else "")
    files = {"oscova.toml": host, "offline.yaml": script or "",
             "agents/helper.agent.yaml": "id: helper\ninstructions: Help.\ntools: [read_file]\nworkspaces: [\".\"]\n",
             "notes.md": "Buy milk.\n"}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


async def run(root: Path, text: str, **options: object) -> tuple[dict, list[dict]]:
    events: list[dict] = []
    service = RunService(str(root))
    try:
        handle = service.start_run("helper", text, on_event=events.append, **options)  # type: ignore[arg-type]
        return await handle, events
    finally:
        await service.aclose()


async def test_without_a_script_it_says_what_it_was_told(tmp_path: Path) -> None:
    result, events = await run(workspace(tmp_path, None), "Hello there")
    assert result["status"] == "completed"
    assert result["text"] == "You said: Hello there"
    deltas = [e for e in events if e["kind"] == "delta"]
    assert deltas, "the answer streams"


async def test_a_scripted_reply_streams_like_an_endpoint_with_usage(tmp_path: Path) -> None:
    result, events = await run(workspace(tmp_path), "How is the weather?")
    assert result["text"] == "It is sunny in Paris today."
    calls = [e for e in events if e["kind"] in ("modelCall", "modelCallEnd") or "usage" in e]
    assert any(e.get("usage") for e in calls), events


async def test_a_scripted_tool_call_runs_the_real_tool_then_says_its_result(tmp_path: Path) -> None:
    result, events = await run(workspace(tmp_path), "What do my notes say?")
    assert result["status"] == "completed"
    assert result["text"] == "The notes say: Buy milk.\n"
    tools = [e for e in events if e["kind"] == "toolCall"]
    assert [(e["name"], e["arguments"]) for e in tools] == [("read_file", {"path": "notes.md"})]


async def test_a_script_that_is_not_of_the_shape_is_the_endpoint_refusing_in_words(tmp_path: Path) -> None:
    result, _ = await run(workspace(tmp_path, "replies:\n  - whenn: x\n"), "hi")
    assert result["status"] == "failed"
    assert "offline.yaml: replies.0.whenn: Extra inputs are not permitted" in result["error"]


def test_the_cli_runs_it_with_no_endpoint_and_no_key(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    done = run_cli("run", "helper", "--input", "weather?", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["kind"] == "completed" and events[-1]["text"] == "It is sunny in Paris today."


async def test_an_answer_longer_than_max_tokens_is_cut_as_an_endpoint_cuts_it(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    (root / "agents/helper.agent.yaml").write_text("id: helper\ninstructions: Help.\nchat_options: {max_tokens: 3}\n")
    result, _ = await run(root, "a long one")
    assert result["text"] == "one two three"


def test_input_piped_on_stdin_loses_the_line_end_the_pipe_added(tmp_path: Path) -> None:
    import subprocess

    from tests.support.cli_zygote import module_command

    root = workspace(tmp_path, None)
    done = subprocess.run(module_command("run", "helper"), cwd=root, input="hi\n", capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: hi\n"


def test_the_input_may_follow_the_agent_id(tmp_path: Path) -> None:
    done = run_cli("run", "helper", "Hello there", cwd=workspace(tmp_path, None))
    assert (done.returncode, done.stdout) == (0, "You said: Hello there\n"), done.stderr
    twice = run_cli("run", "helper", "a", "--input", "b", cwd=tmp_path)
    assert twice.returncode == 2 and "give the input once" in twice.stderr
