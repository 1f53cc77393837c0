"""Evaluations (`oscova-lsp eval`): every case × model × repeat of `*.eval.yaml` files run against the live
endpoints, graded, and kept under `.oscova/evals/<UTC time>/` (each run's transcript and `results.json`, the
facts every run was graded on, from which `--rescore` grades again with no model call).

Runs go through the one `RunService` of their workspace, at most `jobs` at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import json
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from oscova_runtime.evaluation import MAX_EVAL_RUNS, EvalCase, Evaluation, run_count, too_many_runs
from oscova_runtime.host import RUN_VARIABLES
from oscova_runtime.paths import FileRefused, decode_text, is_inside, make_folders, read_bytes, write_file
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..analysis.diagnostics import Severity
from ..analysis.disk import find_root
from ..analysis.files import EvalFile
from .grading import RunFacts, Verdict, describe, grade, judge_messages, parse_verdict, sides
from .service import RunService
from .transcript import MAX_TRANSCRIPT_BYTES

EVALS_DIRECTORY = os.path.join(".oscova", "evals")
RESULTS_FILE = "results.json"
RESULTS_VERSION = 1


class EvalError(Exception):
    """A usage error, in a sentence: nothing to evaluate, a file that cannot be evaluated, a bad `--rescore`."""


@dataclass
class LoadedEval:
    root: str
    path: str
    evaluation: Evaluation
    case_lines: dict[str, int]
    """Case name -> its 1-based line in the file (annotations point there)."""
    agent_model: str = "default"

    def models(self, chosen: Sequence[str] = ()) -> list[str]:
        return list(chosen) or self.evaluation.models or [self.agent_model]

    def cases(self, only: str | None) -> list[EvalCase]:
        return [c for c in self.evaluation.cases if only is None or c.name == only]


class Failure(NamedTuple):
    """One failed assertion of one run; `expected` / `actual` for a drifted output (`grading.sides`)."""

    run: int
    assertion: str
    message: str
    expected: str | None = None
    actual: str | None = None


@dataclass
class CaseOutcome:
    """One case on one model: its runs and how they graded."""

    file: str
    agent: str
    case: str
    model: str
    pass_rate: float
    line: int = 1
    runs: list[RunFacts] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    expected_runs: int = 0

    @property
    def passed(self) -> int:
        failed = {failure.run for failure in self.failures}
        return sum(1 for facts in self.runs if facts.repeat not in failed)

    @property
    def total(self) -> int:
        return max(self.expected_runs, len(self.runs))

    @property
    def needed(self) -> int:
        """How many runs must pass to meet the pass rate."""
        return math.ceil(self.pass_rate * self.total - 1e-9)

    @property
    def ok(self) -> bool:
        total = self.total
        return total > 0 and len(self.runs) == total and self.passed >= self.needed

    @property
    def tokens(self) -> int:
        return sum(f.tokens for f in self.runs)

    @property
    def duration_ms(self) -> float:
        return round(sum(f.duration_ms for f in self.runs), 1)


# ------------------------------------------------------------------------------------------- finding


def find_evals(paths: Sequence[str]) -> list[LoadedEval]:
    """The evaluation files under `paths` (files or folders), each validated; EvalError when one has errors."""
    found: list[LoadedEval] = []
    for root, under in _roots(paths).items():
        analysis = RunService(root, tracing=False).analysis
        for path, parsed in sorted(analysis.workspace.files.items()):
            if not isinstance(parsed, EvalFile) or not any(path == u or is_inside(path, u, real=False) for u in under):
                continue
            errors = [d for d in analysis.diagnostics(path) if d.severity is Severity.ERROR]
            if errors or parsed.evaluation is None:
                shown = "".join(f"\n  {os.path.relpath(path)}:{d.range.start.line + 1}:{d.range.start.character + 1}: "
                                f"{d.code} {d.message}" for d in errors[:10])
                raise EvalError(f"{os.path.relpath(path)} cannot be evaluated until its errors are fixed "
                                f"(`oscova-lsp check` lists them){shown or ' (' + (parsed.skipped or 'unreadable') + ')'}")
            found.append(_loaded(root, path, parsed, analysis))
    return found


def _roots(paths: Sequence[str]) -> dict[str, list[str]]:
    roots: dict[str, list[str]] = {}
    for given in paths:
        path = os.path.abspath(given)
        if not os.path.exists(path):
            raise EvalError(f"no such file or directory: {given}")
        root = find_root(path)
        if root is None:
            raise EvalError(f"{given} is in no workspace: no oscova.toml in it or any folder above it")
        roots.setdefault(root, []).append(path)
    return roots


def _loaded(root: str, path: str, parsed: EvalFile, analysis: Any) -> LoadedEval:
    evaluation = parsed.evaluation
    if evaluation is None:  # the caller refuses these first
        raise EvalError(f"{os.path.relpath(path)} cannot be evaluated")
    lines = {}
    doc = parsed.doc
    for index, case in enumerate(evaluation.cases):
        rng = doc.value_range(("cases", index, "name")) if doc is not None else None
        lines[case.name] = rng.start.line + 1 if rng is not None else 1
    target = analysis.workspace.definition_by_id(evaluation.agent)
    model = target.definition.model if target is not None and target.definition is not None else "default"
    return LoadedEval(root, path, evaluation, lines, model)


# ------------------------------------------------------------------------------------------- running


@dataclass
class EvalOptions:
    models: Sequence[str] = ()
    repeat: int | None = None
    case: str | None = None
    jobs: int = 4
    progress: Callable[[int, int, CaseOutcome], None] | None = None
    """Called as each run ends: (runs done, runs in all, the outcome it belongs to)."""


@dataclass
class EvalReport:
    outcomes: list[CaseOutcome]
    folder: str | None = None
    cancelled: bool = False

    @property
    def ok(self) -> bool:
        return not self.cancelled and bool(self.outcomes) and all(o.ok for o in self.outcomes)

    def none_completed(self) -> str | None:
        """When runs ended and none completed (the endpoint down, its key unset), one sentence naming the cause:
        the failures' own words, the most frequent first; else None."""
        runs = [facts for outcome in self.outcomes for facts in outcome.runs]
        if not runs or any(facts.status == "completed" for facts in runs):
            return None
        causes: dict[str, int] = {}
        for facts in runs:
            cause = facts.error or f"the run ended `{facts.status}`"
            causes[cause] = causes.get(cause, 0) + 1
        ranked = sorted(causes, key=lambda cause: -causes[cause])
        others = len(ranked) - 1
        return f"no run completed: {ranked[0]}" + (
            f" (and {others} other cause{'s' if others > 1 else ''}; the report lists them)" if others else "")


