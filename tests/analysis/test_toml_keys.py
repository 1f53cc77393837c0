"""TOML keys as TOML reads them: a quoted key may hold `]`, `.` or `#`, and positions follow it."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import make_workspace

QUOTED = ['"a]b"', "'x.y'", '"with # hash"', '"sp ace"']


@pytest.mark.parametrize("key", QUOTED)
def test_a_quoted_model_name_is_one_table(tmp_path: Path, key: str) -> None:
    name = key[1:-1]
    host = f'[models.{key}]\nmodel = "m"\n\n[models.other]\nmodel = "n"\n'
    ws = make_workspace(tmp_path, {"oscova.toml": host, "a.agent.yaml": f"id: a\nmodel: '{name}'\n"})
    assert ws.codes("oscova.toml") == [] and ws.codes("a.agent.yaml") == []
    doc = ws.analysis.workspace.host_file.doc
    assert doc.key_range(("models", name)).start.line == 0
    assert doc.value_range(("models", name, "model")).start.line == 1


def test_two_quoted_tables_with_a_bracket_are_not_one_table_twice(tmp_path: Path) -> None:
    host = '[models."a]b"]\nmodel = "m"\n[models."a]c"]\nmodel = "n"\n'
    ws = make_workspace(tmp_path, {"oscova.toml": host})
    assert ws.codes("oscova.toml") == []


def test_a_missing_model_with_such_a_name_is_suggested_quoted(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"oscova.toml": '[models.default]\nmodel = "m"\n',
                                   "a.agent.yaml": "id: a\nmodel: 'a]b'\n"})
    [missing] = ws.diagnostics("a.agent.yaml", "OSC041")
    assert 'add `[models."a]b"]`' in missing.message
