"""Fixture workspaces for engine tests: files in, diagnostics out.

A fixture file may mark the expected range of a diagnostic with ⟨ and ⟩; the markers are removed
before the file is written, and `marked` returns the ranges they delimited.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

from oscova_lsp.analysis.diagnostics import Diagnostic
from oscova_lsp.analysis.engine import Analysis
from oscova_lsp.analysis.text import LineIndex, Range

OPEN, CLOSE = "⟨", "⟩"

BASE_HOST = """\
[host]
user_id = "alice"
todo = true

[variables]
team = "Platform"

[models.default]
model = "gpt-4.1-mini"
api_key_env = "OPENAI_API_KEY"
"""


@dataclass
class Workspace:
    root: Path
    marks: dict[str, list[Range]]
    analysis: Analysis

    def diagnostics(self, name: str | None = None, code: str | None = None) -> list[Diagnostic]:
        paths = [str(self.root / name)] if name else sorted(self.analysis.workspace.files)
        out = []
        for path in paths:
            out += [d for d in self.analysis.diagnostics(path) if code is None or d.code == code]
        return out

    def codes(self, name: str | None = None) -> list[str]:
        return [d.code for d in self.diagnostics(name)]

    def path(self, name: str) -> str:
        return str(self.root / name)

    def marked(self, name: str) -> list[Range]:
        return self.marks.get(name, [])

    def write(self, name: str, text: str) -> set[str]:
        """Changes one file on disk and in the engine; returns the files to re-check."""
        body, _ = strip_marks(textwrap.dedent(text))
        (self.root / name).write_text(body, encoding="utf-8")
        return self.analysis.update(self.path(name), body)


def strip_marks(text: str) -> tuple[str, list[Range]]:
    ranges: list[Range] = []
    out: list[str] = []
    starts: list[int] = []
    offset = 0
    for ch in text:
        if ch == OPEN:
            starts.append(offset)
        elif ch == CLOSE:
            ranges.append((starts.pop(), offset))  # type: ignore[arg-type]
        else:
            out.append(ch)
            offset += 1
    body = "".join(out)
    index = LineIndex(body)
    return body, [index.range(a, b) for a, b in ranges]  # type: ignore[misc]


def make_workspace(tmp_path: Path, files: dict[str, str], *, host: str | None = BASE_HOST) -> Workspace:
    marks: dict[str, list[Range]] = {}
    if host is not None and "oscova.toml" not in files:
        files = {"oscova.toml": host, **files}
    for name, text in files.items():
        body, ranges = strip_marks(textwrap.dedent(text))
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
        if ranges:
            marks[name] = ranges
    analysis = Analysis(str(tmp_path))
    analysis.load(jobs=1)
    return Workspace(tmp_path, marks, analysis)


def apply_fix(ws: Workspace, fix) -> None:  # noqa: ANN001 - a Fix
    """Applies a quick fix's edits to the files, as an editor would, and updates the engine."""
    by_path: dict[str, list] = {}
    for edit in fix.edits:
        by_path.setdefault(edit.path, []).append(edit)
    for path, edits in by_path.items():
        text = Path(path).read_text(encoding="utf-8")
        index = LineIndex(text)
        for edit in sorted(edits, key=lambda e: (e.range.start, e.range.end), reverse=True):
            start, end = index.offset(edit.range.start), index.offset(edit.range.end)
            text = text[:start] + edit.new_text + text[end:]
        Path(path).write_text(text, encoding="utf-8")
        ws.analysis.update(path, text)
