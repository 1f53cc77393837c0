"""What a rule is: its code, default severity, documentation and quick-fix words, and the findings it makes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..diagnostics import Diagnostic, Fix, Problem, Related, Severity
from ..text import Range

E, W, INFO, H = Severity.ERROR, Severity.WARNING, Severity.INFORMATION, Severity.HINT


@dataclass(frozen=True, slots=True)
class Rule:
    code: str
    severity: Severity
    where: str
    summary: str
    explanation: str
    fix: str | None = None
    """What the quick fix does, as the documentation, hover and docs/rules.md say it."""
    in_check: bool = True
    """False: shown in the editor only; `oscova-lsp check` prints it when `--select` names its code."""

    def documentation(self) -> str:
        lines = [
            f"{self.code}: {self.summary}",
            "",
            f"Default severity: {self.severity.label}. Applies to: {self.where}.",
            "",
            self.explanation.strip(),
        ]
        if self.fix:
            lines += ["", f"Quick fix: {self.fix}."]
        lines += [
            "",
            f"Silence it on one line with `# oscova: ignore[{self.code}]` (YAML) or "
            f"`{{# oscova: ignore[{self.code}] #}}` (Jinja), or for the workspace in `oscova.toml`:",
            "",
            f'    [lint]\n    ignore = ["{self.code}"]',
        ]
        return "\n".join(lines)

    def diagnostic(self, path: str, rng: Range, message: str, *fixes: Fix | None, related: tuple[Related, ...] = (),
                   data: dict[str, Any] | None = None) -> Diagnostic:
        """A finding of this rule at its default severity (`[lint]` may change it later), with the fixes given
        (None: no fix there)."""
        return Diagnostic(path, rng, self.code, message, self.severity, related,
                          tuple(fix for fix in fixes if fix is not None), data if data is not None else {})

    def problem(self, rng: Range, message: str, *, related: tuple[tuple[Range, str], ...] = (),
                fix: Fix | None = None) -> Problem:
        """A finding of one file's parse, before the cross-file checks (the parsers, `files.py`)."""
        return Problem(self.code, rng, message, related, fix)
