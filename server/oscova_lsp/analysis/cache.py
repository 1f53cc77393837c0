"""A persistent cache: an unchanged file is read and hashed, not parsed again; an unchanged workspace is not
checked again.

Two layers:
- Facts (`facts.json`): each template's facts (the costly part: Jinja's parser) and each definition's YAML
  document with the facts of its inline instructions, keyed by the file's text digest. The host
  configuration is one small file and is parsed every time. An entry never stands for a finding that
  depends on another file (or on `oscova.toml`): the cross-file checks run on the facts of the load.
- Results (`results.json`): the diagnostics of the last whole check of the root (by `oscova-lsp check`, or
  by the language server when it read the root at start),
  reused only when everything they were computed from is unchanged — the files found, every file's text
  digest (or why it was not read), the lint options and the engine key — and every question the checks
  asked the disk (is this path inside the root after symlinks, is there a file there) gets the same answer
  again. Any difference, however small, runs the checks on the current facts, so stored results can never
  hide a problem that the files on disk would show.

Where: in the user's cache directory (`$OSCOVA_LSP_CACHE_DIR`, else `$XDG_CACHE_HOME/oscova-lsp`, else
`~/.cache/oscova-lsp`), one folder per workspace root, named by a hash of the root's real path, both created
with mode 0700. Never in the workspace: a cloned repository could ship entries whose facts say "no syntax
error" for a broken template and so hide its problems; the user's own cache directory is written by the
user's own runs only. So it must be the user's alone: a cache directory or folder another user owns, or that
its group or others can write, is not used at all (the check runs without the cache, and says so once), and
a cache file another user owns or others can write is not believed. Every read and write goes through the
file gateway (`oscova_runtime.paths`): a FIFO, a device or a link in place of a cache file is ignored, never
waited on or read whole.

Format: JSON (never pickle or marshal: reading the cache must not be able to run code). The first line is a
header naming the format, the engine key and the blake2b digest of the second line; in `facts.json` the
second maps each file's path (relative to the root) to [digest of its text, its facts]; in `results.json` it
holds the `world` digest, the disk questions with their answers, the notices and every file's diagnostics. A file whose header, engine key,
root or digest does not match (corrupt, truncated, written by another version) is ignored as a whole; an
entry of the wrong shape is ignored alone; either way those files are parsed again and the file rewritten.
Writes go to a temporary file renamed over the old one (`paths.write_file`), so a reader, say another `check`
at the same time, sees the old cache or the new one, never half of one.

What is stored is what the files themselves say (names, positions, messages, a definition's values): no
environment value, secret from the environment or rendered prompt. Entries of files gone from the
workspace are dropped on the next write, and at most `MAX_WORKSPACES` workspace folders are kept (the
least recently written go first).
"""

from __future__ import annotations

import base64
import contextlib
import gc
import hashlib
import itertools
import json
import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from oscova_runtime.paths import (
    FileRefused,
    NotPrivate,
    private_folder,
    read_bytes,
    remove_file,
    remove_folder,
    scan_folder,
    write_file,
)

from .diagnostics import Diagnostic, Fix, Problem, Related, Severity, TextEdit
from .files import (
    DefinitionFile,
    FileKind,
    ParsedFile,
    TemplateFile,
    file_kind,
    parse_definition,
    parse_template,
)
from .jinja_source import TemplateFacts, WireFacts, facts_from_wire, facts_to_wire
from .text import LineIndex, Position, Range
from .workspace import DISK_QUESTIONS, DiskAnswer, ask_disk
from .yaml_source import Path, Span, YamlDocument

FACTS_FORMAT = 2
"""Raised whenever the shape of the cached facts changes."""
RESULTS_FORMAT = 2
"""Raised whenever the shape of the stored results changes."""
ENV_DIR = "OSCOVA_LSP_CACHE_DIR"
ENV_OFF = "OSCOVA_LSP_NO_CACHE"
MAX_WORKSPACES = 64
STALE_TEMPORARY_SECONDS = 3600
"""A temporary file this old was left by a run that died while writing: removed."""
MAX_CACHE_BYTES = 1_000_000_000
"""The largest cache file read (the facts of 10,000 files take a few tens of MB)."""
_MAGIC = "oscova-lsp facts"
_FILE = "facts.json"
_RESULTS_FILE = "results.json"

