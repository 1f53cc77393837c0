"""Workspaces of templates that include each other (a clique, a cycle), for the include-graph tests and
`benchmarks/graph_bench.py`."""

from __future__ import annotations

from pathlib import Path

from tests.support.host_files import models_default

HOST = '[host]\nuser_id = "alice"\n\n' + models_default("gpt-4.1-mini")


def template_text(node: int, targets: list[int], extra: str = "") -> str:
    """Template `node`: sets a name of its own, uses a bound variable and an unbound one, includes `targets`."""
    body = f"{{% set v{node:03d} = 1 %}}Hello {{{{ user_name }}}} {{{{ missing{node % 3} }}}}{extra}\n"
    return body + "".join(f'{{% include "templates/t{t:03d}.j2" %}}\n' for t in targets)


def write_include_graph(root: Path, edges: dict[int, list[int]]) -> None:
    """Template `templates/tNNN.j2` includes the templates `edges[N]`; agent `a` renders t000."""
    (root / "templates").mkdir(parents=True, exist_ok=True)
    (root / "oscova.toml").write_text(HOST)
    (root / "a.agent.yaml").write_text("id: a\ninstructions_file: templates/t000.j2\n")
    for node, targets in edges.items():
        (root / "templates" / f"t{node:03d}.j2").write_text(template_text(node, targets))


def clique(n: int) -> dict[int, list[int]]:
    """Every template includes every other one."""
    return {i: [j for j in range(n) if j != i] for i in range(n)}


def cycle(n: int) -> dict[int, list[int]]:
    """t000 includes t001, …, the last includes t000."""
    return {i: [(i + 1) % n] for i in range(n)}
