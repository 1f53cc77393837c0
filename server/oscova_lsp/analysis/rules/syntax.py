"""The file as text: it can be read and parsed within bounds (OSC001), and no key is written twice (OSC004).

The parsers (`yaml_source.py`, `toml_source.py`, `files.py`) find these; their words and bounds are here.
"""

from __future__ import annotations

from ..diagnostics import Diagnostic, Problem
from ..text import Range
from .rule import E, Rule

MAX_DEPTH = 100
"""How deep a document may nest (YAML collections; TOML arrays, inline tables and dotted keys)."""
MAX_EXPANDED_NODES = 10_000
"""How many nodes YAML aliases may expand to (nodes reached again through an alias, not the document's own) before
the document is an alias bomb."""

CANNOT_READ = Rule(
    "OSC001", E, "any file", "The file cannot be read: YAML, TOML or encoding error",
    f"""The file is not valid YAML or TOML, is not UTF-8, nests deeper than {MAX_DEPTH} levels, or uses YAML
aliases that expand past {MAX_EXPANDED_NODES:,} nodes (an "alias bomb": the nodes an alias repeats count, the
document's own do not). Nothing else in the file is checked
until it parses.""")


def yaml_syntax_error(rng: Range, problem: str) -> Problem:
    return CANNOT_READ.problem(rng, f"YAML syntax error: {problem}")


def yaml_error(rng: Range, error: Exception) -> Problem:
    """What PyYAML raised without a position (a reader error, a recursion)."""
    return CANNOT_READ.problem(rng, f"YAML error: {error}")


def toml_syntax_error(rng: Range, message: str) -> Problem:
    return CANNOT_READ.problem(rng, f"TOML syntax error: {message}")


def nests_too_deep(what: str = "") -> str:
    """`what`: which constructs nest, in the file's format (TOML's arrays, inline tables or dotted keys)."""
    return f"the document nests deeper than {MAX_DEPTH} levels" + (f" ({what})" if what else "")


def aliases_expand_too_far() -> str:
    return f"YAML aliases expand past {MAX_EXPANDED_NODES:,} nodes (an alias bomb?)"


def unreadable(reason: str | None) -> Problem:
    """A file that was not read (not text, refused by the gateway) or whose parse failed: on its first line."""
    return CANNOT_READ.problem(Range.of(0, 0, 0, 0), reason or "the file cannot be read")


def failure(error: BaseException) -> str:
    """What went wrong inside the engine, in the words of one file's diagnostic."""
    return "it nests too deeply" if isinstance(error, RecursionError) else f"{type(error).__name__}: {error}"


def analysis_failed(error: BaseException) -> str:
    """Why a file was skipped when parsing it failed (the last resort of `files.parse_file`)."""
    return f"the file could not be analysed ({failure(error)}) and was skipped"


def could_not_check(path: str, error: BaseException) -> Diagnostic:
    """The one diagnostic of a file whose checks failed (the engine's and the publisher's last resort)."""
    return CANNOT_READ.diagnostic(path, Range.of(0, 0, 0, 0), f"the file could not be checked ({failure(error)})")


DUPLICATE_KEY = Rule(
    "OSC004", E, "definitions, host configuration", "Duplicate mapping key",
    """The same key appears twice in one mapping. YAML loaders keep only one of them silently, so one of
the two values is lost.""")


def _duplicate(rng: Range, message: str, first: Range) -> Problem:
    return DUPLICATE_KEY.problem(rng, message, related=((first, "first defined here"),))


def duplicate_yaml_key(rng: Range, key: object, first: Range) -> Problem:
    return _duplicate(rng, f"duplicate key `{key}`: its first value is silently replaced", first)


def duplicate_toml_key(rng: Range, parts: tuple[str, ...], first: Range) -> Problem:
    return _duplicate(rng, f"duplicate key `{'.'.join(parts)}`: TOML does not allow it", first)


def duplicate_toml_table(rng: Range, path: tuple[str, ...], first: Range) -> Problem:
    return _duplicate(rng, f"duplicate table `[{'.'.join(path)}]`", first)
