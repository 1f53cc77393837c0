"""A cold check sends a large workspace's templates to its workers before it imports the rest
(`template_prefetch.py`): what it reports is what a check in one process reports, and what is sent never
reaches beyond the files the check itself finds."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest
from oscova_lsp.analysis.engine import Analysis
from oscova_lsp.analysis.template_prefetch import TemplatePrefetch
from oscova_lsp.cli.check import _prefetch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from workspace_gen import HOST, generate  # noqa: E402


def test_a_prefetched_check_reports_what_a_check_in_one_process_reports(tmp_path: Path) -> None:
    generate(tmp_path, 250)
    prefetch = TemplatePrefetch.start(str(tmp_path), 2)
    assert prefetch is not None
    # Changed while the workers read: the check parses the text it reads, never facts of another text.
    edited = tmp_path / "templates/agent_1.j2"
    kept = tmp_path / "templates/agent_3.j2"
    assert prefetch.take(str(kept), kept.read_text() + " ") is None
    edited.write_text("{{ changed_after_the_prefetch }}\n")
    try:
        prefetched = Analysis(str(tmp_path)).check_all(cache=False, prefetch=prefetch)
    finally:
        prefetch.close()
    expected = Analysis(str(tmp_path)).check_all(jobs=1, cache=False)
    assert sum(len(found) for found in expected.values()) > 0
    assert prefetched == expected
    assert any("changed_after_the_prefetch" in d.message for d in prefetched[str(edited)])


def test_excluded_folders_and_nested_workspaces_are_not_sent(tmp_path: Path) -> None:
    generate(tmp_path, 250)
    (tmp_path / "oscova.toml").write_text(HOST.replace("[host]\n", '[host]\nexclude = ["vendor"]\n', 1))
    for folder in ("vendor", "nested"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "page.j2").write_text("{{ x }}\n")
    (tmp_path / "nested" / "oscova.toml").write_text("")
    prefetch = TemplatePrefetch.start(str(tmp_path), 2)
    assert prefetch is not None
    try:
        assert prefetch.take(str(tmp_path / "vendor/page.j2"), "{{ x }}\n") is None
        assert prefetch.take(str(tmp_path / "nested/page.j2"), "{{ x }}\n") is None
        template = tmp_path / "templates/agent_2.j2"
        assert prefetch.take(str(template), template.read_text()) is not None
    finally:
        prefetch.close()


@pytest.mark.parametrize("host", [
    '[host]\nexclude = "vendor"\n',  # not a list: the validated configuration would say what it means
    '[host]\nexclude = ["vendor"\n',  # not TOML: its recovery is the checker's
])
def test_nothing_is_sent_when_the_excluded_folders_are_not_plainly_written(tmp_path: Path, host: str) -> None:
    generate(tmp_path, 250)
    (tmp_path / "oscova.toml").write_text(host)
    assert TemplatePrefetch.start(str(tmp_path), 2) is None


def test_a_check_sends_nothing_ahead_when_facts_are_stored_or_files_are_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ws"
    generate(root, 250)
    monkeypatch.setenv("OSCOVA_LSP_CACHE_DIR", str(tmp_path / "cache"))

    def prefetch(*paths: Path, no_cache: bool = False) -> TemplatePrefetch | None:
        return _prefetch(argparse.Namespace(paths=[str(p) for p in paths], jobs=None, no_cache=no_cache))

    for ahead in (prefetch(root), prefetch(root, no_cache=True)):  # an empty cache, and none
        assert ahead is not None
        ahead.close()
    Analysis(str(root)).check_all()  # stores the facts of every file
    assert prefetch(root) is None
    assert prefetch(root / "agents/agent_0.agent.yaml") is None
    assert prefetch(root / "agents", root / "templates") is None
    assert prefetch(root / "templates", no_cache=True) is None  # not a workspace root
