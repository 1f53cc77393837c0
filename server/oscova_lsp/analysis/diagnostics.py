"""Findings as plain values: one file's, and the diagnostics the engine returns and the CLI and the server
convert."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

from .text import Range


class Severity(IntEnum):
    """Numbered as LSP numbers them."""

    ERROR = 1
    WARNING = 2
    INFORMATION = 3
    HINT = 4

    @classmethod
    def parse(cls, name: str) -> Severity:
        return {"error": cls.ERROR, "warning": cls.WARNING, "information": cls.INFORMATION,
                "info": cls.INFORMATION, "hint": cls.HINT}[name.lower()]

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Related:
    path: str
    range: Range
    message: str


@dataclass(frozen=True, slots=True)
class TextEdit:
    path: str
    range: Range
    new_text: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "range": self.range.to_json(), "newText": self.new_text}


@dataclass(frozen=True, slots=True)
class Fix:
    """A quick fix: a title and the edits that apply it (possibly in other files)."""

    title: str
    edits: tuple[TextEdit, ...]

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "edits": [e.to_json() for e in self.edits]}


@dataclass(frozen=True, slots=True)
class Problem:
    """A finding of one file before any cross-file check (a parser's is kept with its document, in the facts
    cache too); converted into a Diagnostic later."""

    code: str
    range: Range
    message: str
    related: tuple[tuple[Range, str], ...] = ()
    fix: Fix | None = None
    """Edits within the same file."""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    path: str
    range: Range
    code: str
    message: str
    severity: Severity
    related: tuple[Related, ...] = ()
    fixes: tuple[Fix, ...] = ()
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def with_severity(self, severity: Severity) -> Diagnostic:
        return replace(self, severity=severity)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "range": self.range.to_json(),
            "severity": self.severity.label,
            "code": self.code,
            "source": "oscova",
            "message": self.message,
            "relatedInformation": [
                {"path": r.path, "range": r.range.to_json(), "message": r.message} for r in self.related
            ],
            "fixes": [f.to_json() for f in self.fixes],
        }

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.range.start.line, self.range.start.character, self.code)
