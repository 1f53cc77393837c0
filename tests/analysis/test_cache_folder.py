"""The cache's own folder keeps the boundary's promises: it is created 0700;
a cache folder other users can write, or that another user owns, is not used (the check runs without it and
says so once); a results file someone else wrote is not believed; a FIFO or a link to `/dev/zero` in place
of `facts.json` or `results.json` neither hangs nor kills `check`.

Every check here is `oscova-lsp check` as a subprocess with a deadline, compared with `--no-cache`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from oscova_lsp.analysis import cache_files

from tests.support.cli_zygote import module_command

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DEADLINE = 60
"""Seconds; on the unchanged code a FIFO in the cache hung `check` until killed."""
OTHER_USER = 4242


def check(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != cache_files.ENV_OFF}
    env[cache_files.ENV_DIR] = str(home)
    return subprocess.run(module_command("check", "--format", "json", *args),
                          capture_output=True, text=True, timeout=DEADLINE, env=env)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", root)
    return root


@pytest.fixture
def expected(ws: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    found = check(tmp_path / "unused", "--no-cache", str(ws))
    assert found.returncode == 1 and json.loads(found.stdout), found.stderr
    return found


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def results_file(home: Path, root: Path) -> Path:
    return home / Path(cache_files.cache_folder(str(root))).name / "results.json"


def forge_clean_results(target: Path) -> None:
    """Rewrites stored results to say "no findings", with a valid digest (what a hostile writer would do)."""
    header, _, body = target.read_bytes().partition(b"\n")
    stored = json.loads(body)
    stored["diagnostics"] = {path: [] for path in stored["diagnostics"]}
    new_body = json.dumps(stored).encode()
    digest = hashlib.blake2b(new_body, digest_size=16).hexdigest()
    target.write_bytes(json.dumps(dict(json.loads(header), digest=digest)).encode() + b"\n" + new_body)


def same_findings(got: subprocess.CompletedProcess[str], expected: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in got.stderr and "internal error" not in got.stderr, got.stderr
    assert (got.returncode, json.loads(got.stdout)) == (expected.returncode, json.loads(expected.stdout))


def test_the_cache_folders_are_created_private(ws: Path, tmp_path: Path):
    home = tmp_path / "nested" / "cache-home"
    first = check(home, str(ws))
    assert first.returncode == 1, first.stderr
    folder = results_file(home, ws).parent
    assert mode(home) == 0o700 and mode(folder) == 0o700
    assert mode(folder / "results.json") == 0o600 and mode(folder / "facts.json") == 0o600


def _open_to_others(home: Path, folder: Path) -> None:
    home.chmod(0o777)


def _folder_open_to_others(home: Path, folder: Path) -> None:
    folder.chmod(0o777)


def _folder_of_another_user(home: Path, folder: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a folder to another user")
    os.chown(folder, OTHER_USER, OTHER_USER)


@pytest.mark.parametrize("change", [_open_to_others, _folder_open_to_others, _folder_of_another_user],
                         ids=["home 0777", "folder 0777", "folder of another user"])
def test_a_cache_folder_others_can_write_is_not_used(change, ws: Path, tmp_path: Path, expected):
    home = tmp_path / "cache-home"
    assert check(home, str(ws)).returncode == 1
    target = results_file(home, ws)
    forge_clean_results(target)
    change(home, target.parent)
    forged = target.read_bytes()
    got = check(home, str(ws))
    same_findings(got, expected)  # the forged "no findings" is not believed
    assert "cache" in got.stderr and ("other users" in got.stderr or "not owned by you" in got.stderr), got.stderr
    assert target.read_bytes() == forged  # nothing is written to a folder that is not private
    again = check(home, str(ws))
    same_findings(again, expected)


@pytest.mark.parametrize("how", ["world-writable", "another owner"])
def test_a_results_file_someone_else_wrote_is_not_believed(how: str, ws: Path, tmp_path: Path, expected):
    home = tmp_path / "cache-home"
    assert check(home, str(ws)).returncode == 1
    target = results_file(home, ws)
    forge_clean_results(target)
    if how == "world-writable":
        target.chmod(0o666)
    elif os.geteuid() == 0:
        os.chown(target, OTHER_USER, OTHER_USER)
    else:
        pytest.skip("only root can give a file to another user")
    same_findings(check(home, str(ws)), expected)


@pytest.mark.parametrize("name", ["facts.json", "results.json"])
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_special_file_in_place_of_a_cache_file_never_hangs_or_kills_check(name: str, special: str, ws: Path,
                                                                              tmp_path: Path, expected):
    home = tmp_path / "cache-home"
    assert check(home, str(ws)).returncode == 1
    target = results_file(home, ws).with_name(name)
    target.unlink()
    if special == "fifo":
        os.mkfifo(target)
    else:
        os.symlink(special, target)
    same_findings(check(home, str(ws)), expected)
    same_findings(check(home, str(ws)), expected)  # and after the cache was written again
