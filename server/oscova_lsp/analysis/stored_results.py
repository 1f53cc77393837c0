"""The results of a whole check, kept between starts: reused only when nothing they were computed from changed.

The checks are a function of the files found, their texts, the lint options, the engine (all in the `world`
digest and the header's engine key: `cache_keys`) and of a few questions they ask the disk (`disk.ask_disk`):
is this path inside the root (after symlinks), is there a file there, where does a granted folder really
lead, where is the home folder. Those questions are recorded while the checks run (`Workspace.probes`) and
asked again before stored results are reused; a different answer, like any changed file, runs the checks
again on the current facts.

Here: the results' stored form (a row a diagnostic, read back with every value checked) and the test that
they still hold; `cache.FactsCache` stores them after a whole check and `warm_start.check_by_stat` finds them
at a start. It imports no parser and no pydantic model, so the warm start can publish the rows as they are.
"""

from __future__ import annotations

from typing import Any, cast

from oscova_runtime.paths import Boundary

from .diagnostics import Diagnostic, Fix, Related, Severity, TextEdit
from .disk import DISK_QUESTIONS, DiskAnswer, ask_disk
from .text import range_from_row, range_to_row


class StoredResults:
    """A whole check's results. Read from the cache they may stay in their stored form, `rows` (each file's
    diagnostics as `_diagnostic_to_json` writes them), until asked for as values: the warm start publishes
    them from that form (`lsp/early.py`), checking each row as it goes."""

    def __init__(self, diagnostics: dict[str, list[Diagnostic]] | None, notices: list[str],
                 probes: dict[tuple[str, str], DiskAnswer], rows: dict[str, Any] | None = None,
                 editor_only: frozenset[str] | None = None) -> None:
        self._diagnostics = diagnostics
        self.notices = notices
        self.probes = probes
        """(kind, path) -> the answer, for each question of `disk.DISK_QUESTIONS` the checks asked."""
        self.rows = rows if diagnostics is None else None
        self.editor_only = editor_only
        """The codes `check` leaves out of its output unless named (the registry's, when these were stored), so
        that printing stored results needs no rule module."""

    @property
    def diagnostics(self) -> dict[str, list[Diagnostic]]:
        """Every file's diagnostics (files without any included); ValueError: a stored row of the wrong shape."""
        if self._diagnostics is None:
            self._diagnostics = {_text(path): [_diagnostic(row) for row in rows]
                                 for path, rows in (self.rows or {}).items()}
        return self._diagnostics

    def of(self, path: str) -> list[Diagnostic]:
        """One file's diagnostics (none stored: none)."""
        if self._diagnostics is not None:
            return self._diagnostics.get(path, [])
        return [_diagnostic(row) for row in (self.rows or {}).get(path, [])]


def results_that_hold(root: str, body: dict[str, Any] | None, world: str, inside: frozenset[str] = frozenset(),
                      decode: bool = True) -> StoredResults | None:
    """The stored results in `body` when they were computed from `world` and every disk probe the checks made
    still gets the same answer (`_probes_hold`); `decode`: as values, else their diagnostics in stored form."""
    if body is None or body.get("world") != world:
        return None
    try:
        stored = _results_from_json(body, decode)
    except Exception:  # noqa: BLE001 - a stored result of the wrong shape is recomputed, never trusted
        return None
    return stored if _probes_hold(root, stored.probes, inside) else None


def _probes_hold(root: str, probes: dict[tuple[str, str], DiskAnswer], inside: frozenset[str] = frozenset()) -> bool:
    """Whether every disk question gets its recorded answer again; `inside`: paths known inside the root in this
    pass (a regular file, not a link, in a folder inside it: `paths.identity` said so just now)."""
    boundary = Boundary(root)
    return all((answer is True if kind == "inside" and path in inside else ask_disk(kind, path, root, boundary) == answer)
               for (kind, path), answer in probes.items())


