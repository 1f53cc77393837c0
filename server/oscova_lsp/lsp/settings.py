"""The editor settings of section `oscova` (from `workspace/configuration` or `initializationOptions`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..analysis.checks import LintOptions

DEFAULT_DEBOUNCE_MS = 150
_LEVELS = frozenset({"error", "warning", "information", "info", "hint"})
_CODE_RE = re.compile(r"^OSC\d{0,3}$")


@dataclass(frozen=True)
class Settings:
    debounce_ms: int = DEFAULT_DEBOUNCE_MS
    ignore: frozenset[str] = frozenset()
    severity: dict[str, str] = field(default_factory=dict)
    select: frozenset[str] | None = None

    @property
    def debounce(self) -> float:
        return self.debounce_ms / 1000

    def lint_options(self) -> LintOptions | None:
        if not self.ignore and not self.severity and self.select is None:
            return None
        return LintOptions(select=self.select, ignore=self.ignore, severity=dict(self.severity))

    @classmethod
    def parse(cls, value: Any) -> Settings:
        """Tolerant: a value of the wrong type is left at its default, never an error.

        Accepts `{debounce, ignore, select, severity}`, the same under `lint`, or the whole object under
        `oscova`. Codes may be prefixes (`OSC1`), as everywhere.
        """
        if not isinstance(value, dict):
            return cls()
        if isinstance(value.get("oscova"), dict):
            value = value["oscova"]
        lint = value.get("lint") if isinstance(value.get("lint"), dict) else {}
        debounce = value.get("debounce", value.get("debounceMs", DEFAULT_DEBOUNCE_MS))
        if isinstance(debounce, bool) or not isinstance(debounce, int | float) or not 0 <= debounce <= 10_000:
            debounce = DEFAULT_DEBOUNCE_MS
        ignore = _code_list(value.get("ignore", lint.get("ignore", []))) or frozenset()
        select = _code_list(value.get("select", lint.get("select")))
        severity_raw = value.get("severity", lint.get("severity", {}))
        severity = {}
        if isinstance(severity_raw, dict):
            for code, level in severity_raw.items():
                if isinstance(level, str) and level.lower() in _LEVELS and _CODE_RE.match(str(code).upper()):
                    severity[str(code).upper()] = level.lower()
        return cls(int(debounce), ignore, severity, select)


def _code_list(raw: Any) -> frozenset[str] | None:
    """A list of codes or prefixes; None when `raw` is not a list."""
    if not isinstance(raw, list):
        return None
    return frozenset(str(c).strip().upper() for c in raw if _CODE_RE.match(str(c).strip().upper()))
