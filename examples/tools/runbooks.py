"""A custom tool for the example workspace: full-text search over the runbooks in data/runbooks."""

from __future__ import annotations

from pathlib import Path

RUNBOOKS = Path(__file__).resolve().parent.parent / "data" / "runbooks"


def search_runbooks(query: str, limit: int = 5) -> list[str]:
    """Searches the runbooks for lines containing every word of the query.

    Returns up to `limit` matches as `file:line: text`.
    """
    words = [w.lower() for w in query.split() if w]
    matches: list[str] = []
    for path in sorted(RUNBOOKS.glob("*.md")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if words and all(w in line.lower() for w in words):
                matches.append(f"{path.name}:{number}: {line.strip()}")
                if len(matches) >= limit:
                    return matches
    return matches