Texts = dict[str, tuple[str | None, str | None]]
"""Path -> (text, why it was not read), as `read_text` returns them."""

log = logging.getLogger(__name__)
_told: set[str] = set()
"""The cache folders whose refusal was said already (once a process)."""


def cache_disabled() -> bool:
    """`OSCOVA_LSP_NO_CACHE` set to anything but empty, 0, false or no."""
    return os.environ.get(ENV_OFF, "").strip().lower() not in ("", "0", "false", "no")


def cache_home() -> str:
    """The folder holding every workspace's cache."""
    explicit = os.environ.get(ENV_DIR)
    if explicit:
        return os.path.abspath(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")  # XDG: relative is ignored
    return os.path.join(base, "oscova-lsp")


def cache_folder(root: str) -> str:
    """The cache folder of the workspace at `root`."""
    real = os.path.realpath(root)
    return os.path.join(cache_home(), hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:24])


def engine_key() -> str:
    """Everything the per-file facts and the checks depend on besides the files: the versions of this package,
    the parsers and Python, the formats, and a fingerprint of the modules that compute the facts and run the
    checks (so an edited source tree with an unchanged version number does not reuse what the old code made)."""
    import jinja2
    import pydantic
    import yaml

    from .. import __version__

    stamps = []
    for source in engine_sources():
        try:
            info = os.stat(source)
        except OSError:
            continue
        stamps.append(f"{source}:{info.st_size}:{info.st_mtime_ns}")
    fingerprint = hashlib.blake2b("\n".join(stamps).encode(), digest_size=8).hexdigest()
    return (f"{FACTS_FORMAT}.{RESULTS_FORMAT}/{__version__}/py{sys.version_info[0]}.{sys.version_info[1]}/jinja2-{jinja2.__version__}"
            f"/pyyaml-{yaml.__version__}/pydantic-{pydantic.VERSION}/{fingerprint}")


def engine_sources() -> list[str]:
    """The modules whose code the facts and the checks come from: the analysis package with its rule families,
    and the runtime's (the definition model, the catalogue the checks plan with)."""
    import oscova_runtime

    here = os.path.dirname(__file__)
    places = [here, os.path.join(here, "rules"), os.path.dirname(oscova_runtime.__file__ or "")]
    sources = []
    for place in places:
        try:
            sources += sorted(os.path.join(place, e.name) for e in scan_folder(place) if e.name.endswith(".py"))
        except FileRefused:
            continue
    return sources


def text_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass
class CacheReport:
    """What one load took from the cache: for tests, benchmarks and curious users."""

    reused: list[str] = field(default_factory=list)
    parsed: list[str] = field(default_factory=list)
    """Files with an entry-worthy text that had no valid entry (the host configuration is never cached)."""
    written: bool = False
    results_reused: bool = False
    """The whole check's results were reused: nothing they were computed from changed."""


