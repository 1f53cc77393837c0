"""A debug session's launch: its arguments checked, the run service, and the run started under the stepper.

`{type: "oscova", request: "launch", agent, input, root?, replay?: RUN_ID, liveFrom?: N, stopOnEntry?,
workspaceTrusted?, functionBreakpoints?}`: a live run of `agent` on `input`; with `replay`, the recorded run (a
run id under `.oscova/runs/` or a transcript's path) replayed offline, its agent and input by default; with
`liveFrom`, a replay that goes live from model call N (a fork). `workspaceTrusted: false` (the editor's
Restricted Mode) is refused; `functionBreakpoints` names stops for clients without a function-breakpoint UI. The run is the run service's like any other: its transcript,
redaction and events; a debug run has no approval channel, so approval-required tools are not offered.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from oscova_runtime.catalogue import plan_providers
from oscova_runtime.stepping import stepping

from ..analysis.disk import find_root, host_config_path
from ..runs.errors import untrusted_refusal
from ..runs.execution import RunHandle
from ..runs.recorder import Recorder
from ..runs.replay import (
    Forker,
    Recording,
    RecordingError,
    Replayer,
    continue_recorded_session,
    load_recording,
    refuse,
)
from ..runs.service import RunService
from ..runs.transcript import EDITS_VERSION, resolve_transcript
from ..runs.workspace_view import WorkspaceView
from .breakpoints import Breakpoints
from .stepper import RunStepper, Stop


class LaunchRefused(Exception):
    """Launch arguments that cannot start a run; the message says why (the launch's error response)."""


@dataclass(slots=True)
class Launch:
    agent: str
    input: str
    root: str
    service: RunService
    view: WorkspaceView
    recording: Recording | None = None
    live_from: int | None = None
    stop_on_entry: bool = False
    trusted: bool = True
    function_breakpoints: tuple[str, ...] = ()
    """`functionBreakpoints` of the launch configuration: the same names as `setFunctionBreakpoints`."""


def _text(arguments: dict[str, Any], key: str) -> str | None:
    value = arguments.get(key)
    if value is not None and not isinstance(value, str):
        raise LaunchRefused(f"`{key}` must be text, not {type(value).__name__}")
    return value


def _flag(arguments: dict[str, Any], key: str, default: bool) -> bool:
    value = arguments.get(key, default)
    if not isinstance(value, bool):
        raise LaunchRefused(f"`{key}` must be true or false")
    return value


def _root(given: str | None, cwd: str) -> str:
    if given is not None:
        root = os.path.abspath(os.path.expanduser(given))
        if not os.path.isdir(root):
            raise LaunchRefused(f"The workspace root {given} is not a directory")
        if host_config_path(root) is None:
            raise LaunchRefused(f"No workspace at {root}: it holds no oscova.toml (or pyproject.toml with "
                                "[tool.oscova])")
        return root
    found = find_root(cwd)
    if found is None:
        raise LaunchRefused(f"No oscova.toml was found in {cwd} or any folder above it; set `root` in the launch "
                            "configuration")
    return found


def launch_arguments(arguments: dict[str, Any], cwd: str) -> Launch:
    """The launch the arguments ask for; LaunchRefused with a sentence when they cannot start one."""
    agent, text, replay = _text(arguments, "agent"), _text(arguments, "input"), _text(arguments, "replay")
    live_from = arguments.get("liveFrom")
    if live_from is not None and (not isinstance(live_from, int) or isinstance(live_from, bool) or live_from < 1):
        raise LaunchRefused("`liveFrom` must be a model call number: 1 or more")
    if live_from is not None and replay is None:
        raise LaunchRefused("`liveFrom` goes with `replay`: the recorded run whose first calls are replayed")
    stop_on_entry, trusted = _flag(arguments, "stopOnEntry", False), _flag(arguments, "workspaceTrusted", True)
    if not trusted:  # the editor's Restricted Mode: no workspace code runs, as for any run
        raise LaunchRefused(untrusted_refusal("oscova-lsp debug"))
    stops = arguments.get("functionBreakpoints", [])
    if not isinstance(stops, list) or not all(isinstance(name, str) for name in stops):
        raise LaunchRefused("`functionBreakpoints` must be a list of names: model, tool, tool:<name>, "
                            "provider:<type>, agent:<id>")
    unknown = [answer["message"] for answer in Breakpoints().set_functions(stops) if not answer["verified"]]
    if unknown:
        raise LaunchRefused(f"`functionBreakpoints`: {unknown[0]}")
    root = _root(_text(arguments, "root"), cwd)
    recording = None
    if replay is not None:
        try:
            recording = load_recording(resolve_transcript(root, replay))
        except RecordingError as error:
            raise LaunchRefused(str(error)) from None
        agent, text = agent or recording.agent_id, recording.input if text is None else text
    if not agent:
        raise LaunchRefused("The launch configuration needs `agent`: the id of the agent to run")
    if text is None or not text.strip():
        raise LaunchRefused("The launch configuration needs `input`: what the agent is asked")
    service = RunService(root, trusted=trusted)
    view = service.view()
    if agent not in view.agents:
        known = ", ".join(view.agents) or "none"
        raise LaunchRefused(f"No agent definition has the id {agent!r} (known agents: {known})")
    return Launch(agent, text, root, service, view, recording, live_from, stop_on_entry, trusted, tuple(stops))


class ViewLocator:
    """Where the launch's agents and their providers are written (the view the launch read)."""

    def __init__(self, view: WorkspaceView) -> None:
        self.view = view

    def agent_source(self, agent_id: str) -> tuple[str | None, int]:
        parsed = self.view.agents.get(agent_id)
        if parsed is None:
            return None, 0
        found = parsed.doc.key_range(("id",)) if parsed.doc is not None else None
        return parsed.path, (found.start.line + 1 if found is not None else 1)

    def provider(self, agent_id: str, index: int, requested: bool) -> tuple[str, int | None]:
        parsed = self.view.agents.get(agent_id)
        if parsed is None or parsed.definition is None:
            return "unknown", None
        planned = plan_providers(parsed.definition, self.view.config, requested=requested).providers
        if index >= len(planned):
            return "unknown", None
        entry = planned[index].entry_index
        where = parsed.doc.value_range(("context_providers", entry)) if entry is not None and parsed.doc else None
        return planned[index].type, (where.start.line + 1 if where is not None else None)


class DebugRun:
    """The launched run: its handle, the service it runs in."""

    def __init__(self, handle: RunHandle, service: RunService) -> None:
        self.handle = handle
        self.service = service

    async def result(self) -> dict[str, Any]:
        return await self.handle

    def cancel(self) -> None:
        self.handle.cancel()

    async def close(self) -> None:
        await self.service.aclose()


def _recorder(launch: Launch) -> Recorder:
    if launch.recording is None:
        return Recorder()
    if launch.live_from is not None:
        return Forker(launch.recording, launch.live_from, root=launch.service.root)
    return Replayer(launch.recording, root=launch.service.root)


def open_run(launch: Launch, breakpoints: Breakpoints, on_stop: Callable[[Stop], None],
             on_event: Callable[[dict[str, Any]], None]) -> tuple[RunStepper, DebugRun]:
    """Starts the launch's run with a stepper (a task of the running loop) and returns both."""
    stepper = RunStepper(launch.agent, ViewLocator(launch.view), breakpoints, on_stop=on_stop,
                         stop_on_entry=launch.stop_on_entry)
    recorder = _recorder(launch)
    recorder.version = EDITS_VERSION
    stepper.write_edit = recorder.write
    recording = launch.recording
    session_id = continue_recorded_session(launch.service, recording, launch.agent) if recording else None
    approve = refuse if recording is not None and recording.approvals else None
    with stepping(stepper):  # the run's task inherits the stepper
        handle = launch.service.start_run(launch.agent, launch.input, session_id=session_id, on_event=on_event,
                                          approve=approve, recorder=recorder, view=launch.view)
    return stepper, DebugRun(handle, launch.service)
