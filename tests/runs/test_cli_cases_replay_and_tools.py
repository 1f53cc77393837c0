"""Agent tests, replay and tools from the command line (what a new user hit first): agent
tests that see a change inside an agent called as a tool, replay's defaults and words, denied and withheld
tools named for what withheld them, the endpoint's own words for 401 and 429, saving cases, and smaller ones. The command line as a
subprocess, the real `openai` client against the local server."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from oscova_lsp.runs import RunService
from oscova_lsp.runs.cases import find_cases, run_case, save_case

from tests.support.fake_openai import Reply, ToolCall
from tests.support.host_files import UNREACHABLE, models_default

from .conftest import host_toml, make_workspace
from .test_cli import oscova

EXCEPTION_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b")

DESK = {
    "helpdesk": """\
        id: helpdesk
        instructions: Answer the customer; look orders up with order-lookup.
        agent_tools: [order-lookup]
        """,
    "order-lookup": """\
        id: order-lookup
        description: Looks an order up.
        exposed_as_tool: true
        instructions: Look the order up in data/notes.txt.
        tools: [read_file]
        workspaces: [data]
        """,
    "greeter": """\
        id: greeter
        instructions: Greet the customer.
        """,
}


def with_host_lines(host: str, lines: str) -> str:
    """`host` (an oscova.toml of `host_toml`) with `lines` added to its `[host]` table."""
    return host.replace('[host]\nuser_id = "alice"\n', f'[host]\nuser_id = "alice"\n{lines}')


def desk(tmp_path: Path, base_url: str, host_lines: str = "") -> Path:
    host = with_host_lines(host_toml(base_url, key_variable=None), host_lines)
    return make_workspace(tmp_path / "ws", base_url, host=host, agents=DESK)


def enqueue_desk_run(fake: Any) -> None:
    fake.enqueue(Reply(tool_calls=[ToolCall("order-lookup", {"query": "order 42"}, "call_2")]),
                 Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"}, "r1")]),  # order-lookup
                 Reply(text="Order 42 ships Tuesday."),                                        # order-lookup
                 Reply(text="Your order ships on Tuesday."))


async def saved_desk_case(root: Path, fake: Any) -> Any:
    enqueue_desk_run(fake)
    service = RunService(root)
    try:
        result = await service.run("helpdesk", "Where is order 42?")
    finally:
        await service.aclose()
    assert result["status"] == "completed", result
    return save_case(str(root), result["transcript"])


# -- item 2: a case replays the agents it calls as tools against their recorded answers ---------------------

async def test_a_change_inside_an_agent_called_as_a_tool_fails_the_case(tmp_path: Path, fake_openai) -> None:
    root = desk(tmp_path, fake_openai.base_url)
    case = await saved_desk_case(root, fake_openai)
    fake_openai.reset()
    passed = await run_case(case)
    assert passed.status == "passed", passed
    assert [e["agentId"] for e in passed.events if e["kind"] == "modelCall"] == \
        ["helpdesk", "order-lookup", "order-lookup", "helpdesk"]  # order-lookup ran, on its recorded answers
    nested = root / "agents" / "order-lookup.agent.yaml"
    nested.write_text(nested.read_text().replace("Look the order up", "Look the order up politely"))
    failed = await run_case(case)
    assert failed.status == "failed"
    assert (failed.difference or "").splitlines()[0] == (
        "model request 2 differs in the instructions (a request made inside the tool call call_2)")
    assert fake_openai.requests == []  # never the endpoint


async def test_the_tools_of_an_agent_called_as_a_tool_take_their_recorded_results(tmp_path: Path,
                                                                                  fake_openai) -> None:
    root = desk(tmp_path, fake_openai.base_url)
    case = await saved_desk_case(root, fake_openai)
    (root / "data" / "notes.txt").unlink()  # read_file would now fail: the recorded result stands in
    result = await run_case(case)
    assert result.status == "passed", result
    again = [line for line in map(json.loads, Path(result.events[0]["transcript"]).read_text().splitlines())
             if line.get("record") == "tool"]
    assert [(t["name"], t.get("within")) for t in again] == [("read_file", "call_2"), ("order-lookup", None)]


async def test_a_version_2_case_without_the_nested_results_says_to_record_again(tmp_path: Path,
                                                                                fake_openai) -> None:
    root = desk(tmp_path, fake_openai.base_url)
    case = await saved_desk_case(root, fake_openai)
    lines = [json.loads(line) for line in Path(case.path).read_text().splitlines()]
    lines[0]["version"] = 2  # as recorded before the tools of agents called as tools were kept
    old = [line for line in lines if not (line.get("record") == "tool" and line.get("within"))]
    Path(case.path).write_text("".join(json.dumps(line) + "\n" for line in old))
    result = await run_case(case)
    assert result.status == "failed"
    assert "transcript version 2 keeps only the requested agent's tool results" in (result.difference or "")
    assert "record the run again" in (result.difference or "")


# -- item 5: replay's defaults, and a failure reproduced --------------------------------------------------

def test_replay_by_run_id_alone_takes_the_recorded_agent_and_input(tmp_path: Path, fake_openai) -> None:
    root = desk(tmp_path, fake_openai.base_url)
    fake_openai.enqueue(Reply(text="Hello."))
    recorded = oscova("run", "order-lookup", "--input", "hi", cwd=root)
    assert recorded.returncode == 0, recorded.stderr
    run_id = re.search(r"-order-lookup-([0-9a-f]+)\.jsonl", recorded.stderr)[1]  # type: ignore[index]
    replayed = oscova("run", "--replay", run_id, cwd=root)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == "Hello.\n"
    assert "✓ replay matches the recording" in replayed.stderr
    missing = oscova("run", cwd=root)
    assert missing.returncode == 2 and "AGENT_ID" in missing.stderr


def test_replaying_a_failed_run_says_it_reproduced_the_failure(tmp_path: Path, fake_openai) -> None:
    root = desk(tmp_path, fake_openai.base_url)
    fake_openai.enqueue(Reply(status=500, error_message="the model is overloaded"))
    recorded = oscova("run", "order-lookup", "--input", "hi", cwd=root)
    assert recorded.returncode == 1
    run_id = re.search(r"-order-lookup-([0-9a-f]+)\.jsonl", recorded.stderr)[1]  # type: ignore[index]
    replayed = oscova("run", "--replay", run_id, cwd=root)
    assert replayed.returncode == 0, replayed.stderr
    assert "the model is overloaded" in replayed.stderr
    last = replayed.stderr.strip().splitlines()[-1]
    assert last == "✓ the replay reproduces the recorded failure", replayed.stderr


# -- item 7: a denied or withheld tool, in words that name the setting -------------------------------------

def test_a_call_to_a_denied_tool_names_deny_tools_not_the_definition(tmp_path: Path, fake_openai) -> None:
    root = desk(tmp_path, fake_openai.base_url, host_lines='deny_tools = ["write_file"]\n')
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("write_file", {"path": "data/x.md", "content": "x"}, "w1")]))
    result = oscova("run", "greeter", "--input", "hi", cwd=root)  # offered no tool at all
    # A refused call ends the tool loop as a terminating call does (docs/runtime.md): the run completes,
    # and what the user reads names the setting that took the tool away.
    assert result.returncode == 0, result.stderr
    assert "← write_file: denied: `[host] deny_tools` in oscova.toml lists it" in result.stderr, result.stderr
    assert "an agent is offered the tools in its" not in result.stderr


def test_a_provider_tool_refused_by_the_policy_shows_as_denied_without_a_class_name(tmp_path: Path,
                                                                                     fake_openai) -> None:
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, agents={"planner": """\
        id: planner
        instructions: Plan.
        todo: true
        """}, host=with_host_lines(host_toml(fake_openai.base_url, key_variable=None),
                                 'todo = true\ndeny_tools = ["todo_write"]\n'))
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("todo_write", {"items": []}, "t1")]), Reply(text="Planned."))
    result = oscova("run", "planner", "--input", "plan it", cwd=root)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stderr.splitlines() if line.startswith("← todo_write"))
    assert line == "← todo_write: denied: `[host] deny_tools` in oscova.toml lists it", result.stderr
    assert not EXCEPTION_NAME.search(result.stderr), result.stderr


def test_tools_withheld_because_stdin_is_no_terminal_are_named_once(tmp_path: Path, fake_openai) -> None:
    root = make_workspace(tmp_path / "ws", fake_openai.base_url,
                          host=host_toml(fake_openai.base_url, key_variable=None))
    fake_openai.enqueue(Reply(text="Fine."))
    result = oscova("run", "helper", cwd=root, stdin="write the notes\n")
    assert result.returncode == 0, result.stderr
    assert "write_file" not in fake_openai.requests[0].tool_names
    notes = [line for line in result.stderr.splitlines() if "write_file" in line]
    assert notes == ["note: write_file needs approval, which cannot be asked here (the input comes from a pipe, "
                     "not a terminal), so it was not offered to the model; pass --input at a terminal to be "
                     "asked"], result.stderr


# -- item 8: 401 and 429 keep the endpoint's status and words ---------------------------------------------

@pytest.mark.parametrize(("status", "message", "expected"), [
    (401, "invalid token for this project",
     "The model endpoint at {url} refused the request (HTTP 401): invalid token for this project; "
     "[models.default] sets no `api_key_env`: name the environment variable that holds the endpoint's key"),
    (429, "quota exceeded for fake-model",
     "The model endpoint at {url} is rate limiting requests (HTTP 429): quota exceeded for fake-model; "
     "try again later"),
])
def test_refused_and_rate_limited_requests_keep_the_endpoints_words(tmp_path: Path, fake_openai, status: int,
                                                                    message: str, expected: str) -> None:
    root = desk(tmp_path, fake_openai.base_url)
    fake_openai.enqueue(Reply(status=status, error_message=message))
    result = oscova("run", "order-lookup", "--input", "hi", "--json", cwd=root)
    assert result.returncode == 1
    final = json.loads(result.stdout.splitlines()[-1])
    assert final["error"] == expected.format(url=fake_openai.base_url)


def test_a_refused_key_names_the_variable_it_came_from(tmp_path: Path, fake_openai, canary_key: str) -> None:
    root = make_workspace(tmp_path / "ws", fake_openai.base_url)
    fake_openai.enqueue(Reply(status=401, error_message="invalid token for this project"))
    result = oscova("run", "echo", "--input", "hi", "--json", cwd=root)
    final = json.loads(result.stdout.splitlines()[-1])
    assert final["error"] == (f"The model endpoint at {fake_openai.base_url} refused the request (HTTP 401): "
                              "invalid token for this project; check the key in OSCOVA_RUNS_TEST_KEY "
                              "(`api_key_env` of [models.default])")
    assert canary_key not in result.stdout + result.stderr


# -- item 12: what to commit, and a name already taken -----------------------------------------------------

def test_the_first_saved_case_gives_the_gitignore_lines_and_a_second_save_says_its_name(tmp_path: Path,
                                                                                       fake_openai) -> None:
    root = desk(tmp_path, fake_openai.base_url)
    fake_openai.enqueue(Reply(text="Hello."))
    recorded = oscova("run", "order-lookup", "--input", "hi", cwd=root)
    run_id = re.search(r"-order-lookup-([0-9a-f]+)\.jsonl", recorded.stderr)[1]  # type: ignore[index]
    first = oscova("test", "--save", run_id, cwd=root)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[0] == "saved the case order-lookup: .oscova/tests/order-lookup.jsonl"
    assert "\n    .oscova/*\n    !.oscova/tests/\n" in first.stdout
    second = oscova("test", "--save", run_id, cwd=root)
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == [
        "saved the case order-lookup-2: .oscova/tests/order-lookup-2.jsonl (order-lookup is taken; "
        "--name NAME names it)"]
    assert len(find_cases([str(root)])) == 2


# -- item 13: the smaller ones ----------------------------------------------------------------------------

def test_rule_lists_the_codes_in_order(tmp_path: Path) -> None:
    listed = oscova("rule", cwd=tmp_path)
    codes = [line.split()[0] for line in listed.stdout.splitlines()]
    assert codes == sorted(codes) and "OSC044" in codes


def test_the_environment_block_says_none_configured_on_the_line_it_belongs_to(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws", "http://127.0.0.1:9/v1", agents={"bare": "id: bare\ninstructions: Hi.\n"},
                          host=models_default(base_url=UNREACHABLE))
    preview = oscova("preview", "bare", cwd=root)
    assert preview.returncode == 0, preview.stderr
    lines = preview.stdout.splitlines()
    at = lines.index("- none configured")
    assert lines[at - 1] == "Workspace directories (the folders the file tools may use):"


def test_run_json_says_where_the_transcript_went_on_stderr(tmp_path: Path, fake_openai) -> None:
    root = desk(tmp_path, fake_openai.base_url)
    fake_openai.enqueue(Reply(text="Hello."))
    result = oscova("run", "order-lookup", "--input", "hi", "--json", cwd=root)
    assert result.returncode == 0, result.stderr
    [saved] = (root / ".oscova" / "runs").glob("*-order-lookup-*.jsonl")
    assert result.stderr.strip().splitlines()[-1] == f"transcript: .oscova/runs/{saved.name}"
    assert all(json.loads(line)["kind"] for line in result.stdout.splitlines())  # stdout stays JSON lines


def test_a_missing_model_deep_in_the_chain_is_reported_from_the_agent_that_was_run(tmp_path: Path) -> None:
    agents = {name: textwrap.dedent(text) for name, text in DESK.items()}
    agents["order-lookup"] += "model: local\n"
    root = make_workspace(tmp_path / "ws", "http://127.0.0.1:9/v1", agents=agents,
                          host=models_default(base_url=UNREACHABLE))
    result = oscova("run", "helpdesk", "--input", "hi", cwd=root)
    assert result.returncode == 1
    error = next(line for line in result.stderr.splitlines() if line.startswith("✗ "))
    assert error.startswith("✗ The agent 'helpdesk' cannot run: 'order-lookup', which it calls "
                            "(helpdesk → order-lookup), uses the model 'local'"), error


def test_the_configuration_pages_custom_provider_classes_work_as_printed(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    code = page.split("The class subclasses `oscova_runtime.AIContextProvider`", 1)[1]
    code = code.split("```python\n", 1)[1].split("```", 1)[0]
    host = (models_default(base_url=UNREACHABLE) + '\n'
            '[providers.tickets]\nclass = "providers.readme:TicketContextProvider"\ntemplate = "templates/tickets.j2"\n'
            'variables = ["open_tickets", "ticket_owner"]\ntrusted = true\n\n'
            '[providers.oncall]\nclass = "providers.readme:OnCallProvider"\n')
    root = make_workspace(tmp_path / "ws", "http://127.0.0.1:9/v1", host=host, agents={
        "desk": "id: desk\ninstructions: Help.\ncontext_providers: [tickets, oncall]\n"})
    (root / "providers").mkdir()
    (root / "providers" / "readme.py").write_text(code)
    (root / "templates").mkdir()
    (root / "templates" / "tickets.j2").write_text("Open tickets ({{ ticket_owner }}):\n{{ open_tickets }}\n")
    preview = oscova("preview", "desk", cwd=root)
    assert preview.returncode == 0, preview.stderr
    assert "Open tickets (alice):\n- #42 EU 502s" in preview.stdout
    assert "The on-call engineer today is Bob." in preview.stdout
