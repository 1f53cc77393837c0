"""A large workspace parses its templates in worker processes, with the same results as one process."""

from __future__ import annotations

import sys
from pathlib import Path

from oscova_lsp.analysis.engine import PARALLEL_THRESHOLD, Analysis

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from workspace_gen import generate  # noqa: E402


def test_worker_processes_give_the_same_diagnostics(tmp_path: Path) -> None:
    generate(tmp_path, 250)
    serial, parallel = Analysis(str(tmp_path)), Analysis(str(tmp_path))
    serial.load(jobs=1)
    parallel.load(jobs=2, cache=False)  # the workers parse, not the facts cache the serial load wrote
    assert len(parallel.workspace.files) >= PARALLEL_THRESHOLD
    expected = serial.all_diagnostics()
    assert sum(len(d) for d in expected.values()) > 0
    assert parallel.all_diagnostics() == expected
    # Incremental updates work the same on a workspace loaded in parallel.
    template = str(tmp_path / "templates/agent_1.j2")
    assert parallel.update(template, "{{ nowhere }}") == serial.update(template, "{{ nowhere }}")
    assert parallel.diagnostics(template) == serial.diagnostics(template)


def test_fork_server_workers_as_the_language_server_starts_them(tmp_path: Path) -> None:
    generate(tmp_path, 250)
    serial, forked = Analysis(str(tmp_path)), Analysis(str(tmp_path))
    serial.load(jobs=1)
    forked.load(jobs=2, fork_server=True, cache=False)
    assert forked.all_diagnostics() == serial.all_diagnostics()


def test_without_processes_each_file_is_parsed_once(tmp_path: Path, monkeypatch) -> None:
    from oscova_lsp.analysis import engine
    from oscova_lsp.analysis.files import MAX_FILE_BYTES
    from oscova_runtime import processes

    generate(tmp_path, 250)
    (tmp_path / "templates/huge.j2").write_text("x" * (MAX_FILE_BYTES + 1))
    monkeypatch.setattr(processes, "worker_pool", lambda *args, **kwargs: None)  # no process support here
    paths = sorted(str(p) for p in tmp_path.rglob("*") if p.suffix in (".j2", ".yaml"))
    parsed = engine._parse_split(str(tmp_path), paths, 2, fork_server=False)
    assert sorted(p.path for p in parsed) == paths
