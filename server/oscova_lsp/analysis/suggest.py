"""The one "did you mean" of the checker: a suggestion only when it is close, as rustc bounds it.

rustc's `find_best_match_for_name` (`rustc_span/src/edit_distance.rs`) takes, in order: a candidate equal but
for case; else the candidate nearest by edit distance, if that distance is at most a third of the word's
length (at least 1); else a candidate made of the same `_`-separated words in another order. Anything
farther is no suggestion: a wrong "did you mean" misleads more than none (`customer_tier` is not
`user_timezone`), and the quick fix then offered first would change the meaning.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Suggestion:
    name: str

    @property
    def words(self) -> str:
        """What a message ends with: `; did you mean `name`?`."""
        return f"; did you mean `{self.name}`?"


def did_you_mean(word: str, choices: Iterable[str]) -> Suggestion | None:
    """The candidate `word` is most likely a typo of, or None when none is close (ties: the first given)."""
    candidates = [c for c in dict.fromkeys(choices) if c != word]
    folded = word.casefold()
    for candidate in candidates:
        if candidate.casefold() == folded:
            return Suggestion(candidate)
    limit = max(len(word), 3) // 3
    best: tuple[int, str] | None = None
    for candidate in candidates:
        distance = edit_distance(word, candidate, limit)
        if distance is not None and (best is None or distance < best[0]):
            best = (distance, candidate)
    if best is not None:
        return Suggestion(best[1])
    words = sorted(folded.split("_"))
    for candidate in candidates:
        if sorted(candidate.casefold().split("_")) == words:
            return Suggestion(candidate)
    return None


def edit_distance(a: str, b: str, limit: int) -> int | None:
    """The optimal-string-alignment distance of `a` and `b` (insertions, deletions, substitutions and swaps of
    neighbours, each 1), or None when it exceeds `limit`."""
    if abs(len(a) - len(b)) > limit:
        return None
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, y in enumerate(b, start=1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return None
        before, previous = previous, current
    return previous[-1] if previous[-1] <= limit else None