def evaluation_folder(root: str) -> str:
    """`<root>/.oscova/evals/<UTC time>/`, made inside the root (a `.oscova` link leading out is refused)."""
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    base = os.path.join(root, EVALS_DIRECTORY, stamp)
    folder, n = base, 1
    while os.path.lexists(folder):
        n += 1
        folder = f"{base}-{n}"
    try:
        make_folders(folder, root=root)
    except FileRefused as refused:
        raise EvalError(f"the evaluation cannot be recorded in {os.path.relpath(folder)}: {refused.cause}; "
                        "nothing was run") from None
    return folder


def check_matrix(evals: Sequence[LoadedEval], options: EvalOptions) -> None:
    """EvalError when the evaluations given would make more than `MAX_EVAL_RUNS` runs in all: counted from the
    numbers alone, before anything is allocated for them (`--repeat 100000000` allocates nothing)."""
    total, parts = 0, []
    for loaded in evals:
        cases = len(loaded.cases(options.case))
        models = len(options.models) or len(loaded.evaluation.models)
        repeat = options.repeat or loaded.evaluation.repeat
        total += run_count(cases, models, repeat)
        parts.append((loaded, cases, models, repeat))
    if total <= MAX_EVAL_RUNS:
        return
    loaded, cases, models, repeat = max(parts, key=lambda part: run_count(*part[1:]))
    words = too_many_runs(cases, models, repeat) if len(parts) == 1 else None
    raise EvalError(f"{os.path.relpath(loaded.path)}: {words}; nothing was run" if words else
                    f"the evaluations given make {total:,} runs, over the {MAX_EVAL_RUNS:,} one evaluation may make "
                    f"({os.path.relpath(loaded.path)} alone {run_count(cases, models, repeat):,}); run fewer at a "
                    "time; nothing was run")


