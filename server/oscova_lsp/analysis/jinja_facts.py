"""A template's facts, the vocabulary every part of its analysis speaks: the free variable uses with what an
undefined value does at each, the references to other templates, the syntax errors; and their compact form for
worker processes."""

from __future__ import annotations

from dataclasses import dataclass, field

from .text import LineIndex

# What happens at a use of a name when it is undefined (`VariableUse.effect`), as Jinja's default `Undefined`
# renders it. The first three are guards: the template handles the name being undefined.
DEFAULT = "default"
"""The subject of a `default` (`d`) filter: the default applies."""
DEFINED_TEST = "defined"
"""The subject of an `is defined` / `is undefined` test."""
GUARDED = "guarded"
"""Inside a branch or an operand that a test of this name guards (`{% if x is defined %}…{{ x }}`,
`x is defined and x`, `{{ x if x is defined else 0 }}`): it renders only where the name is defined."""
EMPTY = "empty"
"""Output, directly or through a filter that keeps text: it renders empty."""
IF_TEST = "if"
"""The whole test of an `if` or `elif`: the test is false, the block never renders."""
TEST = "test"
"""Tested for truth inside a larger test (`not`, `and`, `or`, a conditional expression, another test)."""
PASSES = "passes"
"""The subject of a test an undefined value passes (`iterable`, `sequence`, `callable`): it iterates as empty."""
LOOP = "loop"
"""The iterable of a `for`: the loop never runs."""
FAILS = "fails"
"""Read from (attribute, item, call) or computed with: Jinja raises and the rendering fails."""
COMPARED = "compared"
"""Compared with `==` or `!=`: an undefined value equals no value."""
VALUE = "value"
"""Anything else (a `set` value, a comparison, a filter or macro argument): undefined there."""
GUARDS = frozenset({DEFAULT, DEFINED_TEST, GUARDED})
UNDEFINED_EFFECTS = {
    DEFAULT: "the default always applies",
    DEFINED_TEST: "the test always finds it undefined",
    GUARDED: "this use renders only where it is defined",
    EMPTY: "it renders empty",
    IF_TEST: "it is undefined, so the test is false and its block never renders",
    TEST: "it is undefined, so it tests false",
    PASSES: "it is undefined, yet the test is true",
    LOOP: "it is undefined, so the loop never runs",
    FAILS: "it is undefined, and using it here fails the rendering",
    COMPARED: "it is undefined, so it equals no value",
    VALUE: "it is undefined where it is used here",
}
"""What rendering does at a use of a name that nothing binds, in the words of the checks and hover."""


@dataclass(frozen=True, slots=True)
class VariableUse:
    """A variable read that no enclosing template scope binds: the rendering provider must."""

    name: str
    line: int
    column: int
    """In characters, like every column of the facts (a range converts them to UTF-16 code units)."""
    offset: int
    effect: str = EMPTY
    """What rendering does at this use when the name is undefined: one of the effects above."""

    @property
    def guarded(self) -> bool:
        """The template itself handles the name being undefined here."""
        return self.effect in GUARDS

    @property
    def end_column(self) -> int:
        return self.column + len(self.name)


@dataclass(frozen=True, slots=True)
class TemplateReference:
    kind: str  # include | import | from | extends
    path: str
    line: int
    column: int
    end_column: int
    """The span of the path string, quotes included."""
    ignore_missing: bool = False
    with_context: bool = True
    """False for an `import` / `from` without `with context`: the imported template sees no render variables."""


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    message: str
    line: int  # 0-based
    column: int = 0
    end_column: int | None = None
    """The failing construct's columns on `line` (in characters); None: the whole line."""


@dataclass
class TemplateFacts:
    text: str
    free_uses: list[VariableUse] = field(default_factory=list)
    references: list[TemplateReference] = field(default_factory=list)
    syntax_errors: list[SyntaxProblem] = field(default_factory=list)
    """Every syntax error, in source order; the rest of the template is analysed around them."""
    local_names: frozenset[str] = frozenset()
    """Names the template binds itself (set, for, macro arguments, imports): offered by completion."""
    suppressions: dict[int, frozenset[str] | None] = field(default_factory=dict)
    delimited: list[tuple[int, int]] = field(default_factory=list)
    """Offset intervals inside a labelled delimiter (an XML-like tag pair or a fenced block)."""

    @property
    def syntax_error(self) -> SyntaxProblem | None:
        return self.syntax_errors[0] if self.syntax_errors else None

    def is_delimited(self, offset: int) -> bool:
        return any(start <= offset < end for start, end in self.delimited)


def line_column(lines: LineIndex, offset: int) -> tuple[int, int]:
    """The line of an offset and its column in characters, as the facts keep them (the LSP's UTF-16 columns are
    computed from these when a range is made)."""
    return lines.line_column(offset)


# --------------------------------------------------------------------------------------------------
# A compact form for worker processes: plain tuples pickle an order of magnitude faster than objects.

WireFacts = tuple


def facts_to_wire(facts: TemplateFacts) -> WireFacts:
    errors = tuple((e.message, e.line, e.column, e.end_column) for e in facts.syntax_errors)
    return (
        tuple((u.name, u.line, u.column, u.offset, u.effect) for u in facts.free_uses),
        tuple((r.kind, r.path, r.line, r.column, r.end_column, r.ignore_missing, r.with_context)
              for r in facts.references),
        errors,
        tuple(facts.local_names),
        tuple(facts.suppressions.items()),
        tuple(facts.delimited),
    )


def facts_from_wire(text: str, wire: WireFacts) -> TemplateFacts:
    uses, refs, errors, local_names, suppressions, delimited = wire
    return TemplateFacts(
        text=text,
        free_uses=[VariableUse(*u) for u in uses],
        references=[TemplateReference(*r) for r in refs],
        syntax_errors=[SyntaxProblem(*e) for e in errors],
        local_names=frozenset(local_names),
        suppressions=dict(suppressions),
        delimited=list(delimited),
    )
