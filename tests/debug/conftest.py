"""Fixtures for the debug adapter tests: a workspace on the local OpenAI-compatible server, a DAP client."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import run_workspace
from tests.support.dap_client import DapClient
from tests.support.fake_openai import FakeOpenAI

KEY_VARIABLE = "OSCOVA_DEBUG_TEST_KEY"
CANARY_KEY = "sk-canary-debug-5d1e0a7b93"

AGENTS = {
    **run_workspace.AGENTS,
    "listed": """\
        id: listed
        instructions_file: ../templates/listed.j2
        default_providers: false
        context_providers:
          - environment
          - personal
        """,
}
LISTED_TEMPLATE = ('You are terse.\nAlways say {{ "please" }} at the end.\n{% if false %}Never rendered.{% endif %}\n'
                   "{{ user_name }}\n")


def make_workspace(root: Path, base_url: str, extra_host: str = "") -> Path:
    host = run_workspace.host_toml(base_url, KEY_VARIABLE)
    if extra_host:
        host = host.replace("[host]\n", f"[host]\n{extra_host}", 1)
    run_workspace.write_workspace(root, host, AGENTS)
    (root / "templates").mkdir(exist_ok=True)
    (root / "templates" / "listed.j2").write_text(LISTED_TEMPLATE)
    return root


def client_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != KEY_VARIABLE}
    env.update({KEY_VARIABLE: CANARY_KEY, "NO_COLOR": "1"})
    return env


@pytest.fixture
def workspace(tmp_path: Path, fake_openai: FakeOpenAI) -> Path:
    return make_workspace(tmp_path / "ws", fake_openai.base_url)


@pytest.fixture
def dap(workspace: Path) -> Iterator[DapClient]:
    client = DapClient(workspace, client_env())
    yield client
    client.close()
    assert "Traceback" not in client.stderr(), client.stderr()
    assert CANARY_KEY not in client.stderr() + client.output()
