"""SECURITY.md is code: each row of its tables names the tests that hold it, and every test it names exists
(a file, and a test function in it), so the page cannot promise what nothing checks."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)?((?:::\w+)*)`|`(::\w+)`")


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test_")}


def test_every_row_names_tests_that_exist() -> None:
    rows = [line for line in (ROOT / "SECURITY.md").read_text().splitlines()
            if line.startswith("| ") and not line.startswith(("| a workspace file", "| the client sends", "| a file the product touches"))]
    assert len(rows) >= 15
    for row in rows:
        current: Path | None = None
        named = 0
        for match in REFERENCE.finditer(row):
            file, names, bare = match.groups()
            if file:
                current = ROOT / file
                assert current.is_file(), f"{file} (in: {row[:60]}…)"
                named += 1
            for name in re.findall(r"::(\w+)", (names or "") + (bare or "")):
                assert current is not None, row
                assert name in _tests_in(current), f"{current.relative_to(ROOT)}::{name}"
        assert named, f"a row without a test: {row[:80]}…"