async def run_evals(evals: Sequence[LoadedEval], options: EvalOptions) -> EvalReport:
    """Runs every case × model × repeat; a cancellation (Ctrl-C) ends the runs and keeps what finished."""
    check_matrix(evals, options)
    plans = [(loaded, _outcomes(loaded, options)) for loaded in evals]
    if not any(outcomes for _, outcomes in plans):
        raise EvalError(f"no case named {options.case!r} in the evaluations given" if options.case else
                        "the evaluations given have no case to run")
    report = EvalReport([o for _, outcomes in plans for o in outcomes])
    by_root: dict[str, list[tuple[LoadedEval, list[CaseOutcome]]]] = {}
    for loaded, outcomes in plans:
        by_root.setdefault(loaded.root, []).append((loaded, outcomes))
    total = sum(o.expected_runs for o in report.outcomes)
    done = [0]
    try:
        for root, items in by_root.items():
            report.folder = evaluation_folder(root)
            await _run_root(root, report.folder, items, options, done, total)
            _write_results(root, report.folder, [o for _, outcomes in items for o in outcomes])
    except asyncio.CancelledError:
        report.cancelled = True
        if report.folder is not None:
            with contextlib.suppress(EvalError):
                _write_results(report.folder.split(os.sep + EVALS_DIRECTORY)[0], report.folder, report.outcomes)
    return report


def _outcomes(loaded: LoadedEval, options: EvalOptions) -> list[CaseOutcome]:
    repeat = options.repeat or loaded.evaluation.repeat
    return [CaseOutcome(loaded.path, loaded.evaluation.agent, case.name, model, loaded.evaluation.pass_rate,
                        loaded.case_lines.get(case.name, 1), expected_runs=repeat)
            for case in loaded.cases(options.case) for model in loaded.models(options.models)]


async def _run_root(root: str, folder: str, items: list[tuple[LoadedEval, list[CaseOutcome]]],
                    options: EvalOptions, done: list[int], total: int) -> None:
    service = RunService(root, runs_dir=folder)
    gate = asyncio.Semaphore(max(1, options.jobs))
    judge = Judge(service)

    async def one(loaded: LoadedEval, case: EvalCase, outcome: CaseOutcome, repeat: int) -> None:
        async with gate:
            facts = await run_case_once(service, loaded, case, outcome.model, repeat)
            await judge.grade(loaded.evaluation, case, facts)
        failures = await asyncio.to_thread(graded, case, facts)  # patterns may take their budget: off the loop
        _record(outcome, facts, failures)
        done[0] += 1
        if options.progress is not None:
            options.progress(done[0], total, outcome)

    tasks = [asyncio.ensure_future(one(loaded, case, outcome, n))
             for loaded, outcomes in items for outcome in outcomes
             for case in [c for c in loaded.evaluation.cases if c.name == outcome.case]
             for n in range(1, outcome.expected_runs + 1)]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await judge.aclose()
        await service.aclose()


COMPLETES = "the run completes (no `status` assertion)"
"""What a run is held to when its case asserts no status: a failed or cancelled run fails its case, and so does
one whose answer is cut off or was stopped (graded, that part answer would pass for the model's answer)."""


