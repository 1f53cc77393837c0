"""Templates sent to worker processes at the start of a cold `oscova-lsp check`, before it imports the rest.

A check of a large workspace spends its first half second importing what it needs for definitions and rules
(pydantic's models above all) and reading the files, on one core; its template workers start only then. Here
the workspace's templates are found and sent to the workers first, from modules that import neither pydantic
nor a parser, and the workers read and parse them on the other core during that time.

What is sent is a guess made before the host configuration is validated: the walk is discovery's own
(`discover`), with the `[host] exclude` folders as `oscova.toml` writes them (`_written_excludes`), and nothing
at all when that file cannot be read so plainly. The validated configuration keeps those folders or none, so
no template outside the workspace's files is parsed. The check still discovers and reads every file itself, and
takes a template's facts from here only for a file it found with the very text the worker read (`take`); any
other template is parsed as it would be without this.
"""

from __future__ import annotations

import os
import tomllib
from concurrent.futures import Future
from typing import Any, TypeVar

from oscova_runtime.paths import MAX_TEXT_BYTES

from .discovery import discover
from .disk import FileKind, file_kind, host_config_path, read_text

T = TypeVar("T")

PARALLEL_THRESHOLD = 400
"""Below this many files, worker processes cost more than they save."""


class TemplatePrefetch:
    """The workspace root, a worker pool, and the templates sent to it: `path -> (future of its batch, index in
    it)`; each batch's result lists, for each of its templates, the text the worker read and its wire facts."""

    def __init__(self, root: str, pool: Any, sent: dict[str, tuple[Future[list[Any]], int]]) -> None:
        self.root = root
        self.pool = pool
        self._sent = sent

    @classmethod
    def start(cls, root: str, workers: int) -> TemplatePrefetch | None:
        """Sends the templates of the workspace at `root` to `workers` worker processes, which read them; None
        when it is not worth it (one worker, fewer files than `PARALLEL_THRESHOLD`) or the `[host] exclude`
        folders cannot be known without validating the host configuration."""
        host_path = host_config_path(root)
        excluded = _written_excludes(root, host_path) if host_path is not None and workers > 1 else None
        if excluded is None:
            return None
        paths = discover(root, excluded=excluded)
        if len(paths) < PARALLEL_THRESHOLD:
            return None
        from oscova_runtime.processes import worker_pool

        from . import jinja_source  # noqa: F401 - imported before the workers are forked, so that they share it

        pool = worker_pool(workers)
        if pool is None:
            return None
        templates = [path for path in paths if file_kind(path) is FileKind.TEMPLATE]
        sent: dict[str, tuple[Future[list[Any]], int]] = {}
        for batch in batches(templates, workers):
            future = pool.submit(read_and_analyze, root, batch)
            for index, path in enumerate(batch):
                sent[path] = (future, index)
        return cls(root, pool, sent)

    def holds(self, path: str) -> bool:
        """Whether the template at `path` was sent (and not taken yet)."""
        return path in self._sent

    def take(self, path: str, text: str) -> Any | None:
        """The wire facts of the template at `path` when the worker read this very `text` (waiting for them);
        None: it read another text or none, or the template was not sent, and the caller parses it."""
        sent = self._sent.pop(path, None)
        if sent is None:
            return None
        read = sent[0].result()[sent[1]]
        return read[1] if read is not None and read[0] == text else None

    def close(self) -> None:
        """Ends the workers; what was sent and not taken is dropped."""
        self._sent.clear()
        self.pool.shutdown(wait=True, cancel_futures=True)


def read_and_analyze(root: str, paths: list[str]) -> list[tuple[str, Any] | None]:
    """Worker-process entry point: each template read as the check reads it (through the paths gateway, within
    `root`) and its facts in the compact form; None for one not read or too large (the check says why)."""
    from .jinja_source import analyze_templates_to_wire

    texts: list[str | None] = []
    for path in paths:
        text, _ = read_text(path, root)
        texts.append(text if text is not None and len(text) <= MAX_TEXT_BYTES else None)
    wires = iter(analyze_templates_to_wire([text for text in texts if text is not None]))
    return [(text, next(wires)) if text is not None else None for text in texts]


def batches(templates: list[T], workers: int) -> list[list[T]]:
    """Each batch an eighth of what is left for two workers (a quarter a worker), and at least 16 templates:
    few round trips while much is left, and small batches at the end, so that no worker waits idle while
    another finishes a large one."""
    out: list[list[T]] = []
    start = 0
    while start < len(templates):
        size = max(16, (len(templates) - start) // (workers * 4))
        out.append(templates[start:start + size])
        start += size
    return out


def _written_excludes(root: str, host_path: str) -> set[str] | None:
    """The `[host] exclude` folders as the host file writes them (absolute), read with `tomllib` alone; None when
    the file does not read as TOML or the entry is not a list of strings."""
    text, _ = read_text(host_path, root)
    if text is None:
        return None
    try:
        data: Any = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):  # broken or nested too deep: the checker's to report
        return None
    if os.path.basename(host_path) == "pyproject.toml":
        data = data.get("tool", {}).get("oscova", {}) if isinstance(data.get("tool"), dict) else None
    host = data.get("host", {}) if isinstance(data, dict) else None
    exclude = host.get("exclude", []) if isinstance(host, dict) else None
    if not isinstance(exclude, list) or not all(isinstance(entry, str) for entry in exclude):
        return None
    return {os.path.normpath(os.path.join(root, entry)) for entry in exclude}
