"""`review --format markdown` on this repository's own `examples/`, between two commits of a fixture branch,
prints exactly `golden/examples.md`.

The fixture repository is built here: `main` holds a copy of `examples/`, the branch `fixture` one scripted
change (a partial edited, a tool removed, a host variable changed, an agent's description changed, an agent
removed and one added). Commit dates and authors are fixed, so commit ids are too; the review renders with
its stated moment and machine; no absolute path may appear. After an intended change of `examples/` or of
the review's wording, regenerate the file with `OSCOVA_UPDATE_GOLDEN=1 pytest tests/review/test_golden.py`
and read its diff.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .support import commit, connections, git, init, review, write

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("golden") / "examples.md"


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path.name} no longer holds {old!r}: update the scripted change"
    path.write_text(text.replace(old, new))


def _scripted_change(repo: Path) -> None:
    _replace(repo / "templates/partials/persona.j2", "Today is {{ current_date }}.\n",
             "Today is {{ current_date }}.\nAnswer in the customer's language.\n")
    _replace(repo / "agents/release-notes.agent.yaml", "tools: [read_file]\n", "")
    _replace(repo / "oscova.toml", 'product = "Oscova Cloud"', 'product = "Oscova Cloud EU"')
    _replace(repo / "agents/ticket-lookup.agent.yaml", "description: Looks up a customer's history",
             "description: Looks up a customer's tickets and history")
    git(repo, "rm", "-q", "agents/summarizer.agent.yaml", "evals/summarizer.eval.yaml")  # its evaluation goes too
    write(repo, {"agents/greeter.agent.yaml": """\
        id: greeter
        name: Greeter
        description: Greets a customer and asks what they need.
        instructions: |
          {% include "templates/partials/persona.j2" %}
          Greet the customer by name and ask one question.
        example_input: Hi, it's Sam.
        """})


def test_the_review_of_the_examples_prints_the_golden_markdown(tmp_path: Path):
    repo = tmp_path / "examples-fixture"
    shutil.copytree(REPO / "examples", repo, ignore=shutil.ignore_patterns(".oscova", "__pycache__"))
    init(repo, {})
    git(repo, "checkout", "-q", "-b", "fixture")
    _scripted_change(repo)
    commit(repo, "the scripted change")
    done = review(repo, "--format", "markdown")
    assert done.returncode == 0, done.stderr
    assert str(tmp_path) not in done.stdout and "oscova-review-" not in done.stdout
    assert connections(repo) == []
    if os.environ.get("OSCOVA_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(done.stdout)
    assert done.stdout == GOLDEN.read_text()
