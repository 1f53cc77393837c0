"""Agent tests: recorded runs kept as cases under `<root>/.oscova/tests/` and replayed (`oscova-lsp test`).

A case is one recorded transcript (the JSON-lines file a run writes under `.oscova/runs/`, with its
requests, responses and tool results), copied to `.oscova/tests/<name>.jsonl` by `save_case`. Its name is
its path below `.oscova/tests/` without `.jsonl` (`billing/refund` is `.oscova/tests/billing/refund.jsonl`).
Running a case replays the agent as it is now against the recorded model answers and tool results
(`replay.replay_run`): it passes when the agent sends what was recorded, and fails with the first
difference as a unified diff.

`update` re-records the expectation of a case whose change is intended, as snapshot tests do (syrupy, jest):
the agent's requests are the snapshot, the recorded model answers and tool results are its fixtures. The
replay answers each request with the recorded answer at the same position, and the requests the agent now
sends replace the recorded ones. When the recorded answers no longer fit (the agent asks more often than it
was answered, or a recorded answer calls a tool the agent no longer offers) the case cannot be updated
this way; it says so, and the case is recorded afresh with a run and `--save`.

Cases are read, listed and written through the file gateway (`oscova_runtime.paths`): a case or a folder of
cases that is a FIFO, a device or a link leading out of its workspace is listed with the reason it was
refused (and fails alone: every other case still runs), and nothing is written outside the workspace.

Plain Python, shared by the command line and the language server's `oscova.listTests` / `oscova.runTest`.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from oscova_runtime.paths import (
    FileRefused,
    copy_file,
    is_inside,
    read_text,
    scratch_folder,
    walk,
    write_text,
)

from ..analysis.discovery import workspace_roots
from ..reporting import display_path, github_data, github_property, json_text, printable, printable_line
from ..wire.commands import CaseListing, CaseRunResult
from ..wire.reports import CasesReport
from .errors import RunError
from .events import describe_exception
from .junit import JUnitCase, JUnitSuite, junit_xml
from .transcript import (
    MAX_TRANSCRIPT_BYTES,
    Recording,
    RecordingError,
    load_recording,
    resolve_transcript,
    transcript_boundary,
)

TESTS_DIRECTORY = os.path.join(".oscova", "tests")
CASE_SUFFIX = ".jsonl"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)*$")
DRIFT_WORDS = "drifted from the recording"
"""In the error of a replayed run that stopped at a drift (`replay.ReplayDrift`), unlike a run that failed."""
CaseStatus = Literal["passed", "failed", "updated", "error"]
GITIGNORE_LINES = (".oscova/*", "!.oscova/tests/")
"""The `.gitignore` lines (beside `oscova.toml`) that commit the cases and keep the rest of `.oscova/` (run
transcripts, memory, personal context: this machine's) out of the repository."""


def gitignore_path(root: str) -> str:
    return os.path.join(root, ".gitignore")


def missing_gitignore_lines(root: str) -> list[str]:
    """The `GITIGNORE_LINES` the workspace's `.gitignore` (beside `oscova.toml`) does not have yet: all of them
    when there is none or it cannot be read."""
    try:
        present = {line.strip() for line in read_text(gitignore_path(root), root=root).splitlines()}
    except FileRefused:
        present = set()
    return [line for line in GITIGNORE_LINES if line not in present]


def add_gitignore_lines(root: str) -> None:
    """Appends the missing `GITIGNORE_LINES` to the workspace's `.gitignore` (made if missing), after a newline
    when its last line has none; FileRefused when it cannot be written."""
    path = gitignore_path(root)
    try:
        before = read_text(path, root=root)
    except FileRefused:
        before = ""
    text = "".join(f"{line}\n" for line in missing_gitignore_lines(root))
    write_text(path, ("\n" if before and not before.endswith("\n") else "") + text, root=root, append=True)


class CaseError(Exception):
    """A usage error with words for the user: no such run, a bad name, a path that is not a case."""


@dataclass(frozen=True)
class Case:
    name: str
    """The path below `.oscova/tests/` without `.jsonl`, `/`-separated."""
    path: str
    """The case file, absolute."""
    root: str
    """The workspace root the case belongs to (the folder holding `.oscova/tests/`)."""
    refused: str | None = None
    """Why this path (a folder of cases leading out of the workspace) is not read at all, or None."""

    def recording(self) -> Recording:
        """The recorded run; raises `RecordingError` with words when the file cannot serve as one."""
        if self.refused is not None:
            raise RecordingError(self.refused)
        return load_recording(self.path, self.root)

    def listing(self) -> CaseListing:
        """The case as `oscova.listTests` lists it: its agent and input, or why it cannot be read."""
        try:
            recording = self.recording()
        except RecordingError as error:
            return CaseListing(name=self.name, path=self.path, root=self.root, error=str(error))
        return CaseListing(name=self.name, path=self.path, root=self.root, agent_id=recording.agent_id,
                           input=recording.input)


@dataclass
class CaseResult:
    case: Case
    status: CaseStatus
    agent_id: str | None = None
    difference: str | None = None
    """The unified diff between what was recorded and what the agent sends now (failed and updated)."""
    error: str | None = None
    """Why the case could not be replayed (status `error`) or updated."""
    duration: float = 0.0
    events: list[dict[str, Any]] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        return self.status in ("passed", "updated")

    def answer(self) -> CaseRunResult:
        """What `oscova.runTest` answers, and `oscova-lsp test --format json` lists."""
        return CaseRunResult(name=self.case.name, path=self.case.path, status=self.status, agent_id=self.agent_id,
                             duration_ms=round(self.duration * 1000, 1), difference=self.difference, error=self.error)


# -------------------------------------------------------------------------------------------- finding


def tests_dir(root: str) -> str:
    return os.path.join(root, TESTS_DIRECTORY)


def _case_of(path: str) -> Case:
    """The case a file is: its root is the workspace holding the `.oscova/tests/` folder it is in."""
    path = os.path.abspath(path)
    parts = path.split(os.sep)
    for i in range(len(parts) - 3, 0, -1):
        if parts[i] == ".oscova" and parts[i + 1] == "tests":
            root = os.sep.join(parts[:i]) or os.sep
            name = "/".join(parts[i + 2:])[: -len(CASE_SUFFIX)]
            return Case(name, path, root)
    raise CaseError(f"{path} is not a case: cases live under a workspace's {TESTS_DIRECTORY}{os.sep} folder "
                    "(`oscova-lsp test --save RUN_ID` puts one there)")


def _cases_below(folder: str) -> list[Case]:
    """The cases below a folder inside `.oscova/tests/`; a folder there that leads out of the workspace (the
    folder itself, or a link to one below it) is one refused entry, never walked."""
    root = _case_of(os.path.join(folder, "_" + CASE_SUFFIX)).root
    try:
        tree = walk(folder, root=root)
    except FileRefused as refused:
        return [_refused(folder, root, refused)]
    found = []
    for dirpath, dirnames, filenames in tree:
        dirnames.sort()
        for name in dirnames:  # links to folders are not walked: say so when one leads out
            linked = os.path.join(dirpath, name)
            if os.path.islink(linked) and not is_inside(linked, root):
                found.append(_refused(linked, root, FileRefused("it is a symlink that leads outside the workspace "
                                                                "root; cases there are not read")))
        for filename in sorted(filenames):
            if filename.endswith(CASE_SUFFIX):
                found.append(_case_of(os.path.join(dirpath, filename)))
    return found


def _refused(path: str, root: str, refused: FileRefused) -> Case:
    shown = os.path.relpath(path, root)
    return Case(shown, path, root, refused=f"{shown}: {refused}")


def find_cases(paths: Sequence[str]) -> list[Case]:
    """The cases at each path: a case file; a folder inside `.oscova/tests/` (the cases below it); any other
    folder (the `.oscova/tests/` of the workspace holding it and of every workspace nested below it).
    Raises `CaseError` for a path that does not exist or a file that is not a case."""
    cases: dict[str, Case] = {}
    for given in paths:
        path = os.path.abspath(given)
        if not os.path.lexists(path):
            raise CaseError(f"no such file or directory: {given}")
        if not os.path.isdir(path):  # a file, a FIFO or a link: the case's read says what it is
            if not path.endswith(CASE_SUFFIX):
                raise CaseError(f"{given} is not a case: a case is a `{CASE_SUFFIX}` file under {TESTS_DIRECTORY}")
            found = [_case_of(path)]
        elif f"{os.sep}.oscova{os.sep}tests" in path + os.sep:
            found = _cases_below(path)
        else:
            found = [c for root in workspace_roots(path) if os.path.lexists(tests_dir(root))
                     for c in _cases_below(tests_dir(root))]
        for case in found:
            cases.setdefault(case.path, case)
    return list(cases.values())


# -------------------------------------------------------------------------------------------- saving


def find_run(root: str, run: str) -> str:
    """The transcript of a run: its run id (or the start of one), or the path of a transcript
    (`transcript.resolve_transcript`, the lookup `run --replay` and `diff` use too)."""
    try:
        return os.path.abspath(resolve_transcript(root, run))
    except RecordingError as error:
        raise CaseError(str(error)) from None


def default_case_name(agent_id: str) -> str:
    """The name a saved case gets without `--name` (before `-2`, `-3`, … when it is taken)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", agent_id)[:64] or "case"


def save_case(root: str, run: str, name: str | None = None) -> Case:
    """Promotes a completed run's transcript to a case; the name defaults to the agent id (`-2`, `-3`, …
    when taken). Raises `CaseError` with words for the user."""
    source = find_run(root, run)
    try:
        recording = load_recording(source)
    except RecordingError as error:
        raise CaseError(str(error)) from None
    if recording.status != "completed":
        raise CaseError(f"the run in {source} ended {recording.status or 'without an end'}: only a completed run "
                        "can become a case (its recorded answers must reach the end)")
    if name is not None:
        name = name.strip().removesuffix(CASE_SUFFIX)
        if not NAME.match(name) or ".." in name.split("/"):
            raise CaseError(f"the case name {name!r} is not valid: letters, digits, `_`, `.`, `-`, and `/` "
                            "between folders")
        target = os.path.join(tests_dir(root), *name.split("/")) + CASE_SUFFIX
        if os.path.exists(target):
            raise CaseError(f"a case named {name!r} exists ({target}); choose another --name")
    else:
        base = default_case_name(recording.agent_id)
        name, n = base, 1
        while os.path.exists(os.path.join(tests_dir(root), name + CASE_SUFFIX)):
            n += 1
            name = f"{base}-{n}"
        target = os.path.join(tests_dir(root), name + CASE_SUFFIX)
    try:
        copy_file(source, target, source_root=transcript_boundary(source), root=root, limit=MAX_TRANSCRIPT_BYTES,
                  exclusive=True)
    except FileRefused as refused:
        raise CaseError(f"the case {name!r} was not saved to {target}: {refused}") from None
    return Case(name, target, root)


# ------------------------------------------------------------------------------------------- running


async def run_case(case: Case, *, update: bool = False, trace: bool = False, **replay: Any) -> CaseResult:
    """Replays one case (never a network connection: the recorded answers and tool results stand in, and
    spans are exported only with `trace`). With `update`, a drifted case is re-recorded (the module
    docstring says how) and reports `updated`. `replay`: more options of `replay.replay_run` (`runs_dir`,
    `trusted`, `files`)."""
    from .replay import replay_run

    began = time.perf_counter()
    agent_id: str | None = None
    try:
        recording = case.recording()
        agent_id = recording.agent_id
        result = await replay_run(case.root, agent_id, case.path, trace=trace, **replay)
        failure = result.result.get("error")
        if not result.matched and failure and recording.status == "completed" and DRIFT_WORDS not in failure:
            raise CaseError(f"The replay of {agent_id} failed: {failure}")  # not a drift: the agent cannot run
        if result.matched or not update:
            return CaseResult(case, "passed" if result.matched else "failed", agent_id,
                              difference=None if result.matched else _drift(result.difference, result.status),
                              duration=time.perf_counter() - began, events=result.events)
        problem = await _rerecord(case, recording)
        return CaseResult(case, "failed" if problem else "updated", agent_id,
                          difference=_drift(result.difference, result.status),
                          error=f"The case cannot be updated: {problem}; record the run again and save it with "
                                "`oscova-lsp test --save`" if problem else None,
                          duration=time.perf_counter() - began, events=result.events)
    except (CaseError, RunError, RecordingError) as error:
        message = str(error)
    except OSError as error:
        message = f"The case cannot be read: {describe_exception(error)}"
    except Exception as error:  # noqa: BLE001 - one case that cannot run never stops the others
        message = f"The case could not run: {describe_exception(error)}"
    return CaseResult(case, "error", agent_id, error=message, duration=time.perf_counter() - began)


def _drift(difference: str | None, status: str) -> str:
    """What a failed replay shows: the request that drifted, or (same requests) how the run ended now."""
    return difference or f"the agent sent what was recorded, but the run now ends {status}, or with another answer"


async def _rerecord(case: Case, recording: Recording) -> str | None:
    """Replays the case answering each model request with the recorded answer at its position, records what
    the agent sends now, and puts that recording in place of the case once it replays as recorded. Returns
    why it could not (the case is left as it was), or None."""
    from .replay import Replayer, refuse, replay_run
    from .service import RunService

    class Rerecorder(Replayer):
        def _expect(self, request: dict[str, Any]) -> dict[str, Any]:
            if self.drift is not None:
                raise self._stop(self.drift)
            self._asked += 1
            if not self._pending:
                raise self._stop(f"the agent now makes model request {self._asked}, which the recording has "
                                 "no answer for")
            return self._pending.popleft()

    rerecorder = Rerecorder(recording)
    with scratch_folder("oscova-update-") as scratch:
        service = RunService(case.root, runs_dir=scratch, tracing=False)
        try:
            handle = service.start_run(recording.agent_id, recording.input, recorder=rerecorder,
                                       approve=refuse if recording.approvals else None)  # no tool runs
            result = await handle
        finally:
            await service.aclose()
        problem = rerecorder.finish()
        if problem is None and result["status"] != recording.status:
            problem = f"the run now ends {result['status']}" + (f": {result['error']}" if result.get("error") else "")
        if problem is None and (result.get("transcript") is None or result.get("transcriptError")):
            problem = result.get("transcriptError") or "the new recording could not be written"
        if problem is not None:
            return problem.splitlines()[0]
        again = await replay_run(case.root, recording.agent_id, result["transcript"])
        if not again.matched:
            return (again.difference or f"the new recording replays as {again.status}").splitlines()[0]
        try:  # atomically (a crash leaves the old case or the new one), never through a link leading out
            copy_file(result["transcript"], case.path, source_root=scratch, root=case.root,
                      limit=MAX_TRANSCRIPT_BYTES)
        except FileRefused as refused:
            return f"the case was not rewritten: {refused}"
    return None


# ------------------------------------------------------------------------------------------- reports


def _count(results: Iterable[CaseResult]) -> dict[CaseStatus, int]:
    counts: dict[CaseStatus, int] = {"passed": 0, "failed": 0, "updated": 0, "error": 0}
    for result in results:
        counts[result.status] += 1
    return counts


def summary(results: Sequence[CaseResult]) -> str:
    counts = _count(results)
    parts = [f"{counts['passed']} passed"]
    parts += [f"{counts[k]} {k}" for k in ("failed", "updated") if counts[k]]
    if counts["error"]:
        parts.append(f"{counts['error']} could not run")
    return f"{len(results)} case{'s' if len(results) != 1 else ''}: {', '.join(parts)}"


def format_text(results: Sequence[CaseResult]) -> str:
    """For a terminal: what comes from files and recordings (names, errors, diffs) escaped (`printable`)."""
    lines = []
    for r in results:
        word = {"passed": "PASS", "failed": "FAIL", "updated": "UPDATED", "error": "ERROR"}[r.status]
        lines.append(f"{word} {printable_line(r.case.name)}" + (f" ({printable_line(r.agent_id)})" if r.agent_id else ""))
        if r.error:
            lines.append(f"  {printable(r.error)}")
        if r.difference and r.status != "passed":
            lines.extend("  " + line for line in printable(r.difference).rstrip("\n").splitlines())
    lines.append(summary(results))
    return "\n".join(lines)


def format_json(results: Sequence[CaseResult]) -> str:
    counts = _count(results)
    report = CasesReport(cases=[r.answer() for r in results], passed=counts["passed"], failed=counts["failed"],
                         updated=counts["updated"], error=counts["error"])
    return json_text(report.wire(), indent=2)


def format_github(results: Sequence[CaseResult]) -> str:
    """GitHub workflow commands: an `::error` annotation on the case file of each case that failed."""
    lines = []
    for r in results:
        if r.ok:
            lines.append(f"{'PASS' if r.status == 'passed' else 'UPDATED'} {printable_line(r.case.name)}")
            continue
        what = "drifted" if r.status == "failed" else "could not run"
        body = printable("\n".join(x for x in (r.error, r.difference) if x))
        lines.append(f"::error file={github_property(printable_line(display_path(r.case.path)))},line=1,"
                     f"title={github_property(f'Agent test {printable_line(r.case.name)} {what}')}::"
                     f"{github_data(body)}")
    lines.append(summary(results))
    return "\n".join(lines)


def _junit_case(r: CaseResult) -> JUnitCase:
    """Drift is a `failure`, a case that cannot run an `error`, an update a note in `system-out`."""
    case = JUnitCase(r.case.name, f"oscova.{r.agent_id or 'case'}", display_path(r.case.path), r.duration)
    if r.status == "failed":
        return replace(case, outcome="failure", kind="drift", text=r.difference or "",
                       message=r.error or "the agent's requests drifted from the recording")
    if r.status == "error":
        return replace(case, outcome="error", kind="error", message=r.error or "the case could not run",
                       text=r.error or "")
    if r.status == "updated":
        return replace(case, output=f"updated: the recording now holds the requests the agent sends\n{r.difference or ''}")
    return case


def format_junit(results: Sequence[CaseResult]) -> str:
    """JUnit XML: a test suite per workspace root, a test case per case."""
    by_root: dict[str, list[CaseResult]] = {}
    for r in results:
        by_root.setdefault(r.case.root, []).append(r)
    return junit_xml("oscova agent tests", [JUnitSuite(display_path(root) or ".", [_junit_case(r) for r in items])
                                            for root, items in by_root.items()])


def render(results: Sequence[CaseResult], format: str) -> str:
    return {"text": format_text, "json": format_json, "github": format_github, "junit": format_junit}[format](results)
