"""`oscova.listTests`, `oscova.runTest`, `oscova.saveTestCase` over the cases of `runs/cases.py` (the code of
`oscova-lsp test`), and `oscova.compareRuns` (`runs/compare.py`). A case replays in the run host (it builds the
agent, which imports the workspace's code); listing, saving and comparing read files only."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from ..analysis.host import AnalysisHost
from . import convert
from .commands import JsonRpcRequestFailed, read_arguments, scope_of

if TYPE_CHECKING:
    from ..runhost.client import RunHost
    from ..wire.commands import CaseListing, CaseRunResult, SavedCase


class _Server(Protocol):
    host: AnalysisHost


class CaseRuns(Protocol):
    """What these commands need of `runs.Runs` (which registers them), without importing it."""

    trusted: bool

    @property
    def server(self) -> _Server: ...

    def opened_path(self, document_uri: str, command: str) -> str: ...
    def root_for(self, document_uri: str | None, command: str) -> str: ...
    async def host(self, root: str) -> RunHost: ...


def _case_listing(case: Any) -> CaseListing:
    listing: CaseListing = case.listing()
    listing.uri = convert.uri(case.path)
    return listing


async def list_tests(runs: CaseRuns, params: lsp.ExecuteCommandParams) -> list[dict[str, Any]]:
    """The cases (`CaseListing`: with `error` for a case that cannot be read: a FIFO, a link leading out, a damaged
    transcript) of the workspace folder `uri` names, or of every folder the editor opened. Reading cases runs no
    workspace code, so it works in an untrusted workspace; and through the file gateway, so no case can stall it."""
    document_uri = scope_of(params)
    if document_uri is not None:
        folders = [runs.opened_path(document_uri, params.command)]
    else:
        folders = list(runs.server.host.folders)
    return await asyncio.to_thread(_listed, [f for f in folders if os.path.exists(f)])


def _listed(folders: list[str]) -> list[dict[str, Any]]:
    """On a worker thread, the first import included: listing never holds up the loop (hover, completion)."""
    from ..runs.cases import CaseError, find_cases

    try:
        return [_case_listing(case).wire() for case in find_cases(folders)]
    except CaseError as error:
        raise JsonRpcRequestFailed(str(error)) from None


async def run_test(runs: CaseRuns, params: lsp.ExecuteCommandParams) -> dict[str, Any]:
    """A `CaseRunResult` of one case (`uri`: the case file); `update: true` re-records a drifted case. Refused in an
    untrusted workspace: a replay builds the agent, which imports the workspace's providers."""
    from ..runhost.client import RunHostError
    from ..wire.commands import RunTestArguments

    args = read_arguments(RunTestArguments, params)
    path = runs.opened_path(args.uri, params.command)
    if not runs.trusted:
        raise JsonRpcRequestFailed("The workspace is not trusted: oscova.runTest replays agents (and imports the "
                                   "workspace's provider code) only in a trusted workspace")
    host = await runs.host(runs.server.host.root_of(path))
    try:
        out: CaseRunResult = await host.run_test(path, args.update)
    except RunHostError as error:
        raise JsonRpcRequestFailed(str(error)) from None
    out.uri = convert.uri(out.path or path)
    return out.wire()


async def save_test_case(runs: CaseRuns, params: lsp.ExecuteCommandParams) -> dict[str, Any]:
    """Promotes a completed run to a case: `{runId, name?, uri?}` → the case as `oscova.listTests` lists it,
    with `gitignore` (the lines that commit the cases and keep the rest of `.oscova/` out, those its `.gitignore`
    lacks) on the workspace's first case, as `oscova-lsp test --save` prints them (`SavedCase`)."""
    from ..runs.cases import CaseError, missing_gitignore_lines, save_case, tests_dir
    from ..wire.commands import SavedCase, SaveTestCaseArguments

    args = read_arguments(SaveTestCaseArguments, params)
    root = runs.root_for(args.uri, params.command)
    first = not os.path.isdir(tests_dir(root))
    try:
        case = await asyncio.to_thread(save_case, root, args.run_id, args.name)
    except CaseError as error:
        raise JsonRpcRequestFailed(str(error)) from None
    missing = missing_gitignore_lines(root) if first else []
    saved: SavedCase = SavedCase(**dict(_case_listing(case)), gitignore=missing or None)
    return saved.wire()


async def compare_runs(runs: CaseRuns, params: lsp.ExecuteCommandParams) -> dict[str, Any]:
    """`{transcript, previous?}` → both runs' model requests rendered as text, for the editor's diff view
    (`runs/compare.py`); without `previous`, the run of the same agent before this one."""
    from ..runs.compare import compare_with_previous
    from ..runs.transcript import RecordingError
    from ..wire.commands import CompareRunsArguments

    args = read_arguments(CompareRunsArguments, params)
    if any("\x00" in (path or "") for path in (args.transcript, args.previous)):  # no file name holds one
        raise JsonRpcInvalidParams(f"{params.command}: a transcript path cannot hold a NUL byte")
    try:
        comparison = await asyncio.to_thread(compare_with_previous, args.transcript, args.previous)
    except RecordingError as error:
        raise JsonRpcRequestFailed(str(error)) from None
    return comparison.wire()

