"""The warm start publishes the stored results from their stored form: what it sends is what the values they
decode to would send, byte for byte, with the same result ids; a row of the wrong shape is never sent."""

from __future__ import annotations

import io
import os
import shutil
import time
from pathlib import Path

import pytest
from oscova_lsp.analysis import cache_files, warm_start
from oscova_lsp.analysis.engine import Analysis
from oscova_lsp.analysis.lint import lint_key
from oscova_lsp.lsp import wire_json
from oscova_lsp.lsp.early import EarlyPhase
from oscova_runtime.framing import encode as frame

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, warm_start.StatCheck]:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", root)
    monkeypatch.setenv(cache_files.ENV_DIR, str(tmp_path / "cache"))
    newest = max(os.lstat(p).st_ctime_ns for p in [root, *root.rglob("*")])
    while time.time_ns() - newest <= warm_start.RACY_NS * 2:  # identities old enough to be believed
        time.sleep(0.05)
    Analysis(str(root)).check_all(jobs=1)
    check = warm_start.check_by_stat(str(root), lint_key(None), decode=False)
    assert check.stored is not None and check.stored.rows is not None
    return root, check


@pytest.mark.parametrize("related", [True, False])
def test_rows_publish_as_their_values_would(stored: tuple[Path, warm_start.StatCheck], related: bool):
    root, check = stored
    assert check.stored is not None and check.stored.rows is not None
    values = check.stored.diagnostics  # decoded from the same rows
    assert sum(1 for found in values.values() if found) >= 10
    for path, rows in check.stored.rows.items():
        message, rid = wire_json.publication_of_rows(path, rows, 3, related)
        expected = {"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
            "uri": wire_json.uri(path), "diagnostics": [wire_json.diagnostic(d, related) for d in values[path]],
            "version": 3}}
        assert frame(message) == frame(expected)
        assert rid == wire_json.result_id(path, values[path])


def test_a_row_of_the_wrong_shape_sends_nothing(stored: tuple[Path, warm_start.StatCheck]):
    root, check = stored
    assert check.stored is not None and check.stored.rows is not None
    path = next(p for p, rows in check.stored.rows.items() if rows)
    check.stored.rows[path][0][4] = 99  # not a severity
    out = io.BytesIO()
    phase = EarlyPhase({"params": {"rootUri": root.as_uri(), "capabilities": {}}}, out)
    assert phase._publish_stored(str(root), check) is False
    phase._flush()
    assert out.getvalue() == b""
    with pytest.raises(ValueError):
        assert check.stored.diagnostics
