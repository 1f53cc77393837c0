"""Every OSC rule, gathered from the family modules: the one table that `oscova-lsp rule`, hover, SARIF, the
codes `[lint]` and the settings take, and the rules reference (`docs/rules.md`) are made from.

A rule is a `Rule` at the top level of its family's module; adding one there adds it here.
`python -m oscova_lsp.analysis.rules.registry > docs/rules.md` writes the rules reference again.
"""

from __future__ import annotations

from types import ModuleType

from . import (
    agent_tools,
    configuration,
    definition,
    evals,
    providers,
    references,
    schema,
    syntax,
    templates,
    tools,
)
from .rule import Rule

FAMILIES: tuple[ModuleType, ...] = (syntax, schema, definition, providers, agent_tools, tools, references,
                                    configuration, evals, templates)
"""The modules that hold rules, one family each."""


def family_rules(module: ModuleType) -> list[Rule]:
    """The rules a family module holds at its top level."""
    return [value for value in vars(module).values() if isinstance(value, Rule)]


def _gather() -> dict[str, Rule]:
    """Raises when two modules hold a rule of one code: a family does not import another family's rules."""
    found: dict[str, tuple[Rule, str]] = {}
    for module in FAMILIES:
        for rule in family_rules(module):
            if rule.code in found:
                raise TypeError(f"{rule.code} is in both {found[rule.code][1]} and {module.__name__}")
            found[rule.code] = (rule, module.__name__)
    return {code: found[code][0] for code in sorted(found)}


RULES: dict[str, Rule] = _gather()
"""Every rule by code, in code order (as `oscova-lsp rule` lists them and SARIF names them)."""


def listing() -> list[str]:
    """`oscova-lsp rule` without a code: one line a rule."""
    return [f"{rule.code}  {rule.severity.label:<11}  {rule.summary}" for rule in RULES.values()]


def markdown_table() -> str:
    """The rules table of the rules reference: one row a rule, each code a link to its section."""
    rows = ["| code | default | what it finds | quick fix |", "|---|---|---|---|"]
    rows += [f"| [{r.code}](#{r.code.lower()}) | {r.severity.label} | {r.summary} | {r.fix or '—'} |"
             for r in RULES.values()]
    return "\n".join(rows) + "\n"


_PAGE_INTRO = """\
# Rules

<!-- Made from the rule modules: `python -m oscova_lsp.analysis.rules.registry > docs/rules.md` writes it again. -->

Each diagnostic has a code. `oscova-lsp rule CODE` prints a rule's documentation, `oscova-lsp rule` lists them
all, and the editor shows it on hover. Silence a code on one line with `# oscova: ignore[OSC021]` (YAML, TOML)
or `{# oscova: ignore[OSC101] #}` (Jinja), or for the whole workspace in `oscova.toml`:

```toml
[lint]
ignore = ["OSC107"]
[lint.severity]
OSC021 = "error"
```

[Checking and CI](checking.md#silencing-a-finding) has every way to choose codes.

"""


def markdown_page() -> str:
    """The rules reference, `docs/rules.md`: the table, then each rule's documentation under its code."""
    parts = [_PAGE_INTRO, markdown_table()]
    for rule in RULES.values():
        parts.append(f"\n## {rule.code}\n\n**{rule.summary}**\n\n"
                     f"Default severity: {rule.severity.label}. Applies to: {rule.where}.\n\n"
                     f"{rule.explanation.strip()}\n")
        if rule.fix:
            parts.append(f"\nQuick fix: {rule.fix}.\n")
    return "".join(parts)


if __name__ == "__main__":  # pragma: no cover - a developer's command
    print(markdown_page(), end="")
