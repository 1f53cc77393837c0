"""The documentation: the site builds with every link and anchor found, the README and `docs/cli.md` name every
command, and no page reads like a lab notebook.

A page for users says what is true and where, so it holds no time of day, no commit hash of this repository, no
issue number, no citation of a document outside the repository ("SPEC", a path under /work/) and no "this VM".
Figures belong in `docs/performance.md`, with their method and machine (CONTRIBUTING.md, "Documentation")."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "SECURITY.md",
                ROOT / "examples" / "broken" / "README.md", ROOT / "vscode-client" / "README.md",
                *(ROOT / "docs").rglob("*.md")])

FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)[^\n]*\n.*?^(?P=indent)(?P=fence)[ \t]*$", re.S | re.M)
INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1", re.S)
TIME_OF_DAY = re.compile(r"\b([01][0-9]|2[0-3]):[0-5][0-9]\b")
ISO_DATE_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?")
ISSUE = re.compile(r"\b[Ii]ssues? #?\d+\b|(?<![\w&/#])#\d+\b")
SPEC = re.compile(r"\bSPEC\b")
THIS_VM = re.compile(r"\bthis VM\b", re.I)
OUTSIDE = re.compile(r"/work/")
HEX = re.compile(r"\b[0-9a-f]{7,40}\b")


def _page(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _prose(text: str) -> str:
    """The text outside fenced code blocks and inline code, lines kept in place."""
    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))
    return INLINE_CODE.sub(blank, FENCE.sub(blank, text))


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def test_the_pages_checked_are_the_documentation() -> None:
    names = {_page(p) for p in PAGES}
    assert {"README.md", "CONTRIBUTING.md", "docs/index.md", "docs/rules.md", "docs/performance.md"} <= names


@pytest.mark.parametrize("path", PAGES, ids=_page)
def test_no_time_of_day(path: Path) -> None:
    # Anywhere, code blocks included; a date-time in ISO 8601 (sample JSON output) is a value, not a moment of
    # writing, and is the one form allowed.
    text = path.read_text(encoding="utf-8")
    found = [f"{_page(path)}:{_line(text, m.start())}: {m.group(0)}"
             for m in TIME_OF_DAY.finditer(ISO_DATE_TIME.sub(lambda m: "~" * len(m.group(0)), text))]
    assert found == [], "a time of day: say what was measured and how, in docs/performance.md"


@pytest.mark.parametrize("path", PAGES, ids=_page)
def test_no_issue_number_spec_citation_or_this_vm(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    prose = _prose(text)
    found = [f"{_page(path)}:{_line(text, m.start())}: {m.group(0)}"
             for pattern, where in ((ISSUE, prose), (SPEC, text), (THIS_VM, text), (OUTSIDE, text))
             for m in pattern.finditer(where)]
    assert found == [], "cite the page that says it (or say the fact), not an issue, a SPEC or a path outside"


def test_the_code_cites_no_spec() -> None:
    # A document outside the repository cannot be read by whoever reads the code: cite the docs page that says it.
    sources = [path for folder in ("server", "runtime", "benchmarks", "tests", "vscode-client/src")
               for path in sorted((ROOT / folder).rglob("*")) if path.suffix in {".py", ".ts"}]
    assert len(sources) > 100
    found = [f"{_page(path)}:{_line(text, m.start())}" for path in sources if path != Path(__file__)
             for text in [path.read_text(encoding="utf-8")] for m in SPEC.finditer(text)]
    assert found == []


def test_no_commit_hash_of_this_repository() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    tokens = sorted({(path, token) for path in PAGES for token in HEX.findall(path.read_text(encoding="utf-8"))})
    if not tokens:
        return
    answer = subprocess.run(["git", "cat-file", "--batch-check"], cwd=ROOT, capture_output=True, text=True,
                            check=True, input="".join(f"{token}^{{commit}}\n" for _, token in tokens))
    resolved = [f"{_page(path)}: {token}" for (path, token), line in zip(tokens, answer.stdout.splitlines(),
                                                                         strict=True)
                if line.endswith(" commit") or " commit " in line]
    assert resolved == [], "a commit hash: say what changed, not where it was committed"


def test_the_checks_catch_what_they_are_for() -> None:
    notebook = ("Measured at 23:15 (the same hour), after f61331d (issue 16), see #12, SPEC §9: "
                "this VM ran slower.\n")
    assert TIME_OF_DAY.search(notebook) and ISSUE.findall(_prose(notebook)) == ["issue 16", "#12"]
    assert SPEC.search(notebook) and THIS_VM.search(notebook) and "f61331d" in HEX.findall(notebook)
    sample = "```json\n{\"renderedAt\": \"2025-01-01T12:00:00+00:00\"}\n```\n`- #42 EU 502s` and `text/html`\n"
    assert not TIME_OF_DAY.search(ISO_DATE_TIME.sub("~", sample)) and not ISSUE.search(_prose(sample))


def test_the_readme_and_the_command_line_page_name_every_command() -> None:
    from oscova_lsp.cli import build_parser

    commands = next(action.choices for action in build_parser()._actions
                    if isinstance(getattr(action, "choices", None), dict))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    cli = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for command in commands:
        assert f"| `{command}" in table or f"`, `{command}`" in table, f"README's Commands table: {command}"
        assert f"`oscova-lsp {command}" in cli, f"docs/cli.md: {command}"
    assert len(readme.splitlines()) <= 400


def test_the_command_line_page_names_every_option_and_the_readme_the_commands_it_promised() -> None:
    """Each option of each command is in docs/cli.md's Options table; the README's table names `diff`, `serve`
    and the `--jobs` of `check` and `eval`."""
    import argparse

    from oscova_lsp.cli import build_parser

    commands = next(action.choices for action in build_parser()._actions
                    if isinstance(getattr(action, "choices", None), dict))
    options = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split("\n## Options\n", 1)[1].split("\n## ", 1)[0]
    missing = [f"{name} {action.option_strings[0]}" for name, parser in commands.items() for action in parser._actions
               if action.option_strings and not isinstance(action, argparse._HelpAction)
               and action.help != argparse.SUPPRESS and not any(f"`{flag}" in options for flag in action.option_strings)]
    assert missing == [], "docs/cli.md's Options table"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    rows = {row.split("|")[1].strip(): row for row in table.splitlines() if row.startswith("| `")}
    assert "`diff A B`" in rows and "`serve`" in rows
    assert "`--jobs N`" in rows["`check [PATH…]`"] and "`--jobs N`" in rows["`eval [PATH…]`"]


def test_the_readme_editor_snippets_are_the_tested_ones() -> None:
    # docs/editors.md's Neovim and Emacs snippets are run in real editors (tests/editors); the README shows the same.
    blocks = re.compile(r"^```(lua|elisp)\n(.*?)^```", re.S | re.M)
    readme = [b for b in blocks.findall((ROOT / "README.md").read_text(encoding="utf-8"))]
    editors = blocks.findall((ROOT / "docs" / "editors.md").read_text(encoding="utf-8"))
    assert readme and all(block in editors for block in readme)


def test_the_quick_start_commands_are_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^```sh\n(.*?)\n```", quick, re.S | re.M)
    assert len(commands) == 2 and all("\n" not in c for c in commands)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert all(command in ci for command in commands), "each Quick start command is a line of .ci/run"


def test_the_site_builds_with_every_link_and_anchor_found(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    if mkdocs is None:
        if os.environ.get("CI"):
            pytest.fail("mkdocs is missing: pip install -e '.[docs]'")
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    build = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert build.returncode == 0, build.stdout + build.stderr
    assert (tmp_path / "site" / "rules" / "index.html").is_file()
