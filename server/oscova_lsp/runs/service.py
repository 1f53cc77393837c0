"""The run service: runs and previews of one workspace root, for the terminal and the run host alike.

Plain Python (no LSP types). `RunService` puts three parts together, each in its module: what reads the workspace
(`workspace_view.py`: one `WorkspaceView` per run start, from one snapshot of an analysis host), what keeps the
agents built (`agents_cache.py`: the configured host, and what a saved file makes stale), and what runs them
(`execution.py`: runs as cancellable tasks, their events, transcripts, sessions and approvals). The preview is
`preview.py`'s.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from oscova_runtime.function_invocation import FunctionInvocationSettings
from oscova_runtime.orchestrator import AgentOrchestrator
from oscova_runtime.paths import is_inside
from oscova_runtime.session import AgentSession

from ..analysis.agents import agent_list
from ..analysis.engine import Analysis
from ..analysis.files import FileKind, file_kind
from ..analysis.host import AnalysisHost, Snapshot
from ..wire.commands import AgentListing
from .agents_cache import AgentsCache, agents_reading
from .execution import (
    ApproveCallback,
    EventCallback,
    RunHandle,
    Runner,
    RunStatus,
)
from .preview import preview_agent
from .recorder import Recorder
from .transcript import RUNS_DIRECTORY
from .workspace_view import WorkspaceReader, WorkspaceView

__all__ = ["ApproveCallback", "EventCallback", "RunHandle", "RunService", "RunStatus", "WorkspaceView"]


class RunService:
    """Runs and previews the agents of one workspace root.

    The workspace (definitions, host configuration) is read from snapshots of an `AnalysisHost` (the analysis
    host): pass the language server's `host` to share its state (one parse per root; its owner keeps it current),
    or let the service read the root from disk into an analysis host of its own (`reload`, `file_saved`). Each run
    start reads one `WorkspaceView`. A run reads saved files (docs/editors.md, "Which text a run uses"): it is
    refused when its definition, a template it renders or the host configuration is open in the editor with
    unsaved changes. Built agents stay cached across runs (`AgentsCache`) until a file they read is saved.
    """

    def __init__(
        self, root: str | os.PathLike[str], *, host: AnalysisHost | None = None, runs_dir: str | None = None,
        function_invocation: FunctionInvocationSettings | None = None, trusted: bool = True,
        tracing: bool = True, notify: Callable[[str], None] | None = None,
    ) -> None:
        self.root = os.path.realpath(os.fspath(root))
        self._workspace = WorkspaceReader(self.root, os.path.abspath(os.fspath(root)), host)
        self._agents = AgentsCache(self.root, trusted=trusted, function_invocation=function_invocation)
        self.runs_dir = runs_dir or os.path.join(self.root, RUNS_DIRECTORY)
        self._runner = Runner(self.root, self._agents, runs_dir=self.runs_dir, runs_boundary=runs_dir or self.root,
                              tracing=tracing, notify=notify)

    @property
    def trusted(self) -> bool:
        """False (an untrusted workspace): previews leave the workspace's tool and provider code unimported."""
        return self._agents.trusted

    @trusted.setter
    def trusted(self, trusted: bool) -> None:
        self._agents.trusted = trusted

    @property
    def tracing(self) -> bool:
        """False: runs export no spans, whatever the environment or `[telemetry]` says (a replay is offline)."""
        return self._runner.tracing

    @tracing.setter
    def tracing(self, tracing: bool) -> None:
        self._runner.tracing = tracing

    @property
    def notify(self) -> Callable[[str], None]:
        """Hears what a user should know once (a collector named by the workspace gets no credentials)."""
        return self._runner.notify

    @notify.setter
    def notify(self, notify: Callable[[str], None]) -> None:
        self._runner.notify = notify

    @property
    def orchestrator(self) -> AgentOrchestrator:
        return self._agents.orchestrator

    # -- workspace -----------------------------------------------------------------------------------

    @property
    def analysis(self) -> Analysis:
        """The root's analysis in a fresh snapshot (an analysis host of its own reads the root first)."""
        return self._workspace.analysis(self.snapshot())

    def snapshot(self) -> Snapshot:
        """The analysis host's state now."""
        return self._workspace.snapshot()

    def view(self) -> WorkspaceView:
        """One snapshot of the root: what a run start, a preview or an approval question reads."""
        return self._workspace.view(self.snapshot())

    def lay_documents(self, documents: dict[str, tuple[str, int | None]]) -> None:
        """The editor's open documents (`{path: (text, version)}`) laid over the files its own analysis host read
        (a run host's): those it was given before and is not given now are closed again."""
        self._workspace.lay_documents(documents)

    def disk_changed(self, path: str, deleted: bool) -> None:
        """A file changed on disk: its own analysis host reads it again, and the agents it reaches are evicted."""
        self._workspace.disk_changed(path, deleted)
        self.file_saved(path)

    def reload(self) -> None:
        """Reads the workspace again from disk (an analysis host of its own only) and drops every cached agent."""
        self._workspace.reload()
        self.invalidate_all()

    def list_agents(self) -> list[dict[str, Any]]:
        """The agents by id, as `oscova.listAgents` lists them (`AgentListing`)."""
        return [AgentListing(id=a.id, name=a.name, uri=Path(a.path).as_uri(), exposed_as_tool=a.exposed_as_tool,
                             example_input=a.example_input).wire() for a in agent_list(self.analysis.workspace)]

    # -- cache -----------------------------------------------------------------------------------------

    def evict_agent(self, agent_id: str) -> bool:
        return self._agents.evict(agent_id)

    def invalidate_agents(self) -> None:
        """Drops every cached agent; the tool catalogue is kept."""
        self._agents.invalidate_agents()

    def invalidate_all(self) -> None:
        """Drops every cached agent and the tool catalogue. The workspace's modules stay imported: a process
        imports them once (the language server's run host is restarted when they change)."""
        self._agents.invalidate_all()

    def file_saved(self, path: str) -> list[str]:
        """A file was saved (or deleted): re-reads it (an analysis host of its own only) and evicts the cached agents
        whose build reads it, before the save or after (`agents_cache.agents_reading`). Returns the evicted ids,
        `["*"]` for every agent."""
        path = os.path.abspath(path)
        if not is_inside(path, self.root):
            return []
        if path.endswith(".py"):
            self.invalidate_all()
            return ["*"]
        kind = file_kind(path)
        if kind is None or not self._workspace.is_loaded(path):
            return []
        before = agents_reading(self.analysis.workspace, path)
        self._workspace.disk_changed(path, deleted=not os.path.lexists(path))
        if kind is FileKind.HOST:
            self.invalidate_all()
            return ["*"]
        return self._agents.evict_stale(before, agents_reading(self.analysis.workspace, path))

    def approval_tools(self, agent_id: str, *, view: WorkspaceView | None = None) -> list[str]:
        """The tools `agent_id` selects that need approval (and the host's policy allows): a run without an
        approval channel does not offer them. Empty when the agent cannot be read (its run says why)."""
        try:
            return self._agents.approval_tools(view or self.view(), agent_id)
        except Exception:  # noqa: BLE001 - the run reports it in words
            return []

    # -- preview and runs ------------------------------------------------------------------------------

    async def preview(self, agent_id: str, input: str | None = None, *, session_id: str | None = None,
                      ) -> dict[str, Any]:
        """A `PreviewResult`'s JSON: the provider pipeline without a model, and what its request costs in the model's
        tokens (`preview.preview_agent`); RunError with words when the agent cannot be assembled."""
        return await preview_agent(self._agents, self.view(), agent_id, input,
                                   self._runner.session(agent_id, session_id))

    def start_run(
        self, agent_id: str, input: str, *, session_id: str | None = None, on_event: EventCallback | None = None,
        approve: ApproveCallback | None = None, recorder: Recorder | None = None, view: WorkspaceView | None = None,
        model: str | None = None,
    ) -> RunHandle:
        """Starts a run as a task of the running loop and returns at once; `await` the handle for the result.

        Without `approve`, approval-required tools are not offered to the model (runtime behaviour).
        `recorder`: what records the run into its transcript (a replay passes its own); default `Recorder`.
        `view`: the workspace as the caller just read it (`view()`); default, read now.
        `model`: a `[models.NAME]` to run on instead of the definition's own.
        """
        read: WorkspaceView | Exception
        try:
            read = view or self.view()
        except Exception as error:  # noqa: BLE001 - the run ends `failed`, in words (`Runner`)
            read = error
        return self._runner.start(agent_id, input, read, session_id=session_id, on_event=on_event, approve=approve,
                                  recorder=recorder, model=model)

    def resume_session(self, agent_id: str, session: AgentSession) -> None:
        """The next run of `agent_id` with `session.session_id` goes on from `session` (a replay continues the
        recorded conversation)."""
        self._runner.resume_session(agent_id, session)

    async def run(self, agent_id: str, input: str, **options: Any) -> dict[str, Any]:
        """Starts a run and waits for its result."""
        return await self.start_run(agent_id, input, **options)

    def cancel(self, run_id: str) -> bool:
        return self._runner.cancel(run_id)

    def active_runs(self) -> list[RunHandle]:
        return self._runner.active_runs()

    async def shutdown(self) -> None:
        """Cancels every run and waits for them to end."""
        await self._runner.shutdown()

    async def aclose(self) -> None:
        """Shuts down and closes the chat clients the service's hosts created."""
        await self._runner.shutdown()
        await self._agents.aclose()
