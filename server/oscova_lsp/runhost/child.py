"""`oscova-lsp run-host ROOT [--untrusted]`: the run host's child. It holds one workspace's run service and
answers the language server over JSON-RPC on stdin and stdout:

- requests `preview`, `run`, `runTest`, `runEval`, `shutdown`; each may carry `documents`, the editor's open
  documents (`{path: [text, version]}`), so that what a run or preview reads is what the editor shows (a run
  still refuses unsaved changes, as it does in a terminal);
- notifications `cancel` (a run, by its key), `fileChanged`, `evict`, `invalidate`, and `$/cancel`;
- it sends `event` (a run's events, by key), `evalProgress`, `notice`, and asks `approve` before an
  approval-required tool runs.

File descriptor 1 is the protocol's alone: whatever the workspace's code prints goes to stderr.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from oscova_runtime.framing import ProtocolOutput

from .endpoint import Endpoint

SHUTDOWN_WAIT = 4.0
"""Seconds `shutdown` waits for the cancelled runs to end."""


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print("usage: oscova-lsp run-host ROOT [--untrusted] (the language server starts it)", file=sys.stderr)
        return 2
    root, trusted = os.path.abspath(argv[0]), "--untrusted" not in argv[1:]
    out = ProtocolOutput()  # a print of the workspace's code goes to stderr, never into the protocol
    try:
        asyncio.run(_serve(root, trusted, out))
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve(root: str, trusted: bool, out: ProtocolOutput) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    child = _Child(root, trusted)
    endpoint = Endpoint(reader, out.write, requests={
        "preview": child.preview, "run": child.run, "runTest": child.run_test, "runEval": child.run_eval,
        "shutdown": child.shutdown,
    }, notifications={
        "cancel": child.cancel, "fileChanged": child.file_changed, "evict": child.evict, "invalidate": child.invalidate,
    })
    child.endpoint = endpoint
    await endpoint.serve()
    await child.close()


class _Child:
    def __init__(self, root: str, trusted: bool) -> None:
        self.root = root
        self.trusted = trusted
        self.endpoint: Endpoint | None = None
        self._service: Any = None
        self._runs: dict[str, Any] = {}

    def _send(self, method: str, params: dict[str, Any]) -> None:
        if self.endpoint is not None:
            self.endpoint.notify(method, params)

    def service(self, params: dict[str, Any]) -> Any:
        """The run service (made on first use), with the editor's open documents of this request applied."""
        if self._service is None:
            from ..runs.service import RunService

            self._service = RunService(self.root, trusted=self.trusted,
                                       notify=lambda text: self._send("notice", {"text": text}))
        documents = params.get("documents")
        if isinstance(documents, dict):
            self._service.lay_documents({path: (entry[0], entry[1]) for path, entry in documents.items()})
        return self._service

    async def preview(self, params: dict[str, Any]) -> Any:
        from ..runs.errors import RunError

        service = self.service(params)
        try:
            return await service.preview(params["agentId"], params.get("input"), session_id=params.get("sessionId"))
        except RunError as error:
            raise RuntimeError(str(error)) from None

    async def run(self, params: dict[str, Any]) -> Any:
        service = self.service(params)
        key = str(params["key"])
        endpoint = self.endpoint

        async def approve(prompt: dict[str, Any]) -> bool:
            return bool(endpoint is not None and await endpoint.request("approve", prompt))

        handle = service.start_run(params["agentId"], params["input"], session_id=params.get("sessionId"),
                                   on_event=lambda event: self._send("event", {"key": key, "event": event}),
                                   approve=approve if params.get("approvals") else None, model=params.get("model"))
        self._runs[key] = handle
        try:
            return await handle
        finally:
            self._runs.pop(key, None)

    def cancel(self, params: dict[str, Any]) -> None:
        handle = self._runs.get(str(params.get("key")))
        if handle is not None:
            handle.cancel()

    async def run_test(self, params: dict[str, Any]) -> Any:
        from ..runs.cases import CaseError, find_cases, run_case

        try:
            case = find_cases([params["path"]])[0]
        except (CaseError, IndexError) as error:
            raise RuntimeError(str(error) or f"{params['path']} is not a case") from None
        result = await run_case(case, update=bool(params.get("update")))
        return result.answer().wire()

    async def run_eval(self, params: dict[str, Any]) -> Any:
        from ..runs.eval_report import eval_report
        from ..runs.eval_runner import EvalError, EvalOptions, find_evals, run_evals
        from ..wire.reports import EvalRunResult

        key = str(params.get("key"))
        options = EvalOptions(models=params.get("models") or (), repeat=params.get("repeat"), case=params.get("case"))

        def progress(done: int, total: int, outcome: Any) -> None:
            self._send("evalProgress", {"key": key, "case": outcome.case, "model": outcome.model, "done": done,
                                        "total": total, "passed": outcome.passed, "runs": len(outcome.runs)})

        options.progress = progress
        try:
            evals = await asyncio.to_thread(find_evals, [params["path"]])
            if not evals:
                raise EvalError(f"{params['path']} is not an evaluation file (*.eval.yaml)")
            report = await run_evals(evals, options)
        except EvalError as error:
            raise RuntimeError(str(error)) from None
        return EvalRunResult(**dict(eval_report(report)), folder=report.folder, cancelled=report.cancelled).wire()

    def file_changed(self, params: dict[str, Any]) -> None:
        if self._service is None:
            return
        self._service.disk_changed(str(params.get("path")), bool(params.get("deleted")))

    def evict(self, params: dict[str, Any]) -> None:
        if self._service is not None:
            self._service.evict_agent(str(params.get("agentId")))

    def invalidate(self, params: dict[str, Any]) -> None:
        if self._service is not None:
            (self._service.invalidate_all if params.get("all") else self._service.invalidate_agents)()

    async def shutdown(self, params: dict[str, Any]) -> None:
        """Cancels every run and waits for each to end (its `cancelled` event sent, its transcript closed)."""
        handles = list(self._runs.values())
        for handle in handles:
            handle.cancel()
        tasks = [h.task for h in handles if h.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=SHUTDOWN_WAIT)
        await self.close()

    async def close(self) -> None:
        service, self._service = self._service, None
        if service is not None:
            await service.aclose()