class FactsCache:
    """The cache of one workspace root for one load: `lookup` before parsing, `save` after."""

    def __init__(self, root: str, folder: str, engine: str, entries: dict[str, Any]) -> None:
        self.root = os.path.abspath(root)
        self.folder = folder
        self.engine = engine
        self._entries = entries
        self._kept: dict[str, Any] = {}
        self._pending: dict[str, str] = {}  # path -> digest of a text parsed in this load
        self._digests: dict[str, str] = {}
        self._stale = False
        self.report = CacheReport()

    @classmethod
    def open(cls, root: str) -> FactsCache | None:
        """The cache of `root`, its entries read if they are valid; None when caching is turned off."""
        if cache_disabled():
            return None
        folder = cache_folder(root)
        if not _private(folder):
            return None
        engine = engine_key()
        entries = _read_entries(os.path.join(folder, _FILE), engine, os.path.realpath(root))
        cache = cls(root, folder, engine, entries if entries is not None else {})
        cache._stale = entries is None
        return cache

    def _key(self, path: str) -> str:
        prefix = self.root.rstrip(os.sep) + os.sep
        return path[len(prefix):] if path.startswith(prefix) else path

    def lookup(self, paths: Iterable[str], texts: Texts) -> tuple[dict[str, ParsedFile], Texts]:
        """The files whose cached facts hold for their current text (`texts`, as `read_text` returns them),
        and the texts of the others."""
        hits: dict[str, ParsedFile] = {}
        misses: Texts = {}
        with _collector_paused():
            self._lookup(paths, texts, hits, misses)
        return hits, misses

    def _lookup(self, paths: Iterable[str], texts: Texts, hits: dict[str, ParsedFile], misses: Texts) -> None:
        for path in paths:
            text, skipped = texts[path]
            kind = file_kind(path)
            if text is None or kind not in (FileKind.DEFINITION, FileKind.TEMPLATE):
                misses[path] = (text, skipped)
                continue
            key = self._key(path)
            digest = self.digest(path, text)
            entry = self._entries.get(key)
            parsed = None
            if isinstance(entry, list) and len(entry) == 2 and entry[0] == digest:
                try:
                    parsed = _decode(path, kind, text, entry[1])
                except Exception:  # noqa: BLE001 - an entry of the wrong shape is rebuilt, never trusted
                    parsed = None
            if parsed is None:
                misses[path] = (text, skipped)
                self._pending[path] = digest
                self.report.parsed.append(path)
            else:
                hits[path] = parsed
                self._kept[key] = entry
                self.report.reused.append(path)

    def digest(self, path: str, text: str) -> str:
        """`text_digest(text)`, computed once per file and load (the results key hashes them all)."""
        found = self._digests.get(path)
        if found is None:
            found = self._digests[path] = text_digest(text)
        return found

    # -- results of a whole check

    def world(self, paths: list[str], texts: Texts, settings: str) -> str:
        """The digest of everything a whole check reads besides the disk probes: the root, the files found
        (in order), each one's text digest or the reason it was not read, and `settings` (the lint options)."""
        hasher = hashlib.blake2b(digest_size=16)
        hasher.update(f"{self.root}\0{settings}\n".encode("utf-8", "surrogatepass"))
        for path in paths:
            text, skipped = texts[path]
            state = self.digest(path, text) if text is not None else f"-{skipped}"
            hasher.update(f"{path}\0{state}\n".encode("utf-8", "surrogatepass"))
        return hasher.hexdigest()

    def results(self, world: str) -> StoredResults | None:
        """The stored results of the last whole check when they were computed from `world` and every disk
        probe the checks made still gets the same answer; None otherwise (the checks run again)."""
        with _collector_paused():
            body = _read_entries(os.path.join(self.folder, _RESULTS_FILE), self.engine, os.path.realpath(self.root))
            if body is None or body.get("world") != world:
                return None
            try:
                stored = _results_from_json(body)
            except Exception:  # noqa: BLE001 - a stored result of the wrong shape is recomputed, never trusted
                return None
        if not _probes_hold(self.root, stored.probes):
            return None
        self.report.results_reused = True
        return stored

    def save_results(self, world: str, stored: StoredResults) -> None:
        """Stores a whole check's results (a cache that cannot be written is left alone)."""
        with _collector_paused():
            body = _results_to_json(world, stored)
            _write(self.folder, _RESULTS_FILE, self.engine, os.path.realpath(self.root), body)

    def save(self, parsed_files: Iterable[ParsedFile]) -> None:
        """Stores the facts of the files parsed in this load; drops entries of files no longer there. Writes
        only when something changed; a cache that cannot be written is left alone (it is only a cache)."""
        with _collector_paused():
            self._save(parsed_files)

    def _save(self, parsed_files: Iterable[ParsedFile]) -> None:
        added = 0
        for parsed in parsed_files:
            digest = self._pending.get(parsed.path)
            if digest is None or parsed.skipped is not None:
                continue
            try:
                facts = _encode(parsed)
            except _Uncacheable:
                continue
            self._kept[self._key(parsed.path)] = [digest, facts]
            added += 1
        if not added and not self._stale and self._kept.keys() == self._entries.keys():
            return
        self.report.written = _write(self.folder, _FILE, self.engine, os.path.realpath(self.root), self._kept)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Decoding and encoding facts make many small objects and no cycles: with a large workspace in memory,
    the collector would only walk it again and again."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


