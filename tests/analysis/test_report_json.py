"""`format_json` writes each diagnostic itself (`reporting._json_line`): the text is the one `json.dumps` makes of
`Diagnostic.to_json()` with the paths shown as `display_path` shows them, for any text a diagnostic holds."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from oscova_lsp.analysis.diagnostics import Diagnostic, Fix, Related, Severity, TextEdit
from oscova_lsp.analysis.text import Range
from oscova_lsp.reporting import _json_safe, display_path, format_json

AWKWARD = ['plain', 'quote " and backslash \\', 'tab\tnewline\nCR\r', "\x00\x1b[2K\x7f\x9b", "\u202e\u2066bidi",
           "caf\udcff lone surrogate", "emoji 🙂 and ümlaut", "", "{\"json\": [1, 2]}"]


def reference(diagnostics: list[Diagnostic]) -> str:
    """What format_json wrote before it wrote the lines itself: `json.dumps` of `to_json()`."""
    out = []
    for d in diagnostics:
        item = d.to_json()
        item["path"] = display_path(d.path)
        for related in item["relatedInformation"]:
            related["path"] = display_path(related["path"])
        for fix in item["fixes"]:
            for edit in fix["edits"]:
                edit["path"] = display_path(edit["path"])
        out.append(item)
    if not out:
        return "[]"
    return _json_safe("[\n" + ",\n".join("  " + json.dumps(item, ensure_ascii=False) for item in out) + "\n]")


def diagnostics(folder: str) -> list[Diagnostic]:
    found = []
    for n, text in enumerate(AWKWARD):
        path = os.path.join(folder, f"agents/{text.replace(os.sep, '_').replace(chr(0), '')}.agent.yaml")
        rng = Range.of(n, n + 1, n + 2, n * 1000)
        related = tuple(Related(p, Range.of(0, 0, n, 3), text) for p in (path, "/elsewhere/x.j2", "relative.j2"))
        fixes = (Fix(text, (TextEdit(path, rng, text), TextEdit("/elsewhere/y.j2", rng, ""))), Fix("no edits", ()))
        for severity in Severity:
            found.append(Diagnostic(path, rng, f"OSC{n:03d}", text, severity))
            found.append(Diagnostic(path, rng, "OSC040", text, severity, related[:n % 4], fixes[:n % 3],
                                    {"data": "not written"}))
    return found


@pytest.mark.parametrize("inside", [True, False])
def test_json_lines_are_what_json_dumps_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inside: bool) -> None:
    monkeypatch.chdir(tmp_path)
    found = diagnostics(str(tmp_path) if inside else "/somewhere/else")
    assert format_json(found) == reference(found)
    assert format_json([]) == reference([]) == "[]"
    json.loads(format_json(found))
