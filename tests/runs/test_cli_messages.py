"""What `oscova-lsp run` and `preview` say, on copies of the bundled examples (what a new user found first):
where the workspace is, which `[models.NAME]` is missing and through which agents, why a run ended, and
where its transcript went."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.support.cli_zygote import module_command
from tests.support.fake_openai import Reply, ToolCall
from tests.support.host_files import UNREACHABLE, models_default

from .conftest import host_toml, make_workspace

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def oscova(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["NO_COLOR"] = "1"
    return subprocess.run(module_command(*args), cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)


def example_copy(tmp_path: Path, models: str) -> Path:
    """The bundled example workspace with its `[models.*]` sections replaced by `models`."""
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".oscova", "__pycache__", "broken"))
    host = (root / "oscova.toml").read_text()
    host = re.sub(r"\[models\.[^\]]+\][^\n]*\n(?:[^\[\n][^\n]*\n)*\n?", "", host)
    assert "[models" not in host
    (root / "oscova.toml").write_text(host + "\n" + models)
    return root


# -- item 4: no workspace, no files written ----------------------------------------------------------------

def test_run_with_a_root_that_is_no_workspace_says_so_and_writes_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = oscova("run", "concierge", "--root", str(empty), "--input", "hi", cwd=tmp_path)
    assert result.returncode == 2
    assert f"no workspace at {empty}" in result.stderr and "No model endpoint" not in result.stderr
    assert list(empty.iterdir()) == []


def test_preview_outside_any_workspace_says_no_oscova_toml_was_found(tmp_path: Path) -> None:
    result = oscova("preview", "concierge", cwd=tmp_path)
    assert result.returncode == 2
    assert "no oscova.toml was found" in result.stderr and "Traceback" not in result.stderr


# -- items 5 and 6: the missing section and the chain that led to it ---------------------------------------

def test_without_models_the_error_names_the_section_the_agent_needs(tmp_path: Path) -> None:
    root = example_copy(tmp_path, "")
    result = oscova("run", "summarizer", "--input", "Summarize this.", cwd=root)
    assert result.returncode == 1
    assert "[models.local]" in result.stderr and "[models.default]" not in result.stderr


def test_a_dependency_without_its_model_names_the_chain_of_agents(tmp_path: Path, fake_openai) -> None:
    root = example_copy(tmp_path, models_default("fake-model", base_url=fake_openai.base_url))
    result = oscova("run", "concierge", "--input", "My deployment fails.", cwd=root)
    assert result.returncode == 1
    assert "concierge → researcher → summarizer" in result.stderr, result.stderr
    assert "[models.local]" in result.stderr
    assert fake_openai.requests == []


# -- item 8: the memory template does not nest the tags its value carries -------------------------------

def test_preview_of_the_example_shows_one_agent_memory_block(tmp_path: Path) -> None:
    root = example_copy(tmp_path, models_default(base_url=UNREACHABLE))
    result = oscova("preview", "concierge", cwd=root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("<agent_memory>") == 1 and result.stdout.count("</agent_memory>") == 1


# -- item 9: a tool that was not offered, the transcript, the terminal -------------------------------------

def test_a_call_to_a_tool_that_was_not_offered_is_answered_not_found_and_the_model_asked_again(
        tmp_path: Path, fake_openai) -> None:
    """As the framework's function-invocation loop does: the call gets a not-found result (not an error), the
    terminal shows it, and the model answers with it in view."""
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, host=host_toml(fake_openai.base_url, key_variable=None))
    fake_openai.enqueue(Reply(tool_calls=[ToolCall("delete_everything", {"all": True}, "c1")]),
                        Reply(text="I cannot delete anything."))
    result = oscova("run", "echo", "--input", "hi", cwd=root)
    assert result.returncode == 0, result.stderr
    assert '← delete_everything: Error: Requested function "delete_everything" not found.' in result.stderr
    assert "I cannot delete anything." in result.stdout
    assert fake_openai.requests[1].messages[-1]["content"] == 'Error: Requested function "delete_everything" not found.'


def test_the_terminal_says_where_the_transcript_went(tmp_path: Path, fake_openai) -> None:
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, host=host_toml(fake_openai.base_url, key_variable=None))
    fake_openai.enqueue(Reply(text="Done."))
    result = oscova("run", "echo", "--input", "hi", cwd=root)
    assert result.returncode == 0, result.stderr
    [saved] = (root / ".oscova" / "runs").glob("*-echo-*.jsonl")
    assert f"transcript: .oscova/runs/{saved.name}" in result.stderr


def test_the_language_server_typed_at_a_terminal_says_what_it_is(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "oscova_lsp"], cwd=tmp_path, stdin=follower,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(follower)
    try:
        assert process.stderr is not None
        ready, _, _ = select.select([process.stderr], [], [], 30)
        assert ready, "the server said nothing on stderr"
        line = process.stderr.readline().decode()
        assert "speaks LSP on stdin" in line and "oscova-lsp --help" in line
        time.sleep(0.1)
        assert process.poll() is None  # and it goes on waiting for an editor
    finally:
        process.kill()
        process.wait(timeout=10)
        os.close(leader)


def test_providers_and_tools_print_the_catalogue(tmp_path: Path) -> None:
    from oscova_runtime.catalogue import BUILTIN_TOOLS, PROVIDERS

    providers = oscova("providers", cwd=tmp_path)
    assert providers.returncode == 0
    for spec in PROVIDERS:
        assert re.search(rf"^ ?{spec.position}  {spec.type} +{spec.class_name}$", providers.stdout, re.M)
    tools = oscova("tools", cwd=tmp_path)
    assert tools.returncode == 0
    assert [line.split()[0] for line in tools.stdout.splitlines()[:len(BUILTIN_TOOLS)]] == list(BUILTIN_TOOLS)
    assert "approval required" in next(line for line in tools.stdout.splitlines() if line.startswith("write_file"))


# -- docs/getting-started.md's "Run the example with Ollama", the local server standing in for Ollama ------

def test_run_the_example_as_getting_started_says(tmp_path: Path, fake_openai) -> None:
    page = (ROOT / "docs" / "getting-started.md").read_text()
    first = page.split("### Run the example with Ollama", 1)[1].split("\n## ", 1)[0]
    command = next(line for line in first.splitlines() if "oscova-lsp run " in line)
    args = command.split("oscova-lsp ", 1)[1]
    agent, text = re.match(r'run (\S+) --input "([^"]+)"', args).groups()  # type: ignore[union-attr]
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".oscova", "__pycache__", "broken"))
    host = (root / "oscova.toml").read_text()
    assert 'base_url = "http://127.0.0.1:11434/v1"' in host  # the lines the README shows
    (root / "oscova.toml").write_text(host.replace("http://127.0.0.1:11434/v1", fake_openai.base_url))
    fake_openai.enqueue(Reply(text="- failed twice\n- then passed"))
    result = oscova("run", agent, "--input", text, cwd=root)  # no key in the environment: Ollama needs none
    assert result.returncode == 0, result.stderr
    assert result.stdout == "- failed twice\n- then passed\n"
    [saved] = (root / ".oscova" / "runs").glob(f"*-{agent}-*.jsonl")
    assert result.stderr.rstrip().splitlines()[-1] == f"transcript: .oscova/runs/{saved.name}"
