"""Neovim 0.7 headless runs an agent through `workspace/executeCommand` and receives the `oscova/runEvent`
notifications, against the local OpenAI-compatible server of `tests/support/fake_openai.py`.

In CI (`CI` set) a missing Neovim is a failure; elsewhere the test is skipped (as in `test_real_editors`)."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply

from .test_real_editors import HERE, require, run

KEY_VARIABLE = "OSCOVA_NVIM_RUN_KEY"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def test_neovim_runs_an_agent_and_receives_its_events(tmp_path: Path, fake: FakeOpenAI):
    nvim = require("nvim", "neovim")
    root = tmp_path / "ws"
    (root / "agents").mkdir(parents=True)
    (root / "oscova.toml").write_text(textwrap.dedent(f"""\
        [host]
        user_id = "alice"

        [models.default]
        model = "fake-model"
        base_url = "{fake.base_url}"
        api_key_env = "{KEY_VARIABLE}"
        """))
    target = root / "agents" / "greeter.agent.yaml"
    target.write_text("id: greeter\nname: Greeter\ninstructions: Greet the user.\n")
    fake.enqueue(Reply(text="Hello from the fake model!", chunk_size=5))

    proc = run([nvim, "--headless", "--clean", "-u", str(HERE / "nvim_run.lua"), str(target)], root,
               AGENT_ID="greeter", RUN_INPUT="Say hello", **{KEY_VARIABLE: "sk-nvim-test-key"})

    events = re.findall(r"^EVENT (\w+) (\d+) (\w+) (.*)$", proc.stdout, re.MULTILINE)
    result = re.search(r"^RESULT (\w+) (\w+) (.*)$", proc.stdout, re.MULTILINE)
    assert result is not None, proc.stdout + proc.stderr
    run_id, status, text = result.group(1), result.group(2), json.loads(result.group(3))
    assert (status, text) == ("completed", "Hello from the fake model!")
    assert {e[0] for e in events} == {run_id}
    assert [int(e[1]) for e in events] == list(range(1, len(events) + 1))
    kinds = [e[2] for e in events]
    assert kinds[0] == "started" and kinds[-1] == "completed" and "delta" in kinds
    assert "".join(json.loads(e[3]) for e in events if e[2] == "delta") == "Hello from the fake model!"
    assert fake.requests[0].messages[-1]["content"] == "Say hello"
