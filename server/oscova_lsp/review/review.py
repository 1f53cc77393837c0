"""`oscova-lsp review`: what every agent a change reaches will be sent, before and after, offline.

1. The base commit (`git.resolve_base`) is copied from git objects into a private scratch folder
   (`trees.py`), under the workspaces the PATHs name, while the work tree (read where it is) is parsed; the
   files git reports changed since the base (and files only the work tree's analysis has) are the change.
2. Each workspace root of either side is analysed on both (the base's parse reuses the work tree's for files
   with the same text: `Analysis.load(like=...)`). An agent's request depends on its definition, the
   templates it renders and includes, the host configuration and its active providers' templates, the agents
   it calls, the folders its providers read (skills, Library, memory, notes) and, with trust, the workspace's
   Python code. Agents with a changed dependency are rendered on both sides (`render.py`, fixed inputs) and
   compared part by part; the others are counted unchanged. Agents on one side only are added or removed.
3. Diagnostics of the files the change reaches are compared by file, code and message; the agent tests of
   changed or removed agents are replayed offline against the work tree (`runs/cases.py`), never writing to it.

Nothing of the workspace's code is imported without `trusted`, no model is called and nothing connects
anywhere; nothing is written outside the scratch folder.
"""

from __future__ import annotations

import difflib
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from oscova_runtime.catalogue import plan_providers
from oscova_runtime.paths import FileRefused, is_inside, scratch_folder, walk

from ..analysis.diagnostics import Diagnostic
from ..analysis.discovery import excluded_dirs
from ..analysis.disk import NEVER_SCANNED, find_root, host_config_path
from ..analysis.engine import Analysis
from ..analysis.host import AnalysisHost
from . import git
from .render import NEUTRAL_INPUT, PARTS, Rendered, SideRenderer, agents_of
from .report import AgentChange, Finding, Review, TestOutcome, WorkspaceReview
from .token_delta import token_delta
from .trees import WORK_TREE, Tree, add_state, from_commit

DIFF_CONTEXT = 3
STORAGE = {"skills": "skills/", "library": "library/", "private_notes": ".oscova/notes/",
           "personal": ".oscova/personal/"}
"""The folders (relative to the root) a provider reads into the prompt, besides its templates."""


@dataclass
class _Dependencies:
    """What one agent's request on one side is made from (repository-relative paths)."""

    paths: set[str] = field(default_factory=set)
    agents: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    code: str | None = None
    """With trust, an agent using the workspace's code depends on every `.py` file under this root."""


@dataclass
class _Change:
    """The change as the agents see it: paths, the agent ids whose definition files changed, by id."""

    paths: set[str]
    agents: dict[str, set[str]]

    def causes(self, deps: _Dependencies) -> set[str]:
        found = deps.paths & self.paths
        for agent_id in deps.agents & self.agents.keys():
            found |= self.agents[agent_id]
        found |= {p for p in self.paths for folder in deps.folders if p.startswith(folder)}
        if deps.code is not None:
            found |= {p for p in self.paths if p.endswith(".py") and _under(p, deps.code)}
        return found


def _under(path: str, folder: str) -> bool:
    return not folder or path.startswith(folder + "/")


