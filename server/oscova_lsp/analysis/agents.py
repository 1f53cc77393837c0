"""The agents of a workspace, listed once: the editor's `oscova.listAgents` and the run service read this.

Per id, the first definition file by path that builds a definition is the agent (a file that builds none,
with the same id, does not hide it); a run of an id no such file has is looked up among the files that
build none, so the run can name their errors.
"""

from __future__ import annotations

from dataclasses import dataclass

from .files import DefinitionFile
from .workspace import Workspace


@dataclass(frozen=True, slots=True)
class AgentEntry:
    """One listed agent, as plain data (the protocol layer makes `path` a URI)."""

    id: str
    name: str
    path: str
    exposed_as_tool: bool
    example_input: str | None

    def to_json(self, uri: str) -> dict[str, object]:
        """`{id, name, uri, exposedAsTool, exampleInput}`, the shape `oscova.listAgents` answers."""
        return {"id": self.id, "name": self.name, "uri": uri, "exposedAsTool": self.exposed_as_tool,
                "exampleInput": self.example_input}


def agent_files(workspace: Workspace) -> dict[str, DefinitionFile]:
    """The file of each agent id, by id: the first by path that builds a definition."""
    found: dict[str, DefinitionFile] = {}
    for parsed in sorted(workspace.definitions(), key=lambda f: f.path):
        if parsed.definition is not None and parsed.definition.id not in found:
            found[parsed.definition.id] = parsed
    return dict(sorted(found.items()))


def agent_file(workspace: Workspace, agent_id: str,
               agents: dict[str, DefinitionFile] | None = None) -> DefinitionFile | None:
    """The file a run of `agent_id` reads: its agent's (from `agents`, the workspace's `agent_files` when
    given), else the first by path whose `id` says `agent_id` though it builds no definition (the run then
    names its errors); None when no file has that id."""
    found = (agent_files(workspace) if agents is None else agents).get(agent_id)
    if found is not None:
        return found
    written = sorted((f for f in workspace.definitions() if f.raw_id == agent_id), key=lambda f: f.path)
    return written[0] if written else None


def agent_list(workspace: Workspace) -> list[AgentEntry]:
    """Every agent of the workspace, by id."""
    out = []
    for agent_id, parsed in agent_files(workspace).items():
        definition = parsed.definition
        if definition is not None:  # (`agent_files` holds files that build one)
            out.append(AgentEntry(agent_id, definition.display_name, parsed.path, definition.exposed_as_tool,
                                  definition.example_input))
    return out
