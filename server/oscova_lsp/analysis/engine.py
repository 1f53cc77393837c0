"""The analysis engine's front door, shared by `oscova-lsp check` and the language server.

It imports neither pygls nor lsprotocol: results are plain `Diagnostic` values.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from oscova_runtime.paths import is_inside

from .cache import CacheReport, FactsCache, Texts
from .checks import Checker
from .diagnostics import Diagnostic
from .discovery import discover
from .disk import DiskAnswer, find_root, read_text
from .files import MAX_FILE_BYTES, DefinitionFile, FileKind, ParsedFile, file_kind, parse_file, parse_template
from .jinja_facts import facts_from_wire
from .jinja_source import analyze_templates_to_wire
from .lint import LintOptions, apply_lint, lint_key
from .rules.registry import RULES
from .rules.syntax import could_not_check
from .stored_results import StoredResults
from .template_prefetch import PARALLEL_THRESHOLD, TemplatePrefetch, batches
from .warm_start import check_by_stat
from .workspace import Workspace


class Analysis:
    """One workspace root, its parsed files and its diagnostics, kept current by `update`."""

    def __init__(self, root: str, lint: LintOptions | None = None) -> None:
        self.workspace = Workspace(root)
        self.checker = Checker(self.workspace)
        self.lint = lint
        self.cache_report: CacheReport | None = None
        self._results_target: tuple[FactsCache, str] | None = None
        """Where `check_loaded` stores its results: the cache and the files' `world` digest of the load."""

    @property
    def root(self) -> str:
        return self.workspace.root

    def fork(self) -> Analysis:
        """A copy that later updates of either leave the other unchanged (`AnalysisHost` snapshots)."""
        copy = Analysis.__new__(Analysis)
        copy.workspace = self.workspace.fork()
        copy.checker = Checker(copy.workspace)
        copy.lint = self.lint
        copy.cache_report = self.cache_report
        copy._results_target = None  # a copy is changed: its results are not the loaded files' any more
        return copy

    def load(self, *, jobs: int | None = None, fork_server: bool = False, cache: bool = True,
             like: Analysis | None = None) -> None:
        """Reads and parses the whole workspace; large ones parse their templates in worker processes.

        `fork_server`: workers are forked from a fork server (a process running threads must not fork). `cache`:
        reuse the facts of unchanged files from the facts cache (`cache.py`; also off with OSCOVA_LSP_NO_CACHE).
        `like`: another root's analysis (the same tree elsewhere: `review`'s two sides) whose parsed files are
        reused for files at the same relative path with the same text; a parsed file is a function of its path
        and text only, and its path is the only part that names where it lies.
        """
        paths, texts, target = self._read_all(cache)
        self._results_target = target
        self._parse(paths, texts, target[0] if target is not None else None, jobs, fork_server, like)

    def load_first(self, wanted: Iterable[str], documents: Mapping[str, str] | None = None, *, cache: bool = True,
                   like: Analysis | None = None) -> set[str]:
        """Reads what the diagnostics of the files `wanted` depend on, and nothing else, so that they come before
        the rest of a large workspace is parsed; returns the wanted files whose diagnostics are then final (those
        of the workspace read whole: `Workspace.dependents` names no file left out).

        What is read: the host configuration and the evaluations; each wanted template and the templates it
        includes directly, the templates a wanted definition names, and every template that includes one read
        here, at any depth (its uses and the names it binds are the included template's); the definitions that
        name a template read here (its uses' agents); for a wanted definition, the definitions that name its
        id (duplicates, callers) and those it reaches through `agent_tools`. Which files those are is found
        without parsing the others: a template's path and an agent's id are written out in the files that name
        them, so only the files whose text holds the template's file name or the id are parsed (a definition
        with a backslash, which YAML may use to escape them, always is). Every definition is read when a wanted
        file is the host configuration or an evaluation, or when an `agent_tools` entry names no agent (its
        did-you-mean looks at every id). `documents`: the editor's texts, over the files' (`path -> text`).
        `like`: an earlier analysis of this root whose parsed files are reused for the same text. The stored
        results are neither read nor written."""
        paths, texts, target = self._read_all(cache)
        store = target[0] if target is not None else None
        for path, text in (documents or {}).items():
            if file_kind(path) is not None and is_inside(path, self.root, real=False):
                if path not in texts:
                    paths.append(path)
                texts[path] = (text, None)
        order = {path: index for index, path in enumerate(paths)}
        wanted = {os.path.abspath(p) for p in wanted} & set(texts)
        parsed: dict[str, ParsedFile] = {}
        kinds = {path: file_kind(path) for path in paths}
        templates = [p for p in paths if kinds[p] is FileKind.TEMPLATE]
        definitions = [p for p in paths if kinds[p] is FileKind.DEFINITION]

        def parse(todo: Iterable[str]) -> list[ParsedFile]:
            todo = list(dict.fromkeys(todo))
            fresh = [p for p in todo if p not in parsed]
            hits, todo_texts = store.lookup(fresh, texts) if store is not None else ({}, texts)
            if like is not None:
                hits.update(_same_files(like, self.root, [p for p in fresh if p not in hits], texts))
            parsed.update(hits)
            parsed.update((p, _parse_one(self.root, p, todo_texts)) for p in fresh if p not in hits)
            return [parsed[p] for p in todo]

        def naming(word: str, among: list[str], escapes: bool) -> list[str]:
            """The files of `among` not parsed yet whose text may name `word`."""
            if not word.isprintable() or any(c.isspace() or c in "'\"\\" for c in word):
                return [p for p in among if p not in parsed]  # YAML may fold or escape it: any file may
            return [p for p in among if p not in parsed and (
                word in (texts[p][0] or "") or escapes and "\\" in (texts[p][0] or ""))]

        parse(p for p in paths if kinds[p] in (FileKind.HOST, FileKind.EVAL) or p in wanted and
              kinds[p] is FileKind.DEFINITION)
        every = any(kinds[p] in (FileKind.HOST, FileKind.EVAL) for p in wanted)
        # The agents a wanted definition reaches, and the definitions naming its id.
        ids = [d.raw_id for p in wanted if isinstance(d := parsed.get(p), DefinitionFile) and d.raw_id] \
            if not every else []
        seen_ids: set[str] = set()
        while ids and not every:
            agent_id = ids.pop()
            if agent_id in seen_ids:
                continue
            seen_ids.add(agent_id)
            parse(naming(agent_id, definitions, True))
            found = [d for p in definitions if isinstance(d := parsed.get(p), DefinitionFile) and d.raw_id == agent_id]
            every = not found  # an entry naming no agent: its did-you-mean reads every id
            ids += [t for d in found if d.definition is not None for t in d.definition.agent_tools]
        if every:
            parse(definitions)
        # The templates: the wanted ones, those wanted definitions name, what those include directly.
        seeds = [p for p in wanted if kinds[p] is FileKind.TEMPLATE]
        seeds += [t for p in wanted if kinds[p] is FileKind.DEFINITION for t in self.workspace.template_refs(parsed[p])]
        seeds += [t for f in parse(p for p in seeds if p in texts) for t in self.workspace.template_refs(f)]
        parse(p for p in seeds if p in texts)
        # Every template and definition naming a template read here, at any depth: its includers and its uses.
        queue = [p for p in dict.fromkeys(seeds) if p in parsed]
        reached = set(queue)
        while queue:
            name = os.path.basename(queue.pop())
            parse(naming(name, definitions, True))
            for candidate in parse(naming(name, templates, False)):
                if candidate.path not in reached and reached & self.workspace.template_refs(candidate):
                    reached.add(candidate.path)
                    queue.append(candidate.path)
        self.workspace.load(sorted(parsed.values(), key=lambda parsed_file: order[parsed_file.path]))
        return {path for path in wanted if path in self.workspace.files}

    def stored_results(self, *, cache: bool = True) -> tuple[StoredResults, dict[str, str]] | None:
        """The stored results of the last whole check of this root when they hold for the files as they are
        now (`stored_results.py`), with each file's state (its text digest) as found to know it; nothing is
        parsed. The identities of the files and folders tell first (`check_by_stat`); the files are read only
        when they cannot. None: the results do not hold."""
        if not cache:
            return None
        found = check_by_stat(self.root, lint_key(self.lint))
        if found.decided:
            if found.stored is not None:
                self.cache_report = CacheReport(results_reused=True)
            return (found.stored, found.states) if found.stored is not None else None
        _, _, target = self._read_all(cache)
        stored = self._stored(target)
        return (stored, target[0].manifest.states) if stored is not None and target is not None else None

    def check_loaded(self) -> dict[str, list[Diagnostic]]:
        """Every file's diagnostics after `load`, the disk questions the checks ask recorded; stored as the
        results of this root for the next check (`stored_results`) when the load used the cache."""
        self.workspace.probes = {}
        try:
            found = self.all_diagnostics()
            probes = self.workspace.probes
        finally:
            self.workspace.probes = None
        self.save_results(found, probes)
        return found

    def save_results(self, found: dict[str, list[Diagnostic]], probes: dict[tuple[str, str], DiskAnswer]) -> None:
        """Stores `found`, every file's diagnostics as loaded, and the disk questions asked to compute them
        (`Workspace.probes`) as this root's results; nothing when the load did not use the cache."""
        if self._results_target is not None:
            store, world = self._results_target
            editor_only = frozenset(code for code, rule in RULES.items() if not rule.in_check)
            store.save_results(world, StoredResults(found, list(self.workspace.notices), probes, editor_only=editor_only))

    def check_all(self, *, jobs: int | None = None, cache: bool = True, under: Iterable[str] | None = None,
                  prefetch: TemplatePrefetch | None = None) -> dict[str, list[Diagnostic]]:
        """`load` then `check_loaded`, for a one-shot check (`oscova-lsp check`). With the cache, the results
        of the last check of this root are reused when nothing they were computed from changed (the files, the
        lint options, the engine, the disk questions the checks asked: `stored_results.py`); otherwise the checks
        run on the current facts and their results are stored. `prefetch`: this root's templates already sent to
        workers (`template_prefetch.py`), whose pool parses the rest."""
        paths, texts, target = self._read_all(cache)
        under = self._with_rendered(under, texts)
        stored = self._stored(target)
        if stored is not None:
            self.workspace.notices = list(stored.notices)
            return self._under(stored.diagnostics, under)
        self._results_target = target
        saved = self._parse(paths, texts, target[0] if target is not None else None, jobs, fork_server=False,
                            prefetch=prefetch, save_aside=True)
        try:
            return self._under(self.check_loaded(), under)
        finally:
            saved()

    def _with_rendered(self, under: Iterable[str] | None, texts: Texts) -> list[str] | None:
        """`under` and, for each definition file it names, every template that definition renders (its
        `instructions_file` and what that includes, imports or extends, at any depth): checking a definition
        checks its prompt. Only those few files are parsed here, so stored results still serve."""
        if not under:
            return None
        paths = [os.path.abspath(p) for p in under]
        stack = [p for p in paths if p in texts and file_kind(p) is FileKind.DEFINITION]
        seen = set(paths)
        while stack:
            path = stack.pop()
            for target in sorted(self.workspace.template_refs(parse_file(path, *texts[path]))):
                if target not in seen and target in texts:
                    seen.add(target)
                    paths.append(target)
                    stack.append(target)
        return paths

    def _read_all(self, cache: bool) -> tuple[list[str], Texts, tuple[FactsCache, str] | None]:
        """The files of the workspace and their texts, read in one pass (`Workspace.one_pass`), and with the
        cache on, the cache and the `world` digest of what was read (what stored results are keyed by)."""
        store = FactsCache.open(self.root) if cache else None  # first: its manifest's clock starts before reading
        manifest = store.manifest if store is not None else None
        with self.workspace.one_pass():
            paths = discover(self.root, manifest.listed if manifest is not None else None)
            texts: Texts = {}
            for path in paths:
                if manifest is not None:
                    manifest.reading(path)
                texts[path] = self.workspace.read(path)
        return paths, texts, (store, store.world(paths, texts, lint_key(self.lint))) if store is not None else None

    def _stored(self, target: tuple[FactsCache, str] | None) -> StoredResults | None:
        """The stored results that hold for the files read (`_read_all`), or None."""
        if target is None:
            return None
        store, world = target
        stored = store.results(world)
        if stored is not None:
            self.cache_report = store.report
        return stored

    def _parse(self, paths: list[str], texts: Texts, store: FactsCache | None, jobs: int | None,
               fork_server: bool, like: Analysis | None = None, prefetch: TemplatePrefetch | None = None,
               save_aside: bool = False) -> Callable[[], None]:
        """Parses the files `paths` (their texts read) not in the facts cache `store`, stores the facts of those
        parsed, and loads the workspace; returns the function that waits for the facts to be stored. With
        `save_aside` (a one-shot check, which runs no thread) many new facts are stored by a child forked for it
        (`processes.forked`), on the other core while this process checks."""
        hits, todo_texts = store.lookup(paths, texts) if store is not None else ({}, texts)
        reused = _same_files(like, self.root, [p for p in paths if p not in hits], texts) if like is not None else {}
        hits.update(reused)
        todo = [path for path in paths if path not in hits]
        workers = jobs if jobs is not None else (os.cpu_count() or 1)
        if prefetch is not None or workers > 1 and len(todo) >= PARALLEL_THRESHOLD:
            parsed = _parse_split(self.root, todo, workers, fork_server, todo_texts, prefetch)
        else:
            parsed = [_parse_one(self.root, path, todo_texts) for path in todo]
        saved: Callable[[], None] = _done
        if store is not None:
            new = [*parsed, *reused.values()]  # a file reused from `like` was not in the cache either
            if save_aside and len(new) >= PARALLEL_THRESHOLD:
                from oscova_runtime.processes import forked

                saved = forked(lambda: store.save(new))
            else:
                store.save(new)
            self.cache_report = store.report
        order = {path: index for index, path in enumerate(paths)}  # discovery order, cached or not
        self.workspace.load(sorted([*parsed, *hits.values()], key=lambda parsed_file: order[parsed_file.path]))
        return saved

    def update(self, path: str, text: str | None) -> set[str]:
        """Applies one file's new text (None: deleted); returns the files to re-check."""
        return self.workspace.update(path, text)

    def diagnostics(self, path: str) -> list[Diagnostic]:
        path = os.path.abspath(path)
        parsed = self.workspace.files.get(path)
        if parsed is None or self.workspace.host_file is None:  # a folder no host configuration makes a workspace
            return []
        try:
            found = self.checker.check(path)
        except Exception as error:  # noqa: BLE001 - the last resort: a diagnostic on the file, never a traceback
            found = [could_not_check(path, error)]
        return sorted(apply_lint(found, parsed, self.workspace.host, self.lint), key=Diagnostic.sort_key)

    def all_diagnostics(self, under: Iterable[str] | None = None) -> dict[str, list[Diagnostic]]:
        out: dict[str, list[Diagnostic]] = {}
        with self.workspace.one_pass():
            for path in self._under(dict.fromkeys(sorted(self.workspace.files)), under):
                out[path] = self.diagnostics(path)
        return out

    def _under(self, files: dict[str, Any], under: Iterable[str] | None) -> dict[str, Any]:
        """The entries of `files` (keyed by path) under one of the paths `under` (None: all)."""
        if not under:
            return files
        prefixes = [os.path.abspath(p) for p in under]
        # By the file's folder: a file that is a symlink leading out of the root is still "under" the folder
        # it lies in (and reported as such); one answer per folder.
        folder_inside: dict[str, bool] = {}
        out: dict[str, Any] = {}
        for path, value in files.items():
            if path not in prefixes:
                folder = os.path.dirname(path)
                if folder not in folder_inside:
                    folder_inside[folder] = any(is_inside(folder, p) for p in prefixes)
                if not folder_inside[folder]:
                    continue
            out[path] = value
        return out


