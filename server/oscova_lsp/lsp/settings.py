"""The editor settings of section `oscova` (from `workspace/configuration` or `initializationOptions`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..analysis.lint import LintOptions, is_known_code, normal_code, unknown_code

DEFAULT_DEBOUNCE_MS = 150
MAX_DEBOUNCE_MS = 10_000
_LEVELS = frozenset({"error", "warning", "information", "info", "hint"})


@dataclass(frozen=True)
class Settings:
    debounce_ms: int = DEFAULT_DEBOUNCE_MS
    ignore: frozenset[str] = frozenset()
    severity: dict[str, str] = field(default_factory=dict)
    select: frozenset[str] | None = None
    problems: tuple[str, ...] = field(default=(), compare=False)
    """What was wrong with the value, one sentence each (the server shows them as a warning); the rest of the
    value still applies."""

    @property
    def debounce(self) -> float:
        return self.debounce_ms / 1000

    def lint_options(self) -> LintOptions | None:
        if not self.ignore and not self.severity and self.select is None:
            return None
        return LintOptions(select=self.select, ignore=self.ignore, severity=dict(self.severity))

    @classmethod
    def parse(cls, value: Any) -> Settings:
        """Tolerant: a value of the wrong type is left at its default and an unknown code is left out, each
        with a sentence in `problems`; never an error, never an editor blanked by a typo.

        Accepts `{debounce, ignore, select, severity}`, the same under `lint`, or the whole object under
        `oscova`. Codes may be prefixes (`OSC1`), as everywhere.
        """
        if not isinstance(value, dict):
            return cls()
        if isinstance(value.get("oscova"), dict):
            value = value["oscova"]
        problems: list[str] = []
        lint = value.get("lint") if isinstance(value.get("lint"), dict) else {}

        def setting(key: str) -> tuple[str, Any]:
            """The setting's name as the user wrote it, and its value (absent: None)."""
            if key in value:
                return f"oscova.{key}", value[key]
            return f"oscova.lint.{key}", lint.get(key)

        debounce = value.get("debounce", value.get("debounceMs", DEFAULT_DEBOUNCE_MS))
        if isinstance(debounce, bool) or not isinstance(debounce, int | float) or not 0 <= debounce <= MAX_DEBOUNCE_MS:
            problems.append(f"the setting `oscova.debounce` must be a number of milliseconds from 0 to "
                            f"{MAX_DEBOUNCE_MS}, not {describe_value(debounce)}; the default {DEFAULT_DEBOUNCE_MS} applies")
            debounce = DEFAULT_DEBOUNCE_MS
        select = _code_list(*setting("select"), problems, selecting=True)
        ignore = _code_list(*setting("ignore"), problems) or frozenset()
        severity = _severity(*setting("severity"), problems)
        return cls(int(debounce), ignore, severity, select, tuple(problems))


def describe_value(value: Any) -> str:
    """A value as a sentence names it: its JSON type (`a string`, `an object`, `null`), or the number itself."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    names = {bool: "a boolean", str: "a string", list: "an array", dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _codes_of(name: str, raw: list[Any], problems: list[str]) -> list[str]:
    """The known codes of a setting's list; each other entry is left out with a sentence."""
    known = []
    for entry in raw:
        if isinstance(entry, str) and is_known_code(entry):
            known.append(normal_code(entry))
        else:
            shown = entry if isinstance(entry, str) else describe_value(entry)
            problems.append(f"the setting `{name}` has an {unknown_code(shown)}; it is left out")
    return known


def _code_list(name: str, raw: Any, problems: list[str], *, selecting: bool = False) -> frozenset[str] | None:
    """A list of codes or prefixes; None when absent, of the wrong type or (a selection) naming no known
    code: a selection of typos alone would report nothing."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        problems.append(f"the setting `{name}` must be a list of codes, not {describe_value(raw)}; it is not applied")
        return None
    known = _codes_of(name, raw, problems)
    if selecting and raw and not known:
        problems.append(f"the setting `{name}` names no known code, so it is not applied")
        return None
    return frozenset(known)


def _severity(name: str, raw: Any, problems: list[str]) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"the setting `{name}` must be an object of codes and levels, not {describe_value(raw)}; it is "
                        "not applied")
        return {}
    severity: dict[str, str] = {}
    for code in _codes_of(name, list(raw), problems):
        level = next(v for k, v in raw.items() if normal_code(k) == code)
        if isinstance(level, str) and level.lower() in _LEVELS:
            severity[code] = level.lower()
        else:
            problems.append(f"the setting `{name}` gives `{code}` the level {level!r}; levels are error, warning, "
                            "information and hint; it is left out")
    return severity
