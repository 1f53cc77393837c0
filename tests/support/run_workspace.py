"""The small workspace run tests use (service, command line and language server alike)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.support.host_files import models_default

AGENTS = {
    "helper": """\
        id: helper
        name: Helper
        instructions: |
          You help {{ user_name }}.
        tools: [current_datetime, read_file, write_file]
        workspaces: [data]
        example_input: When is the launch?
        """,
    "echo": """\
        id: echo
        description: Repeats what it is told.
        exposed_as_tool: true
        instructions: Repeat the query.
        """,
    "lead": """\
        id: lead
        name: Lead
        instructions: Delegate to echo.
        agent_tools: [echo]
        """,
}


def host_toml(base_url: str, key_variable: str | None, *, timeout: float = 10, extra: str = "") -> str:
    """An oscova.toml whose default model is the local server; the key comes from `key_variable`."""
    return ('[host]\nuser_id = "alice"\n\n'
            + models_default("fake-model", base_url=base_url, api_key_env=key_variable or None, timeout=timeout)
            + f'\n[environment]\nworkspace_directories = ["data"]\n{extra}')


def write_workspace(root: Path, host: str, agents: dict[str, str] | None = None) -> Path:
    """`root` with oscova.toml, agents/*.agent.yaml and data/notes.txt."""
    (root / "agents").mkdir(parents=True, exist_ok=True)
    (root / "data").mkdir(exist_ok=True)
    (root / "data" / "notes.txt").write_text("The launch is on Tuesday.\n")
    (root / "oscova.toml").write_text(host)
    for name, text in (AGENTS if agents is None else agents).items():
        (root / "agents" / f"{name}.agent.yaml").write_text(textwrap.dedent(text))
    return root