def _done() -> None:
    """Nothing to wait for."""


def _same_files(other: Analysis, root: str, paths: list[str], texts: Texts) -> dict[str, ParsedFile]:
    """The parsed files of `other` at the same path relative to its root, with the same text, moved to `root`."""
    found: dict[str, ParsedFile] = {}
    for path in paths:
        text, skipped = texts.get(path, (None, None))
        before = other.workspace.files.get(os.path.join(other.root, os.path.relpath(path, root)))
        if text is not None and skipped is None and before is not None and before.skipped is None \
                and before.text == text and file_kind(path) is not FileKind.HOST:
            found[path] = dataclasses.replace(before, path=path)
    return found


def _parse_one(root: str, path: str, texts: Texts | None = None) -> ParsedFile:
    return parse_file(path, *_read(root, path, texts))


def _read(root: str, path: str, texts: Texts | None) -> tuple[str | None, str | None]:
    """The text already read (by the facts cache) or read now."""
    return texts[path] if texts is not None and path in texts else read_text(path, root)


def _parse_split(root: str, paths: list[str], workers: int, fork_server: bool,
                 texts: Texts | None = None, prefetch: TemplatePrefetch | None = None) -> list[ParsedFile]:
    """Templates (the costly part: Jinja's parser) go to worker processes as text and come back as compact
    facts, while this process parses definitions and the host configuration. Whole parsed files are not
    sent back: pickling them costs as much as parsing them. Workers come from the process gateway
    (`oscova_runtime.processes.worker_pool`), which starts them without the workspace on `sys.path`; with a
    `prefetch`, from its pool, to which the templates it already holds were sent at the check's start."""
    from oscova_runtime.processes import worker_pool

    templates: list[tuple[str, str]] = []
    parsed: list[ParsedFile] = []
    others: list[str] = []
    for path in paths:
        if file_kind(path) is FileKind.TEMPLATE:
            text, skipped = _read(root, path, texts)
            if text is None or len(text) > MAX_FILE_BYTES:
                parsed.append(parse_file(path, text, skipped))
            else:
                templates.append((path, text))
        else:
            others.append(path)
    pool = prefetch.pool if prefetch is not None else worker_pool(workers, fork_server=fork_server)
    if pool is None:  # no process support here: parse in this process
        return parsed + [_parse_one(root, path, texts) for path, _ in templates] + [
            _parse_one(root, path, texts) for path in others]
    try:
        prefetched = [(path, text) for path, text in templates if prefetch is not None and prefetch.holds(path)]
        left = [(path, text) for path, text in templates if prefetch is None or not prefetch.holds(path)]
        work = batches(left, workers)
        futures = [pool.submit(analyze_templates_to_wire, [text for _, text in batch]) for batch in work]
        parsed.extend(_parse_one(root, path, texts) for path in others)  # meanwhile, here
        for path, text in prefetched:
            wire = prefetch.take(path, text) if prefetch is not None else None
            parsed.append(parse_template(path, text, facts_from_wire(text, wire)) if wire is not None
                          else _parse_one(root, path, texts))  # changed since the worker read it
        for batch, future in zip(work, futures, strict=True):
            for (path, text), wire in zip(batch, future.result(), strict=True):
                parsed.append(parse_template(path, text, facts_from_wire(text, wire)))
    finally:
        if prefetch is not None:
            prefetch.close()
        else:
            pool.shutdown(wait=True)
    return parsed


def analysis_for(path: str, lint: LintOptions | None = None) -> Analysis:
    """The analysis of the workspace containing `path` (its root found by `oscova.toml`)."""
    absolute = os.path.abspath(path)
    root = find_root(absolute)
    if root is None:
        root = absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
    return Analysis(root, lint)