# --------------------------------------------------------------------------------------------------
# The file: a header line, then the entries


def _private(folder: str) -> bool:
    """Makes the cache home and `folder` (mode 0700); whether both are the user's alone (`paths.private_folder`).
    A folder someone else could have written is not used at all, and the user is told once."""
    for place, follow in ((os.path.dirname(folder), True), (folder, False)):  # the home may be a link the user made
        try:
            private_folder(place, follow=follow)
        except NotPrivate as refused:
            if place not in _told:
                _told.add(place)
                log.warning("The cache folder %s is not used: %s; every check runs without the cache until it is "
                            "the user's alone (`chmod 700 %s`)", place, refused, place)
            return False
        except FileRefused:  # cannot be made (a read-only home): no cache, as with none configured
            return False
    return True


def _read_entries(path: str, engine: str, root: str) -> dict[str, Any] | None:
    """The entries of a valid cache file, or None (missing, corrupt, truncated, foreign, not a regular file
    inside its folder, or not the user's own: another owner, or writable by others)."""
    try:
        data = read_bytes(path, root=os.path.dirname(path), limit=MAX_CACHE_BYTES, private=True)
    except FileRefused:
        return None
    header_line, newline, body = data.partition(b"\n")
    if not newline:
        return None
    try:
        header = json.loads(header_line)
        if not (isinstance(header, dict) and header.get("format") == _MAGIC and header.get("engine") == engine
                and header.get("root") == root and header.get("digest") == _body_digest(body)):
            return None
        entries = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser's limit
        return None
    return entries if isinstance(entries, dict) else None


