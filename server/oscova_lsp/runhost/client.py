"""The language server's side of the run host: one child process per workspace root, started on first use through
the process gateway with a memory limit, and started again on the next request when it has stopped.

The child gets the user's environment (a run reads the keys `api_key_env` names, and the workspace's tools read
what they read in a terminal); the server's own state never reaches it but as the requests' parameters.
It is stopped at shutdown, when the workspace's Python code changes (its modules are imported once: a fresh
process imports the new code), and when a cancelled run has not ended within `CANCEL_GRACE` seconds.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..wire.commands import CaseRunResult, PreviewResult
from ..wire.events import AnyRunEvent, ApprovalPrompt, RunResult, read_event
from ..wire.reports import EvalRunResult
from .endpoint import Endpoint, Gone, RemoteError

logger = logging.getLogger(__name__)

MEMORY_ENV = "OSCOVA_LSP_RUN_HOST_MEMORY_MB"
DEFAULT_MEMORY_MB = 4096
"""The run host's address space, in MiB, unless `OSCOVA_LSP_RUN_HOST_MEMORY_MB` says otherwise: a run that needs
more fails with a sentence, and the language server is untouched."""
CANCEL_GRACE = 10.0
"""Seconds a cancelled run may take to end (its transcript closed) before its run host is stopped: a tool stuck
in code that never yields is stopped with it."""
SHUTDOWN_GRACE = 5.0
STDERR_LINES = 20

Documents = Callable[[], dict[str, tuple[str, int | None]]]
Answer = TypeVar("Answer", bound=BaseModel)


class RunHostError(Exception):
    """A request the run host did not answer, or answered with an error; the message is a sentence."""


def _read(model: type[Answer], value: Any, what: str) -> Answer:
    """What the run host sent, read into its model (the way in from another process)."""
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise RunHostError(f"the run host answered {what} in a shape this server does not read: "
                           f"{error.errors()[0]['msg']} at {'.'.join(map(str, error.errors()[0]['loc']))}") from None


def memory_limit() -> int:
    try:
        return int(os.environ.get(MEMORY_ENV, DEFAULT_MEMORY_MB)) * 1024 * 1024
    except ValueError:
        return DEFAULT_MEMORY_MB * 1024 * 1024


class HostedRun:
    """A run in the run host: `await` gives its result (a failed one, in words, when the run host stops);
    `cancel()` stops it."""

    def __init__(self, host: RunHost, key: str, agent_id: str) -> None:
        self.host, self.key, self.agent_id = host, key, agent_id
        self.run_id: str | None = None
        self.session_id: str | None = None
        self.task: asyncio.Task[RunResult] | None = None
        self.cancel_requested = False

    def cancel(self) -> bool:
        if self.task is None or self.task.done():
            return False
        self.cancel_requested = True
        self.host.cancel_run(self)
        return True

    def __await__(self) -> Generator[Any, None, RunResult]:
        # Shielded: a caller that stops waiting (a request pygls cancels at shutdown) does not cut the run's
        # relay short; a run ends by `cancel()`, and its `cancelled` event still reaches the editor.
        if self.task is None:
            raise RuntimeError("the run was not started; RunHost.start_run gives a started run")
        return asyncio.shield(self.task).__await__()


class RunHost:
    """The run host of one workspace root."""

    def __init__(self, root: str, *, trusted: bool, documents: Documents,
                 approve: Callable[[ApprovalPrompt], Awaitable[bool]], notify: Callable[[str], None]) -> None:
        self.root = root
        self.trusted = trusted
        self._documents = documents
        self._approve = approve
        self._notify = notify
        self._process: asyncio.subprocess.Process | None = None
        self._endpoint: Endpoint | None = None
        self._starting: asyncio.Lock | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._events: dict[str, Callable[[AnyRunEvent], None]] = {}
        self._progress: dict[str, Callable[[dict[str, Any]], None]] = {}
        self._runs: dict[str, HostedRun] = {}
        self._keys = itertools.count(1)
        self.starts = 0
        """How many child processes this host has started (a restart after a stop counts)."""

    # -- the child ----------------------------------------------------------------------------------------

    async def _connection(self) -> Endpoint:
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._endpoint is not None:
                return self._endpoint
            from oscova_runtime.processes import ProcessFailed, spawn_async

            argv = [sys.executable, "-P", "-m", "oscova_lsp", "run-host", self.root,
                    *([] if self.trusted else ["--untrusted"])]
            try:  # the user's environment, as a run in a terminal has it (the module docstring says why)
                process = await spawn_async(argv, cwd=self.root, env=dict(os.environ), memory_limit=memory_limit())
            except ProcessFailed as failed:
                raise RunHostError(f"the run host could not start: {failed}") from None
            stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
            if stdin is None or stdout is None or stderr is None:  # spawn_async always pipes them
                raise RunHostError("the run host started without its pipes")
            endpoint = Endpoint(stdout, stdin.write, requests={"approve": self._approve_request},
                                notifications={"event": self._on_event, "evalProgress": self._on_progress,
                                               "notice": lambda params: self._notify(str(params.get("text")))})
            self._process, self._endpoint = process, endpoint
            self.starts += 1
            asyncio.ensure_future(self._drain(stderr))
            asyncio.ensure_future(self._watch(process, endpoint))
            logger.info("run host for %s started (pid %d)", self.root, process.pid)
            return endpoint

    async def _drain(self, stderr: asyncio.StreamReader) -> None:
        """The child's stderr (what the workspace's code prints, its log): kept for the sentence if it stops, and
        logged."""
        while line := await stderr.readline():
            text = line.decode("utf-8", "replace").rstrip()
            self._stderr.append(text)
            logger.info("run host: %s", text)

    async def _watch(self, process: asyncio.subprocess.Process, endpoint: Endpoint) -> None:
        """Serves the connection; when the child stops, every request waiting on it fails with why."""
        await endpoint.serve(fail_at_end=False)
        code = await process.wait()
        why = self._how_it_stopped(code)
        endpoint.fail_pending(why)  # unless `stop` said why first
        if self._endpoint is endpoint:
            self._process = self._endpoint = None
        logger.info("run host for %s stopped: %s", self.root, why)

    def _how_it_stopped(self, code: int) -> str:
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            how = f"it was killed ({name})"
        else:
            how = f"it exited with status {code}"
        last = next((line for line in reversed(self._stderr) if line.strip()), None)
        memory = any("MemoryError" in line for line in self._stderr)
        if memory:
            how += f", out of memory (the limit is {memory_limit() // (1024 * 1024):,} MiB: {MEMORY_ENV})"
        return f"the run host stopped ({how}{f'; its last words: {last}' if last and not memory else ''}); " \
               "the next run starts a new one"

    def stop(self, reason: str) -> None:
        """Stops the child now: what waits on it fails with `reason`, and the next request starts a new one."""
        process, endpoint = self._process, self._endpoint
        if process is None or endpoint is None:
            return
        self._process = self._endpoint = None
        endpoint.fail_pending(reason)
        from oscova_runtime.processes import stop

        stop(process)

    async def aclose(self) -> None:
        """Asks the child to end its runs (their transcripts closed), then stops it."""
        endpoint = self._endpoint
        if endpoint is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(endpoint.request("shutdown", {}), SHUTDOWN_GRACE)
        self.stop("the language server is shutting down")

    # -- requests -----------------------------------------------------------------------------------------

    async def _call(self, method: str, params: dict[str, Any], *, answer_when_cancelled: bool = False) -> Any:
        endpoint = await self._connection()
        try:
            return await endpoint.request(method, {**params, "documents": self._documents()},
                                          answer_when_cancelled=answer_when_cancelled)
        except (RemoteError, Gone) as error:
            raise RunHostError(str(error)) from None

    async def preview(self, agent_id: str, input: str | None = None, *, session_id: str | None = None,
                      ) -> PreviewResult:
        answer = await self._call("preview", {"agentId": agent_id, "input": input, "sessionId": session_id})
        return _read(PreviewResult, answer, "a preview")

    def start_run(self, agent_id: str, input: str, *, session_id: str | None = None,
                  on_event: Callable[[AnyRunEvent], None] | None = None, approvals: bool = True,
                  model: str | None = None) -> HostedRun:
        """Starts a run in the run host and returns at once; its events reach `on_event` in order."""
        key = str(next(self._keys))
        run = HostedRun(self, key, agent_id)
        run.session_id = session_id

        def event(value: AnyRunEvent) -> None:
            run.run_id = run.run_id or value.run_id
            if value.kind == "started":
                run.session_id = value.session_id
            if on_event is not None:
                on_event(value)

        self._events[key] = event
        self._runs[key] = run
        run.task = asyncio.ensure_future(self._run(run, {"key": key, "agentId": agent_id, "input": input,
                                                         "sessionId": session_id, "approvals": approvals,
                                                         "model": model}))
        return run

    async def _run(self, run: HostedRun, params: dict[str, Any]) -> RunResult:
        try:
            return _read(RunResult, await self._call("run", params), "a run")
        except RunHostError as error:  # the run host stopped: a run that was being cancelled ends cancelled
            return RunResult(run_id=run.run_id or "", agent_id=run.agent_id, session_id=run.session_id,
                             status="cancelled" if run.cancel_requested else "failed", text="", messages=[],
                             transcript=None, error=str(error))
        finally:
            self._events.pop(run.key, None)
            self._runs.pop(run.key, None)

    def cancel_run(self, run: HostedRun) -> None:
        """Asks the run to end; a run still going `CANCEL_GRACE` seconds later stops its run host."""
        if self._endpoint is not None:
            self._endpoint.notify("cancel", {"key": run.key})
        loop = asyncio.get_running_loop()
        loop.call_later(CANCEL_GRACE, self._stop_if_running, run)

    def _stop_if_running(self, run: HostedRun) -> None:
        if run.task is not None and not run.task.done():
            self.stop(f"the run of {run.agent_id} did not stop within {CANCEL_GRACE:g} s of its cancellation, so "
                      "its run host was stopped")

    def active_runs(self) -> list[HostedRun]:
        return list(self._runs.values())

    def find_run(self, run_id: str) -> HostedRun | None:
        return next((run for run in self._runs.values() if run.run_id == run_id), None)

    async def run_test(self, path: str, update: bool) -> CaseRunResult:
        return _read(CaseRunResult, await self._call("runTest", {"path": path, "update": update}), "an agent test")

    async def run_eval(self, path: str, options: dict[str, Any],
                       progress: Callable[[dict[str, Any]], None] | None = None) -> EvalRunResult:
        key = str(next(self._keys))
        if progress is not None:
            self._progress[key] = progress
        try:
            # A cancelled evaluation answers with what finished (`cancelled: true`), as `oscova-lsp eval` does.
            answer = await self._call("runEval", {"key": key, "path": path, **options}, answer_when_cancelled=True)
        finally:
            self._progress.pop(key, None)
        return _read(EvalRunResult, answer, "an evaluation")

    # -- notifications --------------------------------------------------------------------------------------

    def file_changed(self, path: str, deleted: bool = False) -> None:
        """A file of the workspace changed on disk: Python code stops the child (the next request starts one
        that imports it anew); anything else is told to it."""
        if path.endswith(".py"):
            self.stop(f"the workspace's code changed ({os.path.relpath(path, self.root)}), so its run host was "
                      "restarted; run again")
        elif self._endpoint is not None:
            self._endpoint.notify("fileChanged", {"path": path, "deleted": deleted})

    def evict(self, agent_id: str) -> None:
        if self._endpoint is not None:
            self._endpoint.notify("evict", {"agentId": agent_id})

    def invalidate(self, everything: bool) -> None:
        """Drops the cached agents; `everything`: the workspace's imported code too, by a fresh child."""
        if everything:
            self.stop("every cached agent and the workspace's code were dropped (oscova.invalidateAll), so the "
                      "run host was restarted; run again")
        elif self._endpoint is not None:
            self._endpoint.notify("invalidate", {"all": False})

    def _on_event(self, params: dict[str, Any]) -> None:
        listener = self._events.get(str(params.get("key")))
        if listener is None:
            return
        try:
            event = read_event(params.get("event"))
        except ValidationError as error:  # a bug of one side: said in the log, the run goes on
            logger.warning("run host: an event this server does not read was dropped: %s", error.errors()[0]["msg"])
            return
        listener(event)

    def _on_progress(self, params: dict[str, Any]) -> None:
        listener = self._progress.get(str(params.get("key")))
        if listener is not None:
            listener(params)

    async def _approve_request(self, params: dict[str, Any]) -> bool:
        try:
            prompt = ApprovalPrompt.model_validate(params)
        except ValidationError:  # a question this server cannot put to the user is denied
            logger.warning("run host: an approval question this server does not read was denied")
            return False
        return await self._approve(prompt)
