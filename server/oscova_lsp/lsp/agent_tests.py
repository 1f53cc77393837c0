"""Agent tests from the editor: `oscova.listTests`, `oscova.runTest` and `oscova.saveTestCase` over the cases
of `runs/cases.py` (the same code as `oscova-lsp test`).

A case replays in a worker thread with an event loop of its own, so a replay (which reads the workspace
and builds the agent) never holds up diagnostics or completion on the server's loop.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from . import convert
from .runs import JsonRpcRequestFailed, _string, command_argument

if TYPE_CHECKING:
    from .runs import Runs


def _case_json(case: Any) -> dict[str, Any]:
    out: dict[str, Any] = case.to_json()
    out["uri"] = convert.uri(case.path)
    return out


async def list_tests(runs: Runs, params: lsp.ExecuteCommandParams) -> list[dict[str, Any]]:
    """`[{name, path, uri, root, agentId, input}]`: the cases of the workspace folder `uri` names, or of every
    folder the editor opened. Reading cases runs no workspace code, so it works in an untrusted workspace."""
    from ..runs.cases import CaseError, find_cases

    args = command_argument(params)
    document_uri = _string(args, "uri", params.command)
    if document_uri is not None:
        path = convert.path_of(document_uri)
        if path is None:
            raise JsonRpcInvalidParams(f"{params.command}: `uri` must be a file: URI, not {document_uri!r}")
        folders = [path]
    else:
        folders = list(runs.server.session.folders)
    try:
        cases = await asyncio.to_thread(find_cases, [f for f in folders if os.path.exists(f)])
        return await asyncio.to_thread(lambda: [_case_json(c) for c in cases])
    except CaseError as error:
        raise JsonRpcRequestFailed(str(error)) from None


async def run_test(runs: Runs, params: lsp.ExecuteCommandParams) -> dict[str, Any]:
    """`{name, path, uri, status, agentId, durationMs, difference?, error?}` of one case (`uri`: the case
    file); `update: true` re-records a drifted case. Refused in an untrusted workspace: a replay builds the
    agent, which imports the workspace's providers."""
    from ..runs.cases import CaseError, find_cases, run_case

    args = command_argument(params)
    document_uri = _string(args, "uri", params.command, required=True)
    update = args.get("update", False)
    if not isinstance(update, bool):
        raise JsonRpcInvalidParams(f"{params.command}: `update` must be true or false")
    if not runs.trusted:
        raise JsonRpcRequestFailed("The workspace is not trusted: oscova.runTest replays agents (and imports the "
                                   "workspace's provider code) only in a trusted workspace")
    path = convert.path_of(document_uri or "")
    if path is None:
        raise JsonRpcInvalidParams(f"{params.command}: `uri` must be a file: URI, not {document_uri!r}")
    try:
        case = find_cases([path])[0]
    except (CaseError, IndexError) as error:
        raise JsonRpcRequestFailed(str(error) or f"{path} is not a case") from None
    result = await asyncio.to_thread(lambda: asyncio.run(run_case(case, update=update)))
    out = result.to_json()
    out["uri"] = convert.uri(case.path)
    return out


async def save_test_case(runs: Runs, params: lsp.ExecuteCommandParams) -> dict[str, Any]:
    """Promotes a completed run to a case: `{runId, name?, uri?}` → the case as `oscova.listTests` lists it."""
    from ..runs.cases import CaseError, save_case

    args = command_argument(params)
    run_id = _string(args, "runId", params.command, required=True)
    name = _string(args, "name", params.command)
    root = runs.root_for(_string(args, "uri", params.command), params.command)
    try:
        case = await asyncio.to_thread(save_case, root, run_id or "", name)
    except CaseError as error:
        raise JsonRpcRequestFailed(str(error)) from None
    return _case_json(case)


async def compare_runs(runs: Runs, params: lsp.ExecuteCommandParams) -> dict[str, Any]:
    """`{transcript, previous?}` → both runs' model requests rendered as text, for the editor's diff view
    (`runs/compare.py`); without `previous`, the run of the same agent before this one."""
    from ..runs.compare import compare_with_previous
    from ..runs.transcript import RecordingError

    args = command_argument(params)
    transcript = _string(args, "transcript", params.command, required=True)
    previous = _string(args, "previous", params.command)
    try:
        return await asyncio.to_thread(compare_with_previous, transcript or "", previous)
    except RecordingError as error:
        raise JsonRpcRequestFailed(str(error)) from None
