"""The workspace `oscova-lsp init` writes: a host configuration on the offline model (with OpenAI and Ollama
commented beside it), one agent with its template, the offline model's script, one evaluation, and one agent
test recorded from a run of the agent. Nothing that exists is ever overwritten."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from oscova_runtime.paths import FileRefused, make_folders, write_file

from .runs.cases import GITIGNORE_LINES

FILES: dict[str, str] = {
    "oscova.toml": """\
# The host configuration of this workspace: `oscova-lsp check` checks it, `oscova-lsp run assistant` runs it.

[host]
user_id = "me"

[user]
name = "Ada"

[models.default]                 # the offline model: it answers inside oscova-lsp, no endpoint or key needed
kind = "offline"
model = "offline"
script = "offline.yaml"          # what it answers (without a script: "You said: <the input>")

# To run on a real model, replace the table above with one of these:
#
# [models.default]               # OpenAI: export OPENAI_API_KEY=... first
# model = "gpt-4.1-mini"
# api_key_env = "OPENAI_API_KEY"
#
# [models.default]               # Ollama on this machine: `ollama pull llama3.1:8b` first
# model = "llama3.1:8b"
# base_url = "http://127.0.0.1:11434/v1"
""",
    "agents/assistant.agent.yaml": """\
id: assistant
name: Assistant
description: Answers questions in one short paragraph.
instructions_file: ../templates/assistant.j2
example_input: Hello
""",
    "templates/assistant.j2": """\
You are {{ agent_name }}, the assistant of {{ user_name }}.
Answer in one short paragraph, and say so when you do not know.
{% if project is defined %}You help with the project {{ project }}.{% endif %}
""",
    "offline.yaml": """\
# What the offline model answers: the first reply whose `when` the input contains (in any case).
# A reply can `say` something, or `call` a tool and say `then` what it returned ({result}), with `reasoning`.
replies:
  - when: hello
    say: Hello! I am the assistant of this workspace. Ask me what I can do.
  - when: what can you do
    reasoning: The user asks what I can do; I answer in one sentence.
    say: I answer questions in one short paragraph.
delay_ms: 15                     # between streamed words, to watch an answer stream
""",
    "evals/assistant.eval.yaml": """\
# An evaluation: `oscova-lsp eval` runs each case on each model and checks what the runs did.
agent: assistant
models: [default]
cases:
  - name: greets
    input: Hello
    expect:
      - status: completed
      - contains: Hello
  - name: says-what-it-does
    input: What can you do?
    expect:
      - regex: "(?i)answer"
      - max_model_calls: 1
""",
}
"""Every file `init` writes, by path relative to the new workspace."""

GITIGNORE = ".gitignore"
FIRST_TEST = ("assistant", "Hello", "assistant/hello")
"""The run `init` records and saves as the workspace's first agent test: agent, input, case name."""


@dataclass
class Started:
    root: str
    written: list[str] = field(default_factory=list)
    """The files written, relative to `root`."""
    test_note: str | None = None
    """Why the first agent test was not recorded, or None."""


class InitError(Exception):
    """Nothing was written; the words say why."""


def init_workspace(folder: str) -> Started:
    """Writes the starter workspace into `folder` (made if missing), or raises `InitError` having written nothing
    when any of its files exists or a workspace already holds the folder."""
    from .analysis.disk import find_root

    root = os.path.abspath(folder)
    if os.path.exists(root) and not os.path.isdir(root):
        raise InitError(f"{folder} is a file, not a folder")
    taken = [rel for rel in [*FILES, ".oscova/tests"] if os.path.lexists(os.path.join(root, rel))]
    if taken:
        raise InitError(f"{folder} already has {', '.join(taken)}; init writes only into a folder without them, "
                        "so nothing was written")
    above = find_root(os.path.dirname(root))
    if above is not None:
        raise InitError(f"{folder} is inside the workspace {above}: a workspace inside another is checked on its own "
                        "but easy to miss; run init elsewhere, or add files to that workspace")
    started = Started(root)
    try:
        make_folders(root, root=root)
        for rel, text in FILES.items():
            write_file(os.path.join(root, rel), text.encode(), root=root, exclusive=True)
            started.written.append(rel)
        if not os.path.lexists(os.path.join(root, GITIGNORE)):  # a project's own .gitignore is left as it is
            ignored = "".join(f"{line}\n" for line in GITIGNORE_LINES)  # agent tests in, this machine's runs out
            write_file(os.path.join(root, GITIGNORE), ignored.encode(), root=root, exclusive=True)
            started.written.append(GITIGNORE)
    except FileRefused as refused:
        raise InitError(f"{folder}: {refused}") from None
    started.test_note = _record_first_test(root)
    if started.test_note is None:
        started.written.append(f".oscova/tests/{FIRST_TEST[2]}.jsonl")
    return started


def _record_first_test(root: str) -> str | None:
    """Runs the agent once on the offline model and saves the run as an agent test; why not, or None."""
    import asyncio

    from .runs.cases import CaseError, save_case
    from .runs.service import RunService

    agent, text, name = FIRST_TEST

    async def record() -> dict[str, object]:
        service = RunService(root)
        try:
            return await service.run(agent, text)
        finally:
            await service.aclose()

    result = asyncio.run(record())
    if result.get("status") != "completed":
        return f"the first run ended {result.get('status')}: {result.get('error')}"
    try:
        save_case(root, str(result["runId"]), name)
    except CaseError as error:
        return str(error)
    return None
