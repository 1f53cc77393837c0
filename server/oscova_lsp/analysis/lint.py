"""Which codes are reported, and how: codes and prefixes as users write them (`[lint]`, `--select`/`--ignore`,
the editor settings, `# oscova: ignore[...]`), their one normalisation, and the filter every diagnostic passes
through (`apply_lint`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .diagnostics import Diagnostic, Severity

if TYPE_CHECKING:  # the rules are imported on first use: the editor settings are read before any parser loads
    from oscova_runtime.host_config import HostConfig

    from .files import HostFile, ParsedFile
    from .rules.common import Context

CODE_FORM = "codes look like OSC101 or OSC1"


def normal_code(code: str) -> str:
    """A code or prefix as it is compared: `osc1 ` is `OSC1`."""
    return code.strip().upper()


def is_known_code(code: str) -> bool:
    """A code or a prefix of one (`OSC1` is every OSC1xx, `OSC` every code), in any case."""
    from .rules.registry import RULES

    normal = normal_code(code)
    return normal.startswith("OSC") and any(known.startswith(normal) for known in RULES)


def unknown_code(code: str, where: str = "") -> str:
    """The sentence for a code no rule has: `where` names the setting (`in `[lint] select``), or nothing."""
    return f"unknown code `{code}`{f' in {where}' if where else ''} ({CODE_FORM})"


def known_codes(values: Iterable[str]) -> set[str]:
    """The known codes and prefixes of `values`, normalised; the others are reported where they are written."""
    return {normal_code(code) for code in values if is_known_code(code)}


def code_list(value: str) -> frozenset[str]:
    """Comma-separated codes or prefixes (`--select`, `--ignore`), each naming a rule; ValueError with the
    sentence for an empty list or an unknown code (a typo must not pass for a clean check)."""
    codes = [code.strip() for code in value.split(",") if code.strip()]
    if not codes:
        raise ValueError(f"no code given ({CODE_FORM})")
    for code in codes:
        if not is_known_code(code):
            raise ValueError(unknown_code(code))
    return frozenset(normal_code(code) for code in codes)


UNFILTERED = "unfiltered"
"""A diagnostic's `data` key: reported whatever `select`, `ignore` and suppressions say (an error in them)."""


def lint_table(ctx: Context, parsed: HostFile) -> list[Diagnostic]:
    """OSC002 on each code of `[lint]` that names no rule (a typo must not pass for a clean check). No
    `select` or `ignore` hides it: it is about them (`UNFILTERED`)."""
    from .rules.common import value_place

    config, doc = ctx.host_configuration(parsed)
    if config is None or doc is None:
        return []
    from .rules.schema import SCHEMA

    out: list[Diagnostic] = []
    lint, prefix = config.lint, parsed.prefix
    entries = [((*prefix, "lint", key, index), code, f"`[lint] {key}`", False)
               for key, codes in (("select", lint.select or []), ("ignore", lint.ignore))
               for index, code in enumerate(codes)]
    entries += [((*prefix, "lint", "severity", code), code, "`[lint.severity]`", True) for code in lint.severity]
    for key_path, code, where, is_key in entries:
        if is_known_code(code):
            continue
        rng = (doc.key_range(key_path) or doc.best_range(key_path)) if is_key else value_place(doc, key_path)
        out.append(SCHEMA.diagnostic(parsed.path, rng, unknown_code(code, where), data={UNFILTERED: True}))
    return out


@dataclass
class LintOptions:
    """Which codes are reported and at what severity, from `[lint]`, the command line or the editor.
    Everywhere a code is taken, a prefix (`OSC1`, `OSC01`) stands for every code it starts."""

    select: frozenset[str] | None = None
    ignore: frozenset[str] = frozenset()
    severity: dict[str, str] | None = None


def apply_lint(diagnostics: list[Diagnostic], parsed: ParsedFile | None, host: HostConfig,
               options: LintOptions | None = None) -> list[Diagnostic]:
    """Drops suppressed, ignored and unselected codes and applies severity overrides; the command line
    and the editor override `[lint]`."""
    # `[lint]` codes naming no rule are reported (`lint_table`) and left out here: a `select` of typos alone
    # selects nothing less than everything
    ignore = known_codes(host.lint.ignore)
    select = known_codes(host.lint.select or []) or None
    severity: dict[str, str] = {normal_code(c): level for c, level in host.lint.severity.items() if is_known_code(c)}
    if options is not None:
        ignore |= known_codes(options.ignore)
        if options.select is not None:
            select = known_codes(options.select)
        severity.update({normal_code(c): level for c, level in (options.severity or {}).items() if c.strip()})
    suppressions = parsed.suppressions if parsed is not None else {}
    out = []
    for diag in diagnostics:
        if diag.data.get(UNFILTERED):
            out.append(diag)
            continue
        if _selected(diag.code, ignore) or (select is not None and not _selected(diag.code, select)):
            continue
        line_codes = suppressions.get(diag.range.start.line, ...)
        if line_codes is None or (line_codes is not ... and _selected(diag.code, line_codes)):
            continue
        override = _most_specific(diag.code, severity)
        if override:
            try:
                diag = diag.with_severity(Severity.parse(override))
            except KeyError:
                pass
        out.append(diag)
    return out


def _selected(code: str, prefixes: Iterable[str]) -> bool:
    return any(code.startswith(prefix) for prefix in prefixes)


def _most_specific(code: str, levels: dict[str, str]) -> str | None:
    """The level of the longest code or prefix in `levels` that `code` starts with."""
    matches = [prefix for prefix in levels if code.startswith(prefix)]
    return levels[max(matches, key=len)] if matches else None


def lint_key(lint: LintOptions | None) -> str:
    """The lint options as one canonical string (a set's order changes between processes; None is the
    default options)."""
    lint = lint or LintOptions()
    return json.dumps([None if lint.select is None else sorted(lint.select), sorted(lint.ignore),
                       sorted((lint.severity or {}).items())])