def _joined(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


# ------------------------------------------------------------------------------------------------ sides


class _Side:
    """One workspace root on one side: its analysis, agents and the renderer of their requests."""

    def __init__(self, tree: Tree, root: str, like: Analysis | None, trusted: bool, *, fork_server: bool = False) -> None:
        self.tree = tree
        self.root = root
        self.trusted = trusted
        self.analysis = Analysis(tree.local(root))
        if os.path.isdir(self.analysis.root):
            self.analysis.load(cache=False, like=like, fork_server=fork_server)
        self.agents = agents_of(self.analysis)
        self._renderer: SideRenderer | None = None
        self._host_files = {_joined(root, n) for n in ("oscova.toml", "pyproject.toml")}
        self._closures: dict[str, set[str]] = {}
        self._real: dict[str, str] = {}

    def rel(self, path: str) -> str:
        return self.tree.relative(path)

    def files(self, paths: Iterable[str]) -> set[str]:
        """The repository-relative paths of files read at `paths`: each path, and where a symlink on it leads
        (a template that is a link changes when its target does)."""
        out = set()
        for path in paths:
            out.add(self.rel(path))
            real = self._real.get(path)
            if real is None:
                real = self._real[path] = os.path.realpath(path)
            if real != path and is_inside(real, self.tree.folder, real=False):
                out.add(self.rel(real))
        return out

    @property
    def renderer(self) -> SideRenderer:
        if self._renderer is None:
            self._renderer = SideRenderer(self.analysis, self.tree.folder, trusted=self.trusted)
        return self._renderer

    def _closure(self, template: str | None) -> set[str]:
        """A host template (relative to the root) and what it includes, repository-relative; cached."""
        if not template:
            return set()
        if template not in self._closures:
            workspace = self.analysis.workspace
            self._closures[template] = self.files(workspace.template_closure([workspace.resolve_template(template)]))
        return self._closures[template]

    def dependencies(self, agent_id: str) -> _Dependencies:
        parsed = self.agents[agent_id]
        workspace = self.analysis.workspace
        deps = _Dependencies(self.files([parsed.path]) | self._host_files)
        deps.paths |= self.files(workspace.template_closure(workspace.references_of.get(parsed.path, ())))
        definition = parsed.definition
        if definition is None:
            return deps
        config = workspace.host
        deps.agents = set(definition.agent_tools)
        active = {p.type for p in plan_providers(definition, config, requested=True).providers
                  if p.inactive_reason is None}
        templates = {"environment": config.environment.template, "memory": config.memory.system_prompt,
                     **{name: provider.template for name, provider in config.providers.items()}}
        for kind in active & templates.keys():
            deps.paths |= self._closure(templates[kind])
        for kind, folder in STORAGE.items():
            if kind in active and kind != "skills":
                deps.folders.add(_joined(self.root, folder))
        deps.folders |= {_joined(self.root, f"skills/{name}/") for name in definition.skills if "skills" in active}
        if "memory" in active:
            deps.folders.add(_joined(self.root, config.memory.root.strip("/") + "/"))
        custom = any(t in config.tools for t in [*definition.tools, *definition.pinned_tools]) or any(
            t in config.providers for t in active)
        if self.trusted and custom:
            deps.code = self.root
        return deps

    def defined_by(self, paths: set[str]) -> dict[str, set[str]]:
        """The agent ids of the definitions among `paths`, each with those paths."""
        found: dict[str, set[str]] = {}
        for parsed in self.analysis.workspace.definitions():
            relative = self.rel(parsed.path)
            agent_id = parsed.definition.id if parsed.definition is not None else parsed.raw_id
            if relative in paths and agent_id:
                found.setdefault(agent_id, set()).add(relative)
        return found

    def input_of(self, agent_id: str) -> str | None:
        parsed = self.agents.get(agent_id)
        return parsed.definition.example_input if parsed is not None and parsed.definition is not None else None


# ---------------------------------------------------------------------------------------------- agents


def _diff(part: str, agent_id: str, before: list[str], after: list[str], base_name: str) -> str:
    return "\n".join(difflib.unified_diff(before, after, f"{agent_id} {part} at {base_name}",
                                          f"{agent_id} {part} in the work tree", n=DIFF_CONTEXT, lineterm=""))


def _request_text(rendered: Rendered) -> str:
    return "\n".join(f"## {part}\n" + ("\n".join(rendered.lines(part)) or "(none)") for part in PARTS) + "\n"


async def _render_all(side: _Side, wanted: dict[str, str]) -> dict[str, Rendered]:
    if not wanted:
        return {}
    renderer = side.renderer
    with renderer.active():
        return {agent_id: await renderer.render(agent_id, text) for agent_id, text in sorted(wanted.items())}


async def _compare_agents(base: _Side, head: _Side, change: _Change, review: WorkspaceReview) -> None:
    both = base.agents.keys() & head.agents.keys()
    causes: dict[str, list[str]] = {}
    for agent_id in both:
        found = change.causes(base.dependencies(agent_id)) | change.causes(head.dependencies(agent_id))
        if found:
            causes[agent_id] = sorted(found)
    added, removed = sorted(head.agents.keys() - both), sorted(base.agents.keys() - both)
    inputs = {i: head.input_of(i) or base.input_of(i) or NEUTRAL_INPUT for i in [*causes, *added, *removed]}
    before = await _render_all(base, {i: inputs[i] for i in [*causes, *removed]})
    after = await _render_all(head, {i: inputs[i] for i in [*causes, *added]})
    label = base.tree.label
    for agent_id in sorted(causes):
        old, new = before[agent_id], after[agent_id]
        diffs = {part: _diff(part, agent_id, old.lines(part), new.lines(part), label) for part in PARTS}
        diffs = {part: diff for part, diff in diffs.items() if diff}
        if diffs:
            review.agents.append(AgentChange(agent_id, "changed", head.rel(head.agents[agent_id].path),
                                             causes[agent_id], diffs,
                                             economics=token_delta(agent_id, old, new)))
    review.unchanged = len(both) - len(review.agents)
    review.agents += [AgentChange(i, "added", head.rel(head.agents[i].path), request=_request_text(after[i]))
                      for i in added]
    review.agents += [AgentChange(i, "removed", base.rel(base.agents[i].path), request=_request_text(before[i]))
                      for i in removed]
    shown = {(n.get("kind"), n.get("name")): n for r in [*before.values(), *after.values()] for n in r.not_loaded}
    review.not_loaded = [shown[key] for key in sorted(shown, key=str)]


# ----------------------------------------------------------------------------------------- diagnostics


def _affected(base: _Side, head: _Side, change: _Change) -> set[str]:
    """The files whose diagnostics the change may alter (repository-relative): the changed files and, on each
    side, what depends on them (`Workspace.dependents`: what includes or calls them, what they include; every
    file when the host configuration changed) and what includes a template missing on that side."""
    found = set(change.paths)
    for side in (base, head):
        workspace = side.analysis.workspace
        for relative in change.paths:
            path = side.tree.local(relative)
            found |= {side.rel(p) for p in workspace.dependents(path) | workspace.template_referrers.get(path, set())}
    return found


def _diagnostics(side: _Side, files: set[str]) -> list[Diagnostic]:
    analysis = side.analysis
    with analysis.workspace.one_pass():
        return [d for relative in sorted(files) if (path := side.tree.local(relative)) in analysis.workspace.files
                for d in analysis.diagnostics(path)]


def _key(side: _Side, diagnostic: Diagnostic) -> tuple[str, str, str]:
    """A diagnostic by file, code and message: its line may move with an edit above it."""
    message = diagnostic.message
    for folder in (side.tree.folder, os.path.realpath(side.tree.folder)):
        message = message.replace(folder + os.sep, "")
    return side.rel(diagnostic.path), diagnostic.code, message


def _extra(side: _Side, mine: list[Diagnostic], theirs: Counter[tuple[str, str, str]]) -> list[Finding]:
    """The diagnostics of `mine` beyond what the other side has of the same file, code and message."""
    left = Counter(theirs)
    out = []
    for diagnostic in mine:
        key = _key(side, diagnostic)
        if left[key] > 0:
            left[key] -= 1
            continue
        start = diagnostic.range.start
        out.append(Finding(key[0], start.line + 1, start.character + 1, key[1], diagnostic.severity.label, key[2]))
    return out


def _compare_diagnostics(base: _Side, head: _Side, change: _Change, review: WorkspaceReview) -> None:
    files = _affected(base, head, change)
    before, after = _diagnostics(base, files), _diagnostics(head, files)
    review.introduced = _extra(head, after, Counter(_key(base, d) for d in before))
    review.fixed = _extra(base, before, Counter(_key(head, d) for d in after))


# ---------------------------------------------------------------------------------------- agent tests


async def _replay_tests(head: _Side, review: WorkspaceReview, scratch: str) -> None:
    """The agent tests (in the work tree) of the agents that changed or went, replayed against the work tree
    (their replays' own transcripts go to the scratch folder)."""
    from ..runs.cases import find_cases, run_case, tests_dir
    from ..runs.transcript import RecordingError

    real_root = head.analysis.root
    if not os.path.isdir(tests_dir(real_root)):
        return
    reached = {a.agent_id for a in review.agents if a.status in ("changed", "removed")}
    files: AnalysisHost | None = None
    for case in find_cases([tests_dir(real_root)]):
        try:
            agent_id = case.recording().agent_id
        except RecordingError:  # not a case of a changed agent as far as anyone can tell: `test` reports it
            continue
        if agent_id not in reached:
            continue
        shown = head.rel(case.path)
        needs = _workspace_code(head, agent_id)
        if needs:
            review.tests.append(TestOutcome(case.name, shown, agent_id, "not replayed", reason=(
                f"its agent uses the workspace's own code ({needs}), which a review imports only with --trust")))
            continue
        if files is None:
            files = _work_tree_files(real_root, head.analysis)
        result = await run_case(case, runs_dir=scratch, trusted=head.trusted, files=files)
        status = {"passed": "passed", "failed": "drifted"}.get(result.status, "error")
        review.tests.append(TestOutcome(case.name, shown, agent_id, status,  # type: ignore[arg-type]
                                        difference=result.difference if status == "drifted" else None,
                                        reason=result.error))


def _workspace_code(head: _Side, agent_id: str) -> str:
    """The workspace's own tools and providers the agent uses, named, when the review is not trusted."""
    parsed = head.agents.get(agent_id)
    if head.trusted or parsed is None or parsed.definition is None:
        return ""
    from ..runs.preview import not_loaded

    config = head.analysis.workspace.host
    plan = plan_providers(parsed.definition, config, requested=True).providers
    return ", ".join(f"{n['kind']} `{n['name']}`" for n in not_loaded(parsed.definition, config, plan))


def _work_tree_files(real_root: str, analysis: Analysis) -> AnalysisHost:
    """The work tree's root as the review read it, for every replay (none reads it again)."""
    host = AnalysisHost([real_root])
    host.ensure_root(real_root)
    host.install(real_root, analysis)
    return host


# ------------------------------------------------------------------------------------------- the review


def _scope(top: str, paths: Sequence[str]) -> list[tuple[str, str]]:
    """(the workspace root, the PATH) of each PATH, relative to the repository's top; ReviewError for a PATH
    that does not exist or lies outside the repository."""
    out = []
    for given in paths:
        path = os.path.realpath(given)
        if not os.path.exists(path):
            raise git.ReviewError(f"no such file or directory: {given}")
        if not is_inside(path, top):
            raise git.ReviewError(f"{given} is outside the git repository at {top}")
        root = find_root(path)
        if root is None or not is_inside(root, top):
            root = path if os.path.isdir(path) else os.path.dirname(path)
        out.append((_relative(root, top), _relative(path, top)))
    return out


def _relative(path: str, top: str) -> str:
    relative = os.path.relpath(path, top).replace(os.sep, "/")
    return "" if relative == "." else relative


def _nested_roots(side: Tree, root: str, start: str) -> set[str]:
    """The workspace roots nested below `start` in a side's copy (each holds its own host configuration)."""
    folder, top = side.local(start), side.local(root)
    if not os.path.isdir(folder):
        return set()
    excluded = excluded_dirs(top, host_config_path(top))
    found: set[str] = set()
    try:
        for dirpath, dirnames, _ in walk(folder, root=side.folder):
            host_path = host_config_path(dirpath) if dirpath != top else None
            if host_path is not None:
                found.add(side.relative(dirpath))
                excluded |= excluded_dirs(dirpath, host_path)
            dirnames[:] = sorted(d for d in dirnames
                                 if d not in NEVER_SCANNED and os.path.join(dirpath, d) not in excluded)
    except FileRefused:
        return found
    return found


async def _review_root(before: _Side, after: _Side, changed: set[str], scratch: str) -> WorkspaceReview:
    change = _Change(changed, {})
    for side in (before, after):
        for agent_id, paths in side.defined_by(changed).items():
            change.agents.setdefault(agent_id, set()).update(paths)
    review = WorkspaceReview(before.root or ".")
    await _compare_agents(before, after, change, review)
    _compare_diagnostics(before, after, change, review)
    await _replay_tests(after, review, scratch)
    return review


async def review(paths: Sequence[str], base: str | None = None, *, trusted: bool = False) -> Review:
    """Reviews the change of the work tree against `base` (default: the merge base with the default branch)
    for the workspaces at and below `paths`. Raises `git.ReviewError` with a sentence when it cannot."""
    paths = list(paths) or ["."]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise git.ReviewError(f"no such file or directory: {', '.join(missing)}")
    top = git.repository_top(_folder_of(paths[0]))
    chosen = git.resolve_base(top, base)
    scope = _scope(top, paths)
    result = Review(chosen, trusted)
    with scratch_folder("oscova-review-") as scratch, ThreadPoolExecutor(1) as copier:
        scratch = os.path.realpath(scratch)  # paths in it compare as written with the real paths of links
        before, copy = from_commit(top, chosen.commit, chosen.commit[:12], os.path.join(scratch, "base"),
                                   sorted({root for root, _ in scope}))
        writing = copier.submit(before.write, copy)  # the base is written while the work tree is parsed
        after = Tree(top, WORK_TREE)
        heads = {root: _Side(after, root, None, trusted, fork_server=True) for root in _roots(after, scope)}
        writing.result()
        roots = sorted(heads.keys() | _roots(before, scope))
        add_state(top, before, roots)
        changed = set(git.changed_files(top, chosen.commit, sorted({root for root, _ in scope})))
        pairs = []
        for root in roots:
            head = heads.get(root) or _Side(after, root, None, trusted)
            pairs.append((_Side(before, root, head.analysis, trusted), head))
        if not any(side.analysis.workspace.files for pair in pairs for side in pair):
            raise git.ReviewError(f"nothing to review: no oscova.toml, agent definition or template under "
                                  f"{', '.join(paths)} at {before.label} or in the work tree")
        for base_side, head_side in pairs:
            changed |= _only_in(head_side, before)
            result.workspaces.append(await _review_root(base_side, head_side, changed, os.path.join(scratch, "runs")))
        result.notes = list(dict.fromkeys([*before.notes, *(n for _, head in pairs for n in _not_read(head))]))
    return result


def _only_in(head: _Side, base: Tree) -> set[str]:
    """Files the work tree's analysis read that the base lacks, which git does not list (ignored ones)."""
    return {relative for path in head.analysis.workspace.files if (relative := head.rel(path)) not in base.contents}


def _not_read(side: _Side) -> list[str]:
    """The files of the work tree the analysis skipped, and why (too large, not text)."""
    out = []
    for parsed in side.analysis.workspace.files.values():
        if parsed.skipped:
            out.append(f"`{side.rel(parsed.path)}` in the work tree was not read: {parsed.skipped}")
    return out


def _roots(side: Tree, scope: list[tuple[str, str]]) -> set[str]:
    return {r for root, start in scope for r in {root} | _nested_roots(side, root, start)}


def _folder_of(path: str) -> str:
    absolute = os.path.abspath(path)
    return absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
