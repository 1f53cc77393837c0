"""The cache never shows less than `--no-cache`: the stored results of a whole check are
reused only while every question the checks asked the disk gets the same answer, the grant checks' included
(the real path of each granted folder, so a folder swapped for a symlink; `HOME` and the home folder).

Every finding-producing fixture is checked after a change of the file system that alters no text: cached
(the results of the check before the change stored) and without the cache, with the same environment; the
outputs must be equal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from oscova_lsp.analysis.engine import Analysis

from tests.support.cli_zygote import module_command
from tests.support.host_files import MODELS

from .test_cache import cache_home  # noqa: F401 - the autouse fixture: a cache folder of the test's own

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

GRANTS = {
    "oscova.toml": MODELS + '\n[environment]\nworkspace_directories = ["shared"]\n',
    "agents/reader.agent.yaml": "id: reader\ninstructions: Read.\ntools: [read_file]\nworkspaces: [data, shared/notes]\n",
    "agents/broken.agent.yaml": "id: broken\ninstructions: Hi {{ nobody }}.\nagent_tools: [missing]\n",
}


def _grants(root: Path) -> None:
    for name, text in GRANTS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for folder in ("data/home", "shared/notes"):
        (root / folder).mkdir(parents=True)


FIXTURES: dict[str, Callable[[Path], None]] = {
    "examples": lambda root: shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns("broken")),
    "examples/broken": lambda root: shutil.copytree(EXAMPLES / "broken", root),
    "grants": _grants,
}


def _swap(folder: Path, target: Path) -> None:
    """`folder` replaced by a symlink to `target` (a folder's files are not the workspace's texts: the grant
    folders of the fixtures hold no definition or template)."""
    if folder.is_symlink() or folder.is_file():
        folder.unlink()
    elif folder.exists():
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.symlink_to(target, target_is_directory=True)


# Each change: (root, outside folder) -> the environment changes to check with.
CHANGES: dict[str, Callable[[Path, Path], dict[str, str]]] = {
    "data is now a link to /": lambda root, outside: (_swap(root / "data", Path("/")), {})[1],
    "data is now a link out of the root": lambda root, outside: (_swap(root / "data", outside), {})[1],
    "data is now a link to the home folder": lambda root, outside: (_swap(root / "data", outside),
                                                                    {"HOME": str(outside)})[1],
    "shared (an [environment] grant) is now a link to /": lambda root, outside: (_swap(root / "shared", Path("/")),
                                                                                 {})[1],
    "HOME moved inside a grant": lambda root, outside: {"HOME": str(root / "data" / "home")},
    "HOME is a granted folder": lambda root, outside: {"HOME": str(root / "data")},
}


def check(root: Path, *extra: str, env: dict[str, str]) -> tuple[int, str, str]:
    result = subprocess.run(module_command("check", "--format", "json", *extra, str(root)),
                            capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    return result.returncode, result.stdout, result.stderr


CASES = [(fixture, change) for fixture in FIXTURES for change in CHANGES
         if not (fixture == "examples" and change.startswith("shared"))]  # (examples has no `shared` grant)


@pytest.mark.parametrize(("fixture", "change"), CASES)
def test_the_cached_check_equals_no_cache_after_a_change_that_alters_no_text(
        fixture: str, change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    outside.mkdir()
    FIXTURES[fixture](root)
    home = {"HOME": str(tmp_path / "home")}
    check(root, env=home)  # stores this workspace's results
    monkeypatch.setenv("HOME", home["HOME"])
    assert Analysis(str(root)).stored_results() is not None, "they hold while nothing changed"
    environ = {**home, **CHANGES[change](root, outside)}
    uncached = check(root, "--no-cache", env=environ)
    assert json.loads(uncached[1]), "the fixture has findings to compare"
    assert check(root, env=environ) == uncached
    assert check(root, env=environ) == uncached  # and the results stored after the change hold for it


def test_a_grant_swapped_for_a_link_to_root_fails_the_cached_check_too(tmp_path: Path) -> None:
    """The issue's reproduction: `workspaces: [data]`, checked once; `data/` becomes a link to `/`."""
    root = tmp_path / "ws"
    _grants(root)
    (root / "agents" / "broken.agent.yaml").unlink()
    home = {"HOME": str(tmp_path / "home")}
    assert check(root, env=home)[0] == 0
    _swap(root / "data", Path("/"))
    code, out, _ = check(root, env=home)
    assert code == 1
    found = {(d["code"], d["message"].split(": ")[-1]) for d in json.loads(out)}
    assert ("OSC044", "it grants the whole file system to the agent's tools") in found
    assert any(c == "OSC043" for c, _ in found)
