"""Generates a synthetic workspace of N definitions and N templates for the benchmarks.

Agents call one another, share included partials and use every kind of provider; a few files carry
mistakes, so the checker does real work on every file.
"""

from __future__ import annotations

import random
from pathlib import Path

HOST = """\
[host]
user_id = "bench"
todo = true

[variables]
team = "Bench"
product = "Bench Cloud"

[environment]
template = "templates/environment.j2"

[memory]
system_prompt = "templates/memory.j2"

[models.default]
model = "gpt-4.1-mini"
api_key_env = "OPENAI_API_KEY"

[providers.tickets]
class = "providers.tickets:TicketContextProvider"
template = "templates/tickets.j2"
variables = ["open_tickets", "ticket_owner"]
"""

TEMPLATE = """\
{{% include "templates/partials/persona_{partial}.j2" %}}
You are {{{{ agent_name }}}} working for {{{{ user_name }}}} ({{{{ user_email }}}}).
{{% set sections = ["Summary", "Details", "Next steps"] %}}
Structure every answer as:
{{% for s in sections %}}- {{{{ s }}}}{{% if not loop.last %}}
{{% endif %}}{{% endfor %}}
{{% if team %}}You are part of the {{{{ team }}}} team for {{{{ product }}}}.{{% endif %}}
Today is {{{{ current_date }}}}; the user's time zone is {{{{ user_timezone }}}}.
{{% macro item(name, detail="") -%}}
* {{{{ name }}}}{{% if detail %}}: {{{{ detail }}}}{{% endif %}}
{{%- endmacro %}}
{{{{ item("Be precise", "quote sources") }}}}
{{{{ item("Be brief") }}}}
{{{{ {extra} }}}}
"""


def generate(root: Path, count: int, seed: int = 7) -> Path:
    rng = random.Random(seed)
    (root / "agents").mkdir(parents=True, exist_ok=True)
    (root / "templates" / "partials").mkdir(parents=True, exist_ok=True)
    (root / "oscova.toml").write_text(HOST)
    (root / "templates/environment.j2").write_text("On {{ os }} with {{ shell }}.\n{{ workspace_directories }}\n")
    (root / "templates/memory.j2").write_text("<agent_memory>\n{{ agent_memory }}\n</agent_memory>\n")
    (root / "templates/tickets.j2").write_text("<tickets>{{ open_tickets }} {{ ticket_owner }}</tickets>\n")
    partials = max(count // 50, 1)
    for p in range(partials):
        (root / f"templates/partials/persona_{p}.j2").write_text(
            f"Persona {p}: {{{{ agent_name }}}} of {{{{ team }}}}.\n")
    with_files = count - partials - 3  # the rest of the agents have inline instructions
    for i in range(with_files):
        extra = "current_date" if i % 97 else "unbound_variable"
        (root / f"templates/agent_{i}.j2").write_text(TEMPLATE.format(partial=i % partials, extra=extra))
    for i in range(count):
        calls = sorted({f"agent-{rng.randrange(count)}" for _ in range(rng.randrange(0, 4))} - {f"agent-{i}"})
        lines = [
            f"id: agent-{i}",
            f"name: Agent {i}",
            f"description: Synthetic agent number {i}.",
            f"instructions_file: ../templates/agent_{i}.j2" if i < with_files
            else "instructions: |\n  You are {{ agent_name }} of {{ team }}. Today is {{ current_date }}.",
            f"exposed_as_tool: {'true' if i % 3 else 'false'}",
            f"agent_tools: [{', '.join(calls)}]",
            "tools: [read_file, list_directory]" if i % 5 else "tools: [read_file, read_file]",
            f"memory: {'true' if i % 4 == 0 else 'false'}",
            f"todo: {'true' if i % 6 == 0 else 'false'}",
            "context_providers:",
            "  - tickets" if i % 2 else "  - vision",
            "chat_options:",
            f"  temperature: {rng.random():.2f}",
            f"example_input: Question {i}",
        ]
        (root / f"agents/agent_{i}.agent.yaml").write_text("\n".join(lines) + "\n")
    return root
