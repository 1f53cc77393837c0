"""A small workspace in a real git repository: agents that include a shared partial through other templates,
an agent called as a tool, and the workspace's own tool and provider (which write a marker when imported)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import init

HOST = """\
    [host]
    user_id = "alice"

    [user]
    name = "Alice"

    [variables]
    team = "Platform"

    [environment]
    workspace_directories = ["data"]

    [models.default]
    model = "fake-model"
    base_url = "{base_url}"

    [tools.search_notes]
    callable = "tools.search:search_notes"

    [providers.tickets]
    class = "providers.tickets:TicketProvider"
    template = "templates/tickets.j2"
    variables = ["open_tickets"]
    """

MARKER = (
    "import os\n\n"
    'if os.environ.get("REVIEW_IMPORT_MARKER"):\n'
    '    with open(os.environ["REVIEW_IMPORT_MARKER"], "a") as marker:\n'
    '        marker.write(__name__ + "\\n")\n'
)

FILES = {
    "templates/partials/persona.j2": "You are {{ agent_name }} of the {{ team }} team.\n",
    "templates/intro.j2": '{% include "templates/partials/persona.j2" %}\nBe brief.\n',
    "templates/writer.j2": '{% include "templates/intro.j2" %}\nWrite short replies.\n',
    "templates/tickets.j2": "<tickets>{{ open_tickets }}</tickets>\n",
    "agents/writer.agent.yaml": """\
        id: writer
        instructions_file: ../templates/writer.j2
        tools: [read_file, current_datetime]
        workspaces: [data]
        example_input: Draft a reply.
        """,
    "agents/triage.agent.yaml": """\
        id: triage
        instructions: |
          {% include "templates/partials/persona.j2" %}
          Classify the request.
        agent_tools: [echo]
        context_providers: [tickets]
        """,
    "agents/echo.agent.yaml": """\
        id: echo
        description: Repeats what it is told.
        exposed_as_tool: true
        instructions: Repeat the query.
        """,
    "agents/lead.agent.yaml": """\
        id: lead
        instructions: Delegate to echo.
        agent_tools: [echo]
        """,
    "agents/plain.agent.yaml": """\
        id: plain
        instructions: Answer plainly.
        tools: [search_notes]
        """,
    "data/notes.txt": "The launch is on Tuesday.\n",
    "tools/__init__.py": "",
    "tools/search.py": MARKER + '\n\ndef search_notes(query: str) -> str:\n    """Searches the notes."""\n    return "none"\n',
    "providers/__init__.py": "",
    "providers/tickets.py": MARKER + (
        "\nfrom oscova_runtime import AIContextProvider\n\n\n"
        "class TicketProvider(AIContextProvider):\n"
        "    async def template_variables(self, context):\n"
        '        return {"open_tickets": "T-1 (open)"}\n'),
}


def workspace_files(base_url: str = "http://127.0.0.1:9/v1") -> dict[str, str]:
    return {"oscova.toml": HOST.format(base_url=base_url), **FILES}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The workspace committed on `main`, checked out on the branch `change`."""
    root = init(tmp_path / "repo", workspace_files())
    from .support import git

    git(root, "checkout", "-q", "-b", "change")
    return root
