"""`oscova.listEvals` and `oscova.runEval`: the evaluations of the opened folders, and one evaluation file run
as `oscova-lsp eval FILE --format json` runs it, with `oscova/evalEvent` notifications as each run ends.

Listing reads the server's snapshot (open documents included) and runs nothing, so it works in an untrusted
workspace; running is refused there (a run builds the agent, which imports the workspace's code).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from ..analysis.files import EvalFile
from . import convert
from .runs import JsonRpcRequestFailed, _string, command_argument

if TYPE_CHECKING:
    from .runs import Runs

EVAL_EVENT = "oscova/evalEvent"


def _eval_json(root: str, parsed: EvalFile) -> dict[str, Any]:
    out: dict[str, Any] = {"file": parsed.path, "uri": convert.uri(parsed.path), "root": root}
    evaluation, doc = parsed.evaluation, parsed.doc
    if evaluation is None or doc is None:
        reason = parsed.skipped or next((p.message for p in parsed.problems), "the file does not validate")
        return {**out, "error": reason}
    cases = []
    for index, case in enumerate(evaluation.cases):
        rng = doc.value_range(("cases", index, "name"))
        cases.append({"name": case.name, "line": rng.start.line if rng is not None else 0})
    return {**out, "agent": evaluation.agent, "models": evaluation.models, "repeat": evaluation.repeat,
            "passRate": evaluation.pass_rate, "cases": cases}


async def list_evals(runs: Runs, params: lsp.ExecuteCommandParams) -> list[dict[str, Any]]:
    """`[{file, uri, root, agent, models, repeat, passRate, cases: [{name, line}]}]` (`{file, uri, root, error}`
    for a file that does not validate; `line` is 0-based): of the folder `uri` names, or of every opened one."""
    roots = await runs.listed_roots(params)
    snapshot = runs.server.host.snapshot()
    out = []
    for root in roots:
        analysis = snapshot.analyses.get(root)
        files = analysis.workspace.files.items() if analysis is not None else ()
        out += [_eval_json(root, parsed) for _, parsed in sorted(files) if isinstance(parsed, EvalFile)]
    return out


def _options(args: dict[str, Any], command: str) -> dict[str, Any]:
    models = args.get("models", [])
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise JsonRpcInvalidParams(f"{command}: `models` must be a list of [models.NAME] names")
    repeat = args.get("repeat")
    if repeat is not None and (not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1):
        raise JsonRpcInvalidParams(f"{command}: `repeat` must be a whole number of at least 1")
    return {"models": models, "repeat": repeat, "case": _string(args, "case", command)}


async def run_eval(runs: Runs, params: lsp.ExecuteCommandParams) -> dict[str, Any]:
    """`{uri, case?, models?, repeat?}` → the JSON of `oscova-lsp eval --format json` with `folder` (where the
    runs are recorded) and `cancelled`; `oscova/evalEvent` `{uri, case, model, done, total, passed, runs}` as
    each run ends. The runs and their grading happen in the run host; it reads the saved files, as runs do.
    `$/cancelRequest` cancels the runs in progress."""
    from ..runhost.client import RunHostError

    args = command_argument(params)
    document_uri = _string(args, "uri", params.command, required=True) or ""
    path = runs.opened_path(document_uri, params.command)
    options = _options(args, params.command)
    if not runs.trusted:
        raise JsonRpcRequestFailed("The workspace is not trusted: oscova.runEval runs agents (and the workspace's "
                                   "tool and provider code) only in a trusted workspace")

    def progress(event: dict[str, Any]) -> None:
        runs.server.protocol.notify(EVAL_EVENT, {"uri": document_uri, **{
            key: event.get(key) for key in ("case", "model", "done", "total", "passed", "runs")}})

    host = await runs.host(runs.server.host.root_of(path))
    try:
        found: dict[str, Any] = await host.run_eval(path, options, progress)
    except RunHostError as error:
        raise JsonRpcRequestFailed(str(error)) from None
    return found


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
