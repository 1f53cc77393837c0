"""`oscova.listEvals` and `oscova.runEval`: the evaluations of the opened folders, and one evaluation file run
as `oscova-lsp eval FILE --format json` runs it, with `oscova/evalEvent` notifications as each run ends.

Listing reads the server's snapshot (open documents included) and runs nothing, so it works in an untrusted
workspace; running is refused there (a run builds the agent, which imports the workspace's code).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from ..analysis.files import EvalFile
from . import convert
from .commands import JsonRpcRequestFailed, read_arguments

if TYPE_CHECKING:
    from ..wire.commands import EvalListing
    from .runs import Runs

logger = logging.getLogger(__name__)

EVAL_EVENT = "oscova/evalEvent"


def _eval_listing(root: str, parsed: EvalFile) -> EvalListing:
    from ..wire.commands import EvalCaseListing, EvalListing

    file, uri = parsed.path, convert.uri(parsed.path)
    evaluation, doc = parsed.evaluation, parsed.doc
    if evaluation is None or doc is None:
        reason = parsed.skipped or next((p.message for p in parsed.problems), "the file does not validate")
        return EvalListing(file=file, uri=uri, root=root, error=reason)
    cases = []
    for index, case in enumerate(evaluation.cases):
        rng = doc.value_range(("cases", index, "name"))
        cases.append(EvalCaseListing(name=case.name, line=rng.start.line if rng is not None else 0))
    return EvalListing(file=file, uri=uri, root=root, agent=evaluation.agent, models=evaluation.models,
                       repeat=evaluation.repeat, pass_rate=evaluation.pass_rate, cases=cases)


async def list_evals(runs: Runs, params: lsp.ExecuteCommandParams) -> list[dict[str, Any]]:
    """The evaluation files (`EvalListing`; with `error` for a file that does not validate) of the folder `uri`
    names, or of every opened one."""
    roots = await runs.listed_roots(params)
    snapshot = runs.server.host.snapshot()
    out = []
    for root in roots:
        analysis = snapshot.analyses.get(root)
        files = analysis.workspace.files.items() if analysis is not None else ()
        out += [_eval_listing(root, parsed).wire() for _, parsed in sorted(files) if isinstance(parsed, EvalFile)]
    return out


async def run_eval(runs: Runs, params: lsp.ExecuteCommandParams) -> dict[str, Any]:
    """`RunEvalArguments` → the JSON of `oscova-lsp eval --format json` with `folder` (where the runs are recorded)
    and `cancelled` (`EvalRunResult`); `oscova/evalEvent` (`EvalProgress`) as each run ends. The runs and their
    grading happen in the run host; it reads the saved files, as runs do. `$/cancelRequest` cancels the runs in
    progress."""
    from pydantic import ValidationError

    from ..runhost.client import RunHostError
    from ..wire.commands import EvalProgress, RunEvalArguments

    args = read_arguments(RunEvalArguments, params)
    path = runs.opened_path(args.uri, params.command)
    options = {"models": args.models, "repeat": args.repeat, "case": args.case}
    if not runs.trusted:
        raise JsonRpcRequestFailed("The workspace is not trusted: oscova.runEval runs agents (and the workspace's "
                                   "tool and provider code) only in a trusted workspace")

    def progress(event: dict[str, Any]) -> None:
        try:
            told = EvalProgress.model_validate({**{k: v for k, v in event.items() if k != "key"}, "uri": args.uri})
        except ValidationError as error:  # a bug of one side: said in the log, the evaluation goes on
            logger.warning("run host: evaluation progress this server does not read was dropped: %s", error)
            return
        runs.server.protocol.notify(EVAL_EVENT, told.wire())

    host = await runs.host(runs.server.host.root_of(path))
    try:
        found = await host.run_eval(path, options, progress)
    except RunHostError as error:
        raise JsonRpcRequestFailed(str(error)) from None
    return found.wire()


def eval_commands(runs: Runs) -> dict[str, Any]:
    """The commands of this module, for `runs.command_handlers`."""
    return {"oscova.listEvals": lambda params: list_evals(runs, params),
            "oscova.runEval": lambda params: run_eval(runs, params)}


def eval_lenses(parsed: EvalFile, document_uri: str, *, trusted: bool) -> list[lsp.CodeLens]:
    """`Run eval` on each case's `name:` line (`oscova.runEval {uri, case}`); none in an untrusted workspace,
    where a run is refused."""
    evaluation, doc = parsed.evaluation, parsed.doc
    if not trusted or evaluation is None or doc is None:
        return []
    out = []
    for index, case in enumerate(evaluation.cases):
        span = doc.span(("cases", index, "name"))
        if span is None:
            continue
        start = span.key.start if span.key is not None else span.value.start
        rng = lsp.Range(start=convert.position(start), end=convert.position(span.value.end))
        out.append(lsp.CodeLens(range=rng, command=lsp.Command(
            title="Run eval", command="oscova.runEval", arguments=[{"uri": document_uri, "case": case.name}])))
    return out