def graded(case: EvalCase, facts: RunFacts) -> list[Failure]:
    """The assertions of `case` the run failed, each with why; a run that did not complete fails `COMPLETES`
    unless the case asserts its status."""
    failures = []
    if not any(e.kind == "status" for e in case.expect):
        if facts.status != "completed":
            failures.append(Failure(facts.repeat, COMPLETES, f"the run ended `{facts.status}`"
                                    + (f": {facts.error}" if facts.error else "")))
        elif facts.incomplete:
            failures.append(Failure(facts.repeat, COMPLETES, f"its answer is incomplete: {facts.incomplete}"))
    for expectation in case.expect:
        message = grade(expectation, facts)
        if message is not None:
            expected, actual = sides(expectation, facts) or (None, None)
            failures.append(Failure(facts.repeat, describe(expectation), message, expected, actual))
    return failures


def _record(outcome: CaseOutcome, facts: RunFacts, failures: list[Failure]) -> None:
    outcome.runs.append(facts)
    outcome.runs.sort(key=lambda f: f.repeat)
    outcome.failures.extend(failures)
    outcome.failures.sort(key=lambda f: f.run)


async def run_case_once(service: RunService, loaded: LoadedEval, case: EvalCase, model: str,
                        repeat: int) -> RunFacts:
    """One run of a case on a model, as facts; a failing endpoint is a failed run with its sentence."""
    facts = RunFacts(case.name, model, repeat, input=case.input)
    token = RUN_VARIABLES.set(dict(case.variables))
    try:
        if any(e.instructions_contain is not None for e in case.expect):
            facts.instructions = await _instructions(service, loaded.evaluation.agent, case.input)
        started = time.monotonic()
        result = await service.start_run(loaded.evaluation.agent, case.input, model=model,
                                         on_event=lambda event: _heard(facts, event))
    finally:
        RUN_VARIABLES.reset(token)
    facts.duration_ms = round((time.monotonic() - started) * 1000, 1)
    facts.status, facts.text = str(result["status"]), str(result.get("text") or "")
    facts.error = result.get("error")
    facts.incomplete = (result.get("incomplete") or {}).get("message")
    facts.transcript = result.get("transcript")
    return facts


def _heard(facts: RunFacts, event: dict[str, Any]) -> None:
    kind = event.get("kind")
    if kind == "toolCall" and event.get("within") is None:  # the agent's own, not an agent's it called as a tool
        facts.tool_calls.append({"name": event.get("name"), "arguments": event.get("arguments")})
    elif kind == "modelCall":
        facts.model_calls += 1
        facts.tokens += int((event.get("usage") or {}).get("totalTokens") or 0)


async def _instructions(service: RunService, agent_id: str, input: str) -> str | None:
    from .errors import RunError

    try:
        preview = await service.preview(agent_id, input)
    except RunError as error:
        return f"(the instructions could not be assembled: {error})"
    return str(preview.get("instructions") or "")


class Judge:
    """Asks the evaluation's judge model about each `judge` assertion of a run (`grading.JUDGE_PROMPT`)."""

    def __init__(self, service: RunService) -> None:
        self.service = service
        self._clients: dict[str, Any] = {}

    async def grade(self, evaluation: Evaluation, case: EvalCase, facts: RunFacts) -> None:
        for expectation in case.expect:
            rubric = expectation.judge
            if rubric is not None and rubric not in facts.judged:
                facts.judged[rubric] = await self.ask(evaluation.judge, rubric, facts)

    async def ask(self, model: str, rubric: str, facts: RunFacts) -> Verdict:
        from oscova_runtime.messages import ChatMessage, ChatOptions

        from .errors import describe_exception
        from .events import Redactor

        prompt = judge_messages(rubric, facts.input, facts.text)
        config = self.service.view().config
        redact = Redactor.for_config(config)
        settings = config.models.get(model)
        if settings is None:
            reason = f"no judge model: `[models.{model}]` is not configured"
            return Verdict(False, reason, prompt, reason)
        client = self._clients.get(model)
        if client is None:
            from oscova_runtime.chat_client import client_for

            client = self._clients[model] = client_for(settings, model, self.service.root)
        try:
            response = await client.get_response([ChatMessage.of("user", prompt)], ChatOptions(temperature=0))
        except Exception as error:  # noqa: BLE001 - a judge that cannot be asked fails the assertion, in words
            reason = redact.text(f"the judge model `{model}` could not be asked: {describe_exception(error)}")
            return Verdict(False, reason, prompt, reason)
        reply = redact.text(response.text)
        verdict = parse_verdict(reply)
        return Verdict(verdict.passed, verdict.reason, prompt, reply)

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()