def results_to_json(world: str, stored: StoredResults) -> dict[str, Any]:
    """What `results.json` holds besides the manifest (`cache.FactsCache.save_results` adds it)."""
    return {"world": world, "notices": stored.notices, "editor_only": sorted(stored.editor_only or ()),
            "probes": [[kind, path, answer] for (kind, path), answer in stored.probes.items()],
            "diagnostics": {path: [_diagnostic_to_json(d) for d in found] for path, found in stored.diagnostics.items()}}


def _results_from_json(body: dict[str, Any], decode: bool = True) -> StoredResults:
    notices, probes, diagnostics = body["notices"], body["probes"], body["diagnostics"]
    editor_only = body.get("editor_only")
    if not (type(notices) is list and all(type(n) is str for n in notices) and type(probes) is list
            and type(diagnostics) is dict and type(editor_only) is list and all(type(c) is str for c in editor_only)):
        raise ValueError("results")
    answers: dict[tuple[str, str], DiskAnswer] = {}
    for kind, path, answer in probes:
        if type(kind) is not str or type(path) is not str or type(answer) is not DISK_QUESTIONS.get(kind):
            raise ValueError("probe")
        answers[(kind, path)] = cast(DiskAnswer, answer)
    if not decode:
        return StoredResults(None, notices, answers, diagnostics, frozenset(editor_only))
    return StoredResults({_text(path): [_diagnostic(row) for row in rows] for path, rows in diagnostics.items()},
                         notices, answers, editor_only=frozenset(editor_only))


def row_parts(row: Any) -> tuple[tuple[int, int, int, int], str, str, int, list[tuple[str, tuple[int, int, int, int],
                                                                                            str]], list[str]]:
    """A stored diagnostic row checked as `_diagnostic` checks it, in parts instead of values: its range (start
    line, character, end line, character), code, message, severity, related locations and the titles of its
    fixes. ValueError (or TypeError): a row of the wrong shape."""
    path, rng, code, message, severity, related, fixes, data = row
    if type(data) is not dict or type(related) is not list or type(fixes) is not list or type(path) is not str \
            or type(code) is not str or type(message) is not str or type(severity) is not int \
            or severity not in _SEVERITIES:
        raise ValueError("diagnostic")
    places = [(_text(p), _range_parts(r), _text(m)) for p, r, m in related]
    titles = []
    for title, edits in fixes:
        titles.append(_text(title))
        for p, r, t in edits:
            _text(p), _range_parts(r), _text(t)
    return _range_parts(rng), code, message, severity, places, titles


def _range_parts(value: Any) -> tuple[int, int, int, int]:
    a, b, c, d = value
    if not (type(a) is int and type(b) is int and type(c) is int and type(d) is int):
        raise ValueError("range")
    return a, b, c, d


def _diagnostic_to_json(d: Diagnostic) -> list[Any]:
    return [d.path, range_to_row(d.range), d.code, d.message, int(d.severity),
            [[r.path, range_to_row(r.range), r.message] for r in d.related],
            [[f.title, [[e.path, range_to_row(e.range), e.new_text] for e in f.edits]] for f in d.fixes],
            d.data]


_SEVERITIES = {int(level): level for level in Severity}


def _diagnostic(row: Any) -> Diagnostic:
    path, rng, code, message, severity, related, fixes, data = row
    if type(data) is not dict or type(related) is not list or type(fixes) is not list or type(path) is not str \
            or type(code) is not str or type(message) is not str or type(severity) is not int \
            or severity not in _SEVERITIES:
        raise ValueError("diagnostic")
    return Diagnostic(
        path, range_from_row(rng), code, message, _SEVERITIES[severity],
        tuple(Related(_text(p), range_from_row(r), _text(m)) for p, r, m in related) if related else (),
        tuple(Fix(_text(title), tuple(TextEdit(_text(p), range_from_row(r), _text(t)) for p, r, t in edits))
              for title, edits in fixes) if fixes else (),
        data)


def _text(value: Any) -> str:
    if type(value) is not str:
        raise ValueError("text")
    return value
