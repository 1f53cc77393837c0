"""What a run reads of its workspace: one `WorkspaceView` per run start, read from one snapshot of an analysis host.

The analysis host is the language server's (shared: its owner keeps it current) or the reader's own, which reads
the root from disk on first use and each file again when told it changed (`WorkspaceReader`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from oscova_runtime.definition import AgentDefinition
from oscova_runtime.host_config import HostConfig

from ..analysis.agents import agent_file, agent_files
from ..analysis.diagnostics import Severity
from ..analysis.engine import Analysis
from ..analysis.files import DefinitionFile
from ..analysis.host import AnalysisHost, Snapshot
from ..analysis.rules.definition import UNKNOWN_MODEL
from .errors import RunError

MAX_ERROR_LINES = 5
NOT_BLOCKING = frozenset({UNKNOWN_MODEL.code})
"""Errors a run reports better itself: an unconfigured model (and a preview needs no model at all)."""


@dataclass(frozen=True, slots=True)
class WorkspaceView:
    """What one run start reads, from one snapshot: the root's analysis, its agents (`analysis/agents.py`) and
    its host configuration. A run, a preview or an approval question takes one view: the editor's pending
    edits are applied once, and the configured host, the definition and the agent's name agree."""

    snapshot: Snapshot
    analysis: Analysis
    loaded: bool
    """Whether the root was read (else the analysis holds its open documents only)."""
    agents: dict[str, DefinitionFile]
    """The file of each agent, by id (`analysis.agents.agent_files`)."""
    root: str
    """The root, links resolved (where error messages name files from)."""
    source_root: str
    """The root as the analysis host names it (not resolved: the host indexes files by their given path)."""

    @property
    def config(self) -> HostConfig:
        return self.analysis.workspace.host

    def unknown(self, agent_id: str) -> str | None:
        """Why no run of `agent_id` can start here, in words (no definition has that id); None when one has."""
        if agent_file(self.analysis.workspace, agent_id, self.agents) is not None:
            return None
        return f"No agent definition has the id {agent_id!r} (known agents: {', '.join(self.agents) or 'none'})"

    def agent_name(self, agent_id: str) -> str:
        """The agent's display name, or its id when no definition has it."""
        parsed = self.agents.get(agent_id)
        definition = parsed.definition if parsed is not None else None
        return definition.display_name if definition is not None else agent_id

    def definition(self, agent_id: str) -> AgentDefinition:
        """The definition a run of `agent_id` builds; RunError with words when it cannot run: no definition has
        the id, a file the run reads has unsaved changes (a run reads saved files), or the definition or the host
        configuration has errors."""
        analysis = self.analysis
        parsed = agent_file(analysis.workspace, agent_id, self.agents)
        if parsed is None:
            raise RunError(self.unknown(agent_id) or agent_id)
        checked = [parsed.path]
        host_file = analysis.workspace.host_file
        if host_file is not None:
            checked.append(host_file.path)
        unsaved = self.snapshot.unsaved(sources_of(analysis, parsed))
        if unsaved:
            names = ", ".join(os.path.relpath(p, self.source_root) for p in unsaved)
            raise RunError(f"{names} {'has' if len(unsaved) == 1 else 'have'} unsaved changes; save "
                           f"{'it' if len(unsaved) == 1 else 'them'} to run what the editor shows (a run reads "
                           "the saved files)")
        errors = [d for path in checked for d in analysis.diagnostics(path) if d.severity is Severity.ERROR
                  and d.code not in NOT_BLOCKING]
        if errors or parsed.definition is None:
            lines = [f"{os.path.relpath(d.path, self.root)}:{d.range.start.line + 1}:{d.range.start.character + 1}: "
                     f"{d.code} {d.message}" for d in errors[:MAX_ERROR_LINES]]
            more = f" (and {len(errors) - MAX_ERROR_LINES} more)" if len(errors) > MAX_ERROR_LINES else ""
            raise RunError(f"The agent {agent_id!r} cannot run until its configuration errors are fixed{more}"
                           f" (`oscova-lsp check` lists them)" + "".join(f"\n  {line}" for line in lines))
        return parsed.definition


def sources_of(analysis: Analysis, parsed: DefinitionFile) -> set[str]:
    """The files a run of `parsed` reads: the definition, the templates it renders (its instructions file, what
    its inline instructions and those templates include) and the host configuration."""
    workspace = analysis.workspace
    out = {parsed.path} | workspace.template_closure(workspace.references_of.get(parsed.path, ()))
    if workspace.host_file is not None:
        out.add(workspace.host_file.path)
    return out


class WorkspaceReader:
    """Reads one workspace root's views from an analysis host: `host` (the language server's, whose owner keeps it
    current) or one of its own, made here."""

    def __init__(self, root: str, source_root: str, host: AnalysisHost | None = None) -> None:
        self.root = root
        self.source_root = source_root
        self._host = host or AnalysisHost([source_root])
        self.owns_host = host is None
        """The analysis host is this reader's: it reads the root on first use and files again on `disk_changed`."""

    def snapshot(self) -> Snapshot:
        """The analysis host's state now (an analysis host of its own reads the root first)."""
        host = self._host
        root = host.root_of_folder(self.source_root)
        if self.owns_host and not host.is_loaded(root):
            host.ensure_root(root)
            host.install(root, host.load(root))
        return host.snapshot()

    def view(self, snapshot: Snapshot) -> WorkspaceView:
        """The root as `snapshot` holds it."""
        analysis = self.analysis(snapshot)
        loaded = snapshot.root_of_folder(self.source_root) in snapshot.loaded
        return WorkspaceView(snapshot, analysis, loaded, agent_files(analysis.workspace), self.root, self.source_root)

    def analysis(self, snapshot: Snapshot) -> Analysis:
        """The root's analysis in `snapshot` (an empty one when it has none)."""
        return snapshot.analyses.get(snapshot.root_of_folder(self.source_root)) or Analysis(self.source_root)

    def is_loaded(self, path: str) -> bool:
        """Whether the root holding `path` was read."""
        return self._host.is_loaded(self._host.root_of(path))

    def lay_documents(self, documents: dict[str, tuple[str, int | None]]) -> None:
        """The editor's open documents (`{path: (text, version)}`) laid over the files its own analysis host read
        (a run host's): those it was given before and is not given now are closed again."""
        host = self._host
        self.snapshot()  # the root is read first: a document then replaces its file
        given = host.snapshot().documents
        for path in [p for p in given if p not in documents]:
            host.close(path)
        for path, (text, version) in documents.items():
            known = given.get(path)
            if known is None or (known.text, known.version) != (text, version):
                host.open(path, text, version)

    def disk_changed(self, path: str, deleted: bool) -> None:
        """A file changed on disk: an analysis host of its own reads it again (the language server's reads it
        itself)."""
        if self.owns_host:
            self._host.disk_changed(path, deleted)

    def reload(self) -> None:
        """Reads the workspace again from disk on next use (an analysis host of its own only)."""
        if self.owns_host:
            self._host = AnalysisHost([self.source_root])