# ------------------------------------------------------------------------------------------- results


def _write_results(root: str, folder: str, outcomes: Iterable[CaseOutcome]) -> None:
    """`results.json`: every run's facts, by evaluation file (relative to the root), case and model."""
    runs = [{"file": os.path.relpath(o.file, root), **facts.to_json(),
             "transcript": os.path.relpath(facts.transcript, folder) if facts.transcript else None}
            for o in outcomes for facts in o.runs]
    data = {"version": RESULTS_VERSION, "root": root, "time": _dt.datetime.now(_dt.UTC).isoformat(), "runs": runs}
    try:
        write_file(os.path.join(folder, RESULTS_FILE), results_json(data).encode(), root=root)
    except FileRefused as refused:
        raise EvalError(f"the results could not be written in {os.path.relpath(folder)}: {refused.cause}") from None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def results_json(data: Any) -> str:
    """`data` as JSON text that is valid UTF-8 and reads back the same: the lone surrogate a file name that is not
    UTF-8 holds (`\\udcff` for its byte 0xFF) written as its JSON escape, which a decoder turns back into it."""
    text = json.dumps(data, ensure_ascii=False, indent=1)
    return _LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


MAX_SHOWN_TRANSCRIPT = 4_000_000
"""The most of one transcript an HTML report holds (a longer one is cut, and says so)."""


def transcript_text(report: EvalReport, facts: RunFacts) -> str:
    """A run's transcript as text for a report, read through the gateway inside the evaluation's folder (a name
    in a committed `results.json` leads nowhere else: not `/etc/passwd`, not `../../id_rsa`, not through a link);
    or why not."""
    if not facts.transcript:
        return "(no transcript was written)"
    if report.folder is None:
        return "(the transcript cannot be read: the evaluation has no folder)"
    path = os.path.join(report.folder, facts.transcript)
    if not is_inside(path, report.folder, real=False):
        return (f"(the transcript cannot be read: {facts.transcript!r} is not in the evaluation's folder, the only "
                "place a report reads transcripts from)")
    try:
        data = read_bytes(path, root=report.folder, limit=MAX_TRANSCRIPT_BYTES)
    except FileRefused as refused:
        return f"(the transcript cannot be read: {refused.cause})"
    shown = data[:MAX_SHOWN_TRANSCRIPT].decode("utf-8", errors="replace")
    return shown + (f"\n… cut: the transcript has {len(data)} bytes" if len(data) > MAX_SHOWN_TRANSCRIPT else "")