def _body_digest(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def _write(folder: str, name: str, engine: str, root: str, entries: dict[str, Any]) -> bool:
    body = json.dumps(entries, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    header = json.dumps({"format": _MAGIC, "engine": engine, "root": root, "digest": _body_digest(body)},
                        ensure_ascii=False).encode("utf-8", "surrogatepass")
    if not _private(folder):
        return False
    _ignore_in_git(folder)
    try:  # a temporary file (mode 0600) renamed into place: a reader sees the old cache or the new one
        write_file(os.path.join(folder, name), header + b"\n" + body, root=folder, private=True)
    except FileRefused:
        return False
    _prune(os.path.dirname(folder), folder)
    return True


def _ignore_in_git(folder: str) -> None:
    """A cache home placed inside a repository (`OSCOVA_LSP_CACHE_DIR=.cache`) stays out of its commits."""
    home = os.path.dirname(folder)
    marker = os.path.join(home, ".gitignore")
    if not os.path.lexists(marker):
        with contextlib.suppress(FileRefused):
            write_file(marker, b"# Written by oscova-lsp: its facts cache is never committed.\n*\n", root=home,
                       exclusive=True)


def _prune(home: str, current: str) -> None:
    """Keeps the `MAX_WORKSPACES` most recently written workspace folders; removes dead temporary files."""
    now = time.time()
    folders: list[tuple[float, str]] = []
    try:
        entries = scan_folder(home, root=home)
    except FileRefused:
        return
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            continue
        try:
            for leftover in scan_folder(entry.path, root=entry.path):
                if leftover.name.endswith(".tmp") and now - leftover.stat(follow_symlinks=False).st_mtime \
                        > STALE_TEMPORARY_SECONDS:
                    remove_file(leftover.path, root=entry.path)
            folders.append((os.stat(os.path.join(entry.path, _FILE)).st_mtime, entry.path))
        except (OSError, FileRefused):
            continue
    folders.sort(reverse=True)
    for _, folder in folders[MAX_WORKSPACES:]:
        if folder == current:
            continue
        with contextlib.suppress(FileRefused):
            for name in (_FILE, _RESULTS_FILE):
                remove_file(os.path.join(folder, name), root=folder)
            remove_folder(folder, root=home)


# --------------------------------------------------------------------------------------------------
# Facts as JSON, and back with every value checked


class _Uncacheable(Exception):
    """A value the JSON form cannot hold exactly: the file is parsed every time instead."""


def _encode(parsed: ParsedFile) -> list[Any]:
    if isinstance(parsed, TemplateFile) and parsed.facts is not None:
        return ["t", _template_to_json(facts_to_wire(parsed.facts))]
    if isinstance(parsed, DefinitionFile) and parsed.doc is not None:
        doc = parsed.doc
        value, marked = _value_to_json(doc.value)
        # Keyed by the path's repr (exact for tuples of str, int and bool, and cheap to compute on lookup).
        spans = json.dumps({repr(path): [list(path), _range_to_json(span.key), _range_to_json(span.value), span.style,
                                         span.start_offset, span.end_offset] for path, span in doc.spans.items()},
                           ensure_ascii=False, separators=(",", ":"))
        problems = [[p.code, _range_to_json(p.range), p.message, [[_range_to_json(rng), words] for rng, words in p.related]]
                    for p in doc.problems]
        inline = _template_to_json(facts_to_wire(parsed.inline.facts)) if parsed.inline is not None else None
        return ["d", value, marked, spans, problems, doc.ok, doc.recovered, inline]
    raise _Uncacheable


def _decode(path: str, kind: FileKind, text: str, data: Any) -> ParsedFile | None:
    """The parsed file from its cached facts; None (or an exception) when the entry does not fit."""
    if kind is FileKind.TEMPLATE and data[0] == "t" and len(data) == 2:
        return parse_template(path, text, _template_from_json(text, data[1]))
    if kind is FileKind.DEFINITION and data[0] == "d" and len(data) == 8:
        _, value, marked, spans, problems, ok, recovered, inline = data
        if not (type(marked) is bool and type(ok) is bool and type(recovered) is bool and type(spans) is str):
            return None
        doc = _CachedDocument(text, LineIndex(text), _value_from_json(value) if marked else value, {},
                              [_problem(row) for row in problems], ok, recovered)
        doc.rows = spans
        return parse_definition(path, text, doc, None if inline is None else _template_from_json(text, inline))
    return None


class _CachedDocument(YamlDocument):
    """A YAML document whose spans stay JSON until used, and are then decoded one path at a time: the checks
    of a definition read a few of its spans (its `id`, its `agent_tools`), most cached definitions none."""

    rows: Any = None
    """The spans as JSON text, then as the decoded mapping of path keys to rows; None once all are decoded."""

    @property  # type: ignore[override]
    def spans(self) -> dict[Path, Span]:
        rows = self._rows()
        if rows is not None:
            self.rows = None
            self._spans = {_path(row[0]): _span(row) for row in rows.values()}
        return self._spans

    @spans.setter
    def spans(self, value: dict[Path, Span]) -> None:
        self._spans = value

    def span(self, path: Path) -> Span | None:
        rows = self._rows()
        if rows is None:
            return self._spans.get(path)
        found = self._spans.get(path)
        if found is None:
            row = rows.get(repr(path))
            if row is not None:
                found = self._spans[path] = _span(row)
        return found

    def _rows(self) -> dict[str, Any] | None:
        if isinstance(self.rows, str):
            decoded = json.loads(self.rows)
            if type(decoded) is not dict:
                raise ValueError("spans")
            self.rows = decoded
        return self.rows


def _path(parts: Any) -> Path:
    if not (type(parts) is list and all(type(part) in _PATH_PARTS for part in parts)):
        raise ValueError("path")
    return tuple(parts)


def _range_to_json(rng: Range | None) -> list[int] | None:
    return None if rng is None else [rng.start.line, rng.start.character, rng.end.line, rng.end.character]


def _range(value: Any) -> Range:
    a, b, c, d = value
    if not (type(a) is int and type(b) is int and type(c) is int and type(d) is int):
        raise ValueError("range")
    return Range(Position(a, b), Position(c, d))


_PATH_PARTS = (str, int, bool)


def _span(row: Any) -> Span:
    _, key, value, style, start, end = row
    if not (type(start) is int and type(end) is int and (style is None or type(style) is str)):
        raise ValueError("span")
    return Span(None if key is None else _range(key), _range(value), style, start, end)


def _problem(row: Any) -> Problem:
    """A parser's finding (a parser's have no fix)."""
    code, rng, message, related = row
    if not (type(code) is str and type(message) is str and type(related) is list
            and all(type(pair) is list and len(pair) == 2 and type(pair[1]) is str for pair in related)):
        raise ValueError("problem")
    return Problem(code, _range(rng), message, tuple((_range(place), words) for place, words in related))


# A template's wire form (`facts_to_wire`) with frozensets as sorted lists; each column's types, checked exactly.
_INT, _STR, _BOOL, _NONE = (int,), (str,), (bool,), (type(None),)
_USE = (_STR, _INT, _INT, _INT)
_REFERENCE = (_STR, _STR, _INT, _INT, _INT, _BOOL, _BOOL)
_ERROR = (_STR, _INT, _INT, _INT + _NONE)
_INTERVAL = (_INT, _INT)


def _template_to_json(wire: WireFacts) -> list[Any]:
    uses, refs, errors, local_names, suppressions, delimited = wire
    return [uses, refs, errors, sorted(local_names),
            [[line, None if codes is None else sorted(codes)] for line, codes in suppressions], delimited]


def _template_from_json(text: str, data: Any) -> TemplateFacts:
    uses, refs, errors, local_names, suppressions, delimited = data
    if not (_rows(uses, _USE) and _rows(refs, _REFERENCE) and _rows(errors, _ERROR) and _rows(delimited, _INTERVAL)
            and type(local_names) is list and all(type(name) is str for name in local_names)
            and type(suppressions) is list):
        raise ValueError("template facts")
    lines: list[tuple[int, frozenset[str] | None]] = []
    for line, codes in suppressions:
        if type(line) is not int or not (codes is None or (type(codes) is list and all(type(c) is str for c in codes))):
            raise ValueError("suppression")
        lines.append((line, None if codes is None else frozenset(codes)))
    return facts_from_wire(text, (uses, refs, errors, local_names, lines, [tuple(pair) for pair in delimited]))


def _rows(value: Any, shape: tuple[tuple[type, ...], ...]) -> bool:
    allowed = _ROW_TYPES.get(shape)
    if allowed is None:
        allowed = _ROW_TYPES[shape] = frozenset(itertools.product(*shape))
    # A row's exact cell types as one tuple, looked up among the allowed ones (mapped in C: entries are many).
    return type(value) is list and all(type(row) is list and tuple(map(type, row)) in allowed for row in value)


_ROW_TYPES: dict[tuple[tuple[type, ...], ...], frozenset[tuple[type, ...]]] = {}


# A YAML value: JSON's own types as they are; what JSON cannot hold (mappings with keys other than strings,
# bytes from `!!binary`) as a one-key object whose key starts with NUL, which no YAML key of a valid entry
# can (such a mapping is stored as pairs itself). `marked` says whether any such object is in the value.

_PAIRS, _BYTES = "\x00pairs", "\x00bytes"


def _value_to_json(value: Any) -> tuple[Any, bool]:
    marked = False

    def encode(item: Any) -> Any:
        nonlocal marked
        kind = type(item)
        if item is None or kind in (str, int, float, bool):
            return item
        if kind is list:
            return [encode(x) for x in item]
        if kind is dict:
            if all(type(k) is str and not k.startswith("\x00") for k in item):
                return {k: encode(v) for k, v in item.items()}
            marked = True
            return {_PAIRS: [[encode(k), encode(v)] for k, v in item.items()]}
        if kind is bytes:
            marked = True
            return {_BYTES: base64.b64encode(item).decode("ascii")}
        raise _Uncacheable

    return encode(value), marked


def _value_from_json(value: Any) -> Any:
    if type(value) is list:
        return [_value_from_json(x) for x in value]
    if type(value) is dict:
        if len(value) == 1 and _PAIRS in value:
            return {_hashable(_value_from_json(k)): _value_from_json(v) for k, v in value[_PAIRS]}
        if len(value) == 1 and _BYTES in value:
            return base64.b64decode(value[_BYTES], validate=True)
        return {k: _value_from_json(v) for k, v in value.items()}
    return value


def _hashable(key: Any) -> Any:
    hash(key)  # a list or mapping here is a forged entry: TypeError, and the file is parsed again
    return key


# --------------------------------------------------------------------------------------------------
# The results of a whole check: reused only when nothing they were computed from changed
#
# The checks are a function of the files found, their texts, the lint options, the engine (all in the
# `world` digest and the header's engine key) and of a few questions they ask the disk (`workspace.ask_disk`):
# is this path inside the root (after symlinks), is there a file there, where does a granted folder really
# lead, where is the home folder. Those questions are recorded while the checks run (`Workspace.probes`) and
# asked again before stored results are reused; a different answer, like any changed file, runs the checks
# again on the current facts.


@dataclass
class StoredResults:
    diagnostics: dict[str, list[Diagnostic]]
    """Every file's diagnostics (files without any included)."""
    notices: list[str]
    probes: dict[tuple[str, str], DiskAnswer]
    """(kind, path) -> the answer, for each question of `workspace.DISK_QUESTIONS` the checks asked."""


def _probes_hold(root: str, probes: dict[tuple[str, str], DiskAnswer]) -> bool:
    from oscova_runtime.paths import Boundary

    boundary = Boundary(root)
    return all(ask_disk(kind, path, root, boundary) == answer for (kind, path), answer in probes.items())


def _results_to_json(world: str, stored: StoredResults) -> dict[str, Any]:
    return {"world": world, "notices": stored.notices,
            "probes": [[kind, path, answer] for (kind, path), answer in stored.probes.items()],
            "diagnostics": {path: [_diagnostic_to_json(d) for d in found] for path, found in stored.diagnostics.items()}}


def _results_from_json(body: dict[str, Any]) -> StoredResults:
    notices, probes, diagnostics = body["notices"], body["probes"], body["diagnostics"]
    if not (type(notices) is list and all(type(n) is str for n in notices) and type(probes) is list
            and type(diagnostics) is dict):
        raise ValueError("results")
    answers: dict[tuple[str, str], DiskAnswer] = {}
    for kind, path, answer in probes:
        if type(kind) is not str or type(path) is not str or type(answer) is not DISK_QUESTIONS.get(kind):
            raise ValueError("probe")
        answers[(kind, path)] = cast(DiskAnswer, answer)
    return StoredResults({_text(path): [_diagnostic(row) for row in rows] for path, rows in diagnostics.items()},
                         notices, answers)


def _diagnostic_to_json(d: Diagnostic) -> list[Any]:
    return [d.path, _range_to_json(d.range), d.code, d.message, int(d.severity),
            [[r.path, _range_to_json(r.range), r.message] for r in d.related],
            [[f.title, [[e.path, _range_to_json(e.range), e.new_text] for e in f.edits]] for f in d.fixes],
            d.data]


def _diagnostic(row: Any) -> Diagnostic:
    path, rng, code, message, severity, related, fixes, data = row
    if type(data) is not dict or type(related) is not list or type(fixes) is not list:
        raise ValueError("diagnostic")
    return Diagnostic(
        _text(path), _range(rng), _text(code), _text(message), Severity(severity),
        tuple(Related(_text(p), _range(r), _text(m)) for p, r, m in related),
        tuple(Fix(_text(title), tuple(TextEdit(_text(p), _range(r), _text(t)) for p, r, t in edits))
              for title, edits in fixes),
        data)


def _text(value: Any) -> str:
    if type(value) is not str:
        raise ValueError("text")
    return value
