"""Strongly connected components of a directed graph: which agents can reach each other through `agent_tools`
(OSC022)."""

from __future__ import annotations


def strongly_connected_components(edges: dict[str, list[str]]) -> dict[str, int]:
    """Each node's strongly connected component, numbered (Tarjan's algorithm, without recursion: an agent
    graph may be deeper than Python's recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    component: dict[str, int] = {}
    counter = 0
    for root in edges:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, child_at = work.pop()
            if child_at == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = edges.get(node, ())
            while child_at < len(children):
                child = children[child_at]
                child_at += 1
                if child not in index:
                    work.append((node, child_at))
                    work.append((child, 0))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                if low[node] == index[node]:
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component[member] = index[node]
                        if member == node:
                            break
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
    return component


def path_between(edges: dict[str, list[str]], start: str, goal: str) -> list[str] | None:
    """A path start → … → goal along `edges` (depth first, children in their order), if one exists."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        current, trail = stack.pop()
        if current == goal:
            return trail
        if current in seen:
            continue
        seen.add(current)
        for child in reversed(edges.get(current, ())):
            stack.append((child, [*trail, child]))
    return None