class _Recorded(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class RecordedCall(_Recorded):
    name: str
    arguments: Any = None


class RecordedVerdict(_Recorded):
    passed: bool
    reason: str
    prompt: str = ""
    reply: str = ""


class RecordedRun(_Recorded):
    """One run as `results.json` keeps it: `RunFacts` and the evaluation file it belongs to."""

    file: str
    case: str
    model: str
    repeat: int = Field(ge=1)
    input: str = ""
    status: str = "failed"
    text: str = ""
    error: str | None = None
    incomplete: str | None = None
    tool_calls: list[RecordedCall] = []
    tokens: int = 0
    model_calls: int = 0
    duration_ms: float = 0.0
    instructions: str | None = None
    transcript: str | None = None
    judged: dict[str, RecordedVerdict] = {}

    def facts(self) -> RunFacts:
        return RunFacts(self.case, self.model, self.repeat, input=self.input, status=self.status, text=self.text,
                        error=self.error, incomplete=self.incomplete,
                        tool_calls=[{"name": c.name, "arguments": c.arguments} for c in self.tool_calls],
                        tokens=self.tokens, model_calls=self.model_calls, duration_ms=self.duration_ms,
                        instructions=self.instructions, transcript=self.transcript,
                        judged={k: Verdict(v.passed, v.reason, v.prompt, v.reply) for k, v in self.judged.items()})


class ResultsFile(_Recorded):
    """`results.json`, as `_write_results` writes it."""

    version: int
    runs: list[RecordedRun]


def _shape_problem(error: ValidationError) -> str:
    """The first problem pydantic found, as `runs[0].repeat: Input should be a valid integer`."""
    first = error.errors()[0]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]).lstrip(".")
    message = "Input should be a JSON object" if first["type"] in ("model_type", "dict_type") else first["msg"]
    return f"{where}: {message}" if where else message


def read_results(path: str, root: str) -> list[tuple[str, RunFacts]]:
    """The runs `results.json` at `path` records, by evaluation file (relative to the root); EvalError with a
    sentence for a file that cannot be read or is not of the shape `_write_results` writes."""
    shown = os.path.relpath(path)
    try:
        data = json.loads(decode_text(read_bytes(path, root=root, limit=512_000_000)))
    except FileRefused as refused:
        raise EvalError(f"{shown} cannot be read: {refused.cause}") from None
    except RecursionError:
        raise EvalError(f"{shown} is not the results of an evaluation: its JSON nests too deeply") from None
    except ValueError as error:  # not UTF-8, not JSON
        raise EvalError(f"{shown} is not the results of an evaluation: it is not JSON ({error})") from None
    if not isinstance(data, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(data), "a number")
        raise EvalError(f"{shown} is not the results of an evaluation: it holds {kind}, not a JSON object")
    if isinstance(data.get("version"), int) and data["version"] > RESULTS_VERSION:
        raise EvalError(f"{shown} is not the results of an evaluation this oscova-lsp reads: it is of version "
                        f"{data['version']}, written by a newer one (this one reads version {RESULTS_VERSION})")
    try:
        results = ResultsFile.model_validate(data)
    except ValidationError as error:
        raise EvalError(f"{shown} is not the results of an evaluation: {_shape_problem(error)}") from None
    return [(run.file, run.facts()) for run in results.runs]


def rescore(folder: str, evals: Sequence[LoadedEval], options: EvalOptions) -> EvalReport:
    """Grades the runs recorded in `folder` again with the assertions as they are now; no model is called."""
    folder = os.path.abspath(folder)
    root = find_root(folder)
    if root is None:
        raise EvalError(f"{folder} is in no workspace: --rescore takes a folder under .oscova/evals/")
    path = os.path.join(folder, RESULTS_FILE)
    runs = read_results(path, root)
    by_key: dict[tuple[str, str, str], list[RunFacts]] = {}
    for file, facts in runs:
        by_key.setdefault((os.path.normpath(os.path.join(root, file)), facts.case, facts.model), []).append(facts)
    report = EvalReport([], folder)
    for loaded in evals:
        for outcome in _outcomes(loaded, options):
            recorded = by_key.get((loaded.path, outcome.case, outcome.model))
            if not recorded:
                continue
            case = next(c for c in loaded.evaluation.cases if c.name == outcome.case)
            outcome.expected_runs = len(recorded)
            for facts in recorded:
                _record(outcome, facts, graded(case, facts))
            report.outcomes.append(outcome)
    if not report.outcomes:
        raise EvalError(f"{os.path.relpath(path)} holds no run of the cases and models given")
    return report
