"""Runs and previews of agents: the service the command line and the language server share.

No pygls or lsprotocol here, and no `openai` at import: the model client loads on the first run.
"""

from .errors import RunError
from .events import EVENT_KINDS, FINAL_KINDS, Redactor
from .execution import ApproveCallback, EventCallback, RunHandle, RunStatus, load_model_client
from .service import RunService
from .transcript import RUNS_DIRECTORY, read_transcript
from .workspace_view import WorkspaceView

__all__ = [
    "EVENT_KINDS", "FINAL_KINDS", "RUNS_DIRECTORY", "ApproveCallback", "EventCallback", "Redactor", "RunError",
    "RunHandle", "RunService", "RunStatus", "WorkspaceView", "load_model_client", "read_transcript",
]
