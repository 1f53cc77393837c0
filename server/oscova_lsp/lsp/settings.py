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

    @property
    def debounce(self) -> float:
        return self.debounce_ms / 1000

    def lint_options(self) -> LintOptions | None:
        if not self.ignore and not self.severity:
            return None
        return LintOptions(ignore=self.ignore, severity=dict(self.severity))

    @classmethod
    def parse(cls, value: Any) -> Settings:
        """Tolerant: a value of the wrong type is left at its default, never an error.

        Accepts `{debounce, ignore, severity}`, the same under `lint`, or the whole object under `oscova`.
        """
        if not isinstance(value, dict):
            return cls()
        if isinstance(value.get("oscova"), dict):
            value = value["oscova"]
        lint = value.get("lint") if isinstance(value.get("lint"), dict) else {}
        debounce = value.get("debounce", value.get("debounceMs", DEFAULT_DEBOUNCE_MS))
        if isinstance(debounce, bool) or not isinstance(debounce, int | float) or not 0 <= debounce <= 10_000:
            debounce = DEFAULT_DEBOUNCE_MS
        ignore_raw = value.get("ignore", lint.get("ignore", []))
        ignore = frozenset(str(c).strip().upper() for c in ignore_raw if _CODE_RE.match(str(c).strip().upper())) \
            if isinstance(ignore_raw, list) else frozenset()
        severity_raw = value.get("severity", lint.get("severity", {}))
        severity = {}
        if isinstance(severity_raw, dict):
            for code, level in severity_raw.items():
                if isinstance(level, str) and level.lower() in _LEVELS and _CODE_RE.match(str(code).upper()):
                    severity[str(code).upper()] = level.lower()
        return cls(int(debounce), ignore, severity)
