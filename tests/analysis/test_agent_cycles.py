"""OSC022 (`agent_tools` forms a cycle) on random agent graphs, against reachability computed here.

The checker finds cycles through the graph's strongly connected components, computed once per workspace
state; an item is reported when the agent it names leads back to the agent listing it through exposed
agents. Edits that close or open a cycle are picked up.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .support import make_workspace

AGENTS = 7


def _definition(agent: int, tools: list[int], exposed: bool) -> str:
    listed = ", ".join(f"a{t}" for t in tools)
    return f"id: a{agent}\nexposed_as_tool: {'true' if exposed else 'false'}\nagent_tools: [{listed}]\ninstructions: Hi.\n"


def _expected(graph: dict[int, list[int]], exposed: dict[int, bool]) -> set[tuple[int, int]]:
    """(agent, listed agent) pairs whose listed agent leads back through exposed agents."""

    def reaches(start: int, goal: int) -> bool:
        seen, stack = set(), [start]
        while stack:
            node = stack.pop()
            if node == goal:
                return True
            if node in seen:
                continue
            seen.add(node)
            stack.extend(child for child in graph[node] if exposed[child])
        return False

    return {(agent, tool) for agent, tools in graph.items() for tool in tools
            if exposed[tool] and reaches(tool, agent)}


def _reported(ws) -> set[tuple[int, int]]:  # noqa: ANN001 - tests.analysis.support.Workspace
    out = set()
    for agent in range(AGENTS):
        for diagnostic in ws.diagnostics(f"a{agent}.agent.yaml", "OSC022"):
            listed = diagnostic.message.split(": ", 1)[1].split(" → ")[1].strip("`")
            out.add((agent, int(listed[1:])))
    return out


graphs = st.fixed_dictionaries({a: st.lists(st.integers(0, AGENTS - 1), max_size=3, unique=True)
                                for a in range(AGENTS)})
flags = st.fixed_dictionaries({a: st.booleans() for a in range(AGENTS)})


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs, exposed=flags, edit=st.integers(0, AGENTS - 1))
def test_cycles_are_reported_exactly_where_a_listed_agent_leads_back(graph, exposed, edit) -> None:
    with tempfile.TemporaryDirectory() as folder:
        ws = make_workspace(Path(folder), {f"a{a}.agent.yaml": _definition(a, graph[a], exposed[a])
                                           for a in range(AGENTS)})
        assert _reported(ws) == _expected(graph, exposed)
        # an edit flips one agent's exposure: cycles through it open or close
        exposed = {**exposed, edit: not exposed[edit]}
        ws.write(f"a{edit}.agent.yaml", _definition(edit, graph[edit], exposed[edit]))
        assert _reported(ws) == _expected(graph, exposed)


def test_keystrokes_that_leave_the_graph_alone_keep_it_and_one_that_closes_a_cycle_is_seen(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a0.agent.yaml": _definition(0, [1], True),
                                   "a1.agent.yaml": _definition(1, [], True)})
    assert _reported(ws) == set()
    graph = ws.analysis.workspace.agent_graph
    ws.write("a1.agent.yaml", _definition(1, [], True).replace("Hi.", "Hello there."))  # instructions only
    assert ws.analysis.workspace.agent_graph == graph and _reported(ws) == set()
    ws.write("a1.agent.yaml", _definition(1, [0], True))  # a1 now calls a0 back
    assert ws.analysis.workspace.agent_graph != graph
    assert _reported(ws) == {(0, 1), (1, 0)}
