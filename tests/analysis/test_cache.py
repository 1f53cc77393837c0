"""The facts cache: warm loads give exactly the diagnostics of cold ones, and no cache file can break or fool
a check (corrupt, truncated, foreign, shipped in the repository, written by two checks at once)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from oscova_lsp.analysis import cache, cache_files, cache_keys, facts_json
from oscova_lsp.analysis.engine import Analysis
from oscova_lsp.analysis.files import DefinitionFile, parse_file
from oscova_lsp.analysis.lint import LintOptions

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from workspace_gen import generate  # noqa: E402

from tests.support.cli_zygote import script_command
from tests.support.host_files import MODELS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture(autouse=True)
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cache-home"
    monkeypatch.setenv(cache_files.ENV_DIR, str(home))
    monkeypatch.delenv(cache_files.ENV_OFF, raising=False)
    return home


def check(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("oscova-lsp", path=str(Path(sys.executable).parent))
    assert exe, "the console script `oscova-lsp` is installed"
    return subprocess.run(script_command(exe, "check", "--format", "json", *args), capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def cache_file(root: Path) -> Path:
    return Path(cache_files.cache_folder(str(root))) / "facts.json"


def load(root: Path, **options: bool) -> Analysis:
    analysis = Analysis(str(root))
    analysis.load(jobs=1, **options)
    return analysis


def cacheable(root: Path) -> set[str]:
    """The files the cache holds: every definition and template (the host configuration is always parsed)."""
    return {p for p in load(root, cache=False).workspace.files if p.endswith((".agent.yaml", ".j2"))}


# --------------------------------------------------------------------------------------------------
# Warm equals cold


@pytest.mark.parametrize("target", ["examples", "examples/broken", "generated"])
def test_warm_and_cold_check_report_the_same_diagnostics(target: str, tmp_path: Path, cache_home: Path) -> None:
    if target == "generated":
        path = tmp_path / "generated"
        generate(path, 250)  # over the parallel threshold: the cold run parses templates in worker processes
    else:
        path = ROOT / target
    uncached = check("--no-cache", str(path))
    assert not cache_home.exists(), "--no-cache neither reads nor writes the cache"
    cold = check(str(path))
    assert cache_home.is_dir()
    written = {f: f.stat().st_mtime_ns for f in cache_home.rglob("facts.json")}
    assert written
    warm = check(str(path))
    assert json.loads(uncached.stdout) or target == "examples", "the workspace has findings to compare"
    assert (cold.returncode, cold.stdout, cold.stderr) == (uncached.returncode, uncached.stdout, uncached.stderr)
    assert (warm.returncode, warm.stdout, warm.stderr) == (uncached.returncode, uncached.stdout, uncached.stderr)
    # Every entry held: the warm run found nothing to rewrite.
    assert {f: f.stat().st_mtime_ns for f in cache_home.rglob("facts.json")} == written


def test_the_environment_variable_turns_the_cache_off(tmp_path: Path, cache_home: Path) -> None:
    result = check(str(EXAMPLES / "broken"), env={cache_files.ENV_OFF: "1"})
    assert result.returncode == 1
    assert not cache_home.exists()


def test_a_warm_load_reuses_every_entry_and_parses_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", root)
    cold = load(root)
    assert cold.cache_report is not None
    assert set(cold.cache_report.parsed) == cacheable(root) and cold.cache_report.written
    warm = load(root)
    assert warm.cache_report is not None
    assert set(warm.cache_report.reused) == cacheable(root)
    assert warm.cache_report.parsed == [] and not warm.cache_report.written
    assert warm.all_diagnostics() == load(root, cache=False).all_diagnostics()


# --------------------------------------------------------------------------------------------------
# Invalidation


def test_an_edit_invalidates_exactly_that_files_entry(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", root)
    load(root)
    before = json.loads(cache_file(root).read_text().partition("\n")[2])
    template = root / "templates" / "agent.j2"
    template.write_text(template.read_text() + "\n{{ freshly_unbound }} {% if %}\n")
    definition = root / "agents" / "calls.agent.yaml"
    definition.write_text(definition.read_text().replace("agent_tools:", "agent_tools: [nobody-here]\nold_tools:", 1))
    warm = load(root)
    assert warm.cache_report is not None
    assert sorted(warm.cache_report.parsed) == sorted([str(template), str(definition)])
    assert set(warm.cache_report.reused) == cacheable(root) - {str(template), str(definition)}
    assert warm.all_diagnostics() == load(root, cache=False).all_diagnostics()
    codes = {d.code for d in warm.diagnostics(str(template))}
    assert "OSC100" in codes, "the edited template's new syntax error is reported, not a cached clean state"
    after = json.loads(cache_file(root).read_text().partition("\n")[2])
    changed = {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}
    assert changed == {"templates/agent.j2", "agents/calls.agent.yaml"}


def test_entries_of_deleted_files_are_pruned(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", root)
    load(root)
    (root / "templates" / "orphan.j2").unlink()
    load(root)
    entries = json.loads(cache_file(root).read_text().partition("\n")[2])
    assert "templates/orphan.j2" not in entries
    assert set(entries) == {os.path.relpath(p, root) for p in cacheable(root)}


def test_a_changed_host_configuration_is_picked_up(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    generate(root, 60)
    first = check(str(root))
    host = root / "oscova.toml"
    host.write_text(host.read_text().replace('team = "Bench"\n', ""))  # templates read {{ team }}
    warm = check(str(root))
    uncached = check("--no-cache", str(root))
    assert (warm.returncode, warm.stdout) == (uncached.returncode, uncached.stdout)
    assert warm.stdout != first.stdout
    assert any("`team`" in d["message"] for d in json.loads(warm.stdout))


def test_a_new_engine_version_rebuilds_every_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", root)
    expected = load(root).all_diagnostics()
    monkeypatch.setattr("oscova_lsp.__version__", "99.0.0")
    upgraded = load(root)
    assert upgraded.cache_report is not None
    assert set(upgraded.cache_report.parsed) == cacheable(root) and upgraded.cache_report.reused == []
    assert upgraded.all_diagnostics() == expected
    monkeypatch.setattr(cache_keys, "FACTS_FORMAT", cache_keys.FACTS_FORMAT + 1)
    reformatted = load(root)
    assert reformatted.cache_report is not None and reformatted.cache_report.reused == []


# --------------------------------------------------------------------------------------------------
# Stored results of a whole check: reused only while nothing they came from changed


def check_all(root: Path, lint: LintOptions | None = None) -> tuple[dict[str, list], bool]:
    """A whole check as `oscova-lsp check` runs it: its diagnostics, and whether stored results were reused."""
    analysis = Analysis(str(root), lint)
    found = analysis.check_all(jobs=1)
    return found, analysis.cache_report is not None and analysis.cache_report.results_reused


def uncached(root: Path, lint: LintOptions | None = None) -> dict[str, list]:
    analysis = Analysis(str(root), lint)
    return analysis.check_all(jobs=1, cache=False)


@pytest.mark.parametrize("form", ["text", "json", "sarif", "github"])
def test_reused_results_print_exactly_what_a_check_without_cache_prints(form: str, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", root)
    (root / "templates" / "big.j2").write_bytes(b"x" * 1_000_001)  # skipped, with a note on stderr
    expected = check("--no-cache", "--format", form, str(root))
    for _ in range(2):  # cold, then warm (reusing the stored results)
        got = check("--format", form, str(root))
        assert (got.returncode, got.stdout, got.stderr) == (expected.returncode, expected.stdout, expected.stderr)
    assert check_all(root)[1], "the warm checks reused the stored results"
    assert "note:" in expected.stderr and expected.returncode == 1


def test_any_change_to_a_file_runs_the_checks_again(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", root)
    check_all(root)
    assert check_all(root)[1]
    # A definition of this workspace: `rglob`'s first can lie in `lint-only/`, a nested workspace of its own, by
    # the order the file system lists folders in (tmpfs lists the newest first).
    helper = sorted((root / "agents").glob("*.agent.yaml"))[0]
    helper.write_text(helper.read_text() + "\n# a comment moves nothing but changes the text\n")
    found, reused = check_all(root)
    assert not reused and found == uncached(root)
    (root / "templates" / "new.j2").write_text("Hello {{ nobody_binds_me }\n")  # a new file
    found, reused = check_all(root)
    assert not reused and found == uncached(root)
    assert [d.code for d in found[str(root / "templates" / "new.j2")]] == ["OSC107", "OSC100"]


def test_other_lint_options_run_the_checks_again(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", root)
    check_all(root)
    only = LintOptions(select=frozenset({"OSC020"}))
    found, reused = check_all(root, only)
    assert not reused and found == uncached(root, only)
    assert {d.code for ds in found.values() for d in ds} == {"OSC020"}
    assert check_all(root, only)[1] and not check_all(root)[1]


def test_a_file_appearing_where_a_definition_points_is_seen(tmp_path: Path) -> None:
    """`instructions_file` names a file the scan does not index (not a template extension): whether it
    exists is a question the checks ask the disk, asked again before stored results are reused."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "oscova.toml").write_text(MODELS)
    (root / "a.agent.yaml").write_text("id: a\ninstructions_file: prompts/a.md\n")
    found, _ = check_all(root)
    assert [d.code for d in found[str(root / "a.agent.yaml")]] == ["OSC040"]
    (root / "prompts").mkdir()
    (root / "prompts" / "a.md").write_text("You help.\n")
    found, reused = check_all(root)
    assert not reused and found[str(root / "a.agent.yaml")] == []
    assert check_all(root)[1]
    (root / "prompts" / "a.md").unlink()
    found, reused = check_all(root)
    assert not reused and [d.code for d in found[str(root / "a.agent.yaml")]] == ["OSC040"]


def test_a_link_turned_to_lead_out_of_the_root_is_seen(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "oscova.toml").write_text(MODELS)
    (root / "a.agent.yaml").write_text("id: a\ninstructions_file: prompts/a.md\n")
    (root / "kept").mkdir()
    (root / "kept" / "a.md").write_text("You help.\n")
    (outside / "a.md").write_text("You help.\n")
    (root / "prompts").symlink_to(root / "kept")
    assert check_all(root)[0][str(root / "a.agent.yaml")] == []
    (root / "prompts").unlink()
    (root / "prompts").symlink_to(outside)  # the same text, now outside the root
    found, reused = check_all(root)
    assert not reused and [d.code for d in found[str(root / "a.agent.yaml")]] == ["OSC040"]
    assert "outside the workspace root" in found[str(root / "a.agent.yaml")][0].message


@pytest.mark.parametrize("damage", ["truncated", "other world", "wrong shape", "a float range", "forged probe"])
def test_damaged_stored_results_are_never_trusted(damage: str, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", root)
    expected = uncached(root)
    check_all(root)
    target = cache_file(root).with_name("results.json")
    header, _, body = target.read_bytes().partition(b"\n")
    meta, stored = json.loads(header), json.loads(body)
    if damage == "truncated":
        forged = target.read_bytes()[:-100]
    else:
        if damage == "other world":
            stored["world"] = "0" * 32
        elif damage == "wrong shape":
            first = next(path for path, rows in stored["diagnostics"].items() if rows)
            stored["diagnostics"][first][0][4] = "error"
        elif damage == "a float range":  # equal to a range decoded before it (decoded ranges are shared)
            rows = [row for found in stored["diagnostics"].values() for row in found]
            rows[-1][1] = [float(rows[0][1][0]), *rows[0][1][1:]]
        else:  # an answer the disk no longer gives: recomputed, whatever the rest says
            stored["probes"].append(["file", str(root / "nowhere.md"), True])
            stored["diagnostics"] = {path: [] for path in stored["diagnostics"]}
        new_body = json.dumps(stored).encode()
        forged = json.dumps(dict(meta, digest=_body_digest(new_body))).encode() + b"\n" + new_body
    target.write_bytes(forged)
    found, reused = check_all(root)
    assert not reused and found == expected


# --------------------------------------------------------------------------------------------------
# Damaged, foreign and shipped caches


def _body_digest(body: bytes) -> str:
    """As the cache's header records it (see the format in cache_files.py)."""
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def _damages(valid: bytes) -> dict[str, bytes]:
    header, _, body = valid.partition(b"\n")
    meta = json.loads(header)
    entries = json.loads(body)
    key = "templates/syntax.j2"
    # A forged entry for the broken template: right digest, "no syntax error" facts of the wrong shape.
    wrong_shape = dict(entries, **{key: [entries[key][0], ["t", [[], [], [["oops", "x", 0, None]], [], [], []]]]})
    wrong_body = json.dumps(wrong_shape).encode()
    return {
        "truncated": valid[: len(valid) // 2],
        "garbage": b"\x00\xff not json at all",
        "flipped": header + b"\n" + body.replace(b'"t"', b'"d"', 1),
        "foreign version": json.dumps(dict(meta, engine="0/0.0.1/py3.0")).encode() + b"\n" + body,
        "other root": json.dumps(dict(meta, root="/elsewhere")).encode() + b"\n" + body,
        "wrong shape": json.dumps(dict(meta, digest=_body_digest(wrong_body))).encode() + b"\n" + wrong_body,
        "empty": b"",
        "nested": b"[" * 200_000 + b"\n" + body,
    }


@pytest.mark.parametrize("damage", ["truncated", "garbage", "flipped", "foreign version", "other root", "wrong shape",
                                    "empty", "nested"])
def test_a_damaged_cache_is_ignored_and_rebuilt(damage: str, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", root)
    expected = load(root).all_diagnostics()
    target = cache_file(root)
    target.write_bytes(_damages(target.read_bytes())[damage])
    again = load(root)
    assert again.all_diagnostics() == expected
    assert again.cache_report is not None and again.cache_report.written
    assert str(root / "templates" / "syntax.j2") in again.cache_report.parsed
    rebuilt = load(root)  # the rewritten cache is whole again
    assert rebuilt.cache_report is not None and set(rebuilt.cache_report.reused) == cacheable(root)


def test_a_cache_shipped_in_the_repository_is_never_read(tmp_path: Path, cache_home: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", root)
    load(root)
    forged = cache_file(root).read_bytes()
    shutil.rmtree(cache_home)
    for place in (root / ".oscova" / "cache", root / ".oscova"):
        place.mkdir(parents=True, exist_ok=True)
        (place / "facts.json").write_bytes(forged)
    analysis = load(root)
    assert analysis.cache_report is not None and analysis.cache_report.reused == []
    folder = Path(cache_files.cache_folder(str(root)))
    assert folder.is_dir() and not folder.is_relative_to(root)
    assert folder.stat().st_mode & 0o777 == 0o700
    assert cache_file(root).stat().st_mode & 0o777 == 0o600


def test_at_most_max_workspaces_folders_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    roots = []
    for n in range(4):
        root = tmp_path / f"ws{n}"
        root.mkdir()
        (root / "oscova.toml").write_text("")
        (root / "a.j2").write_text("{{ x }}")
        load(root)
        os.utime(cache_file(root), (n + 1, n + 1))  # written in this order, whatever the clock's resolution
        roots.append(root)
    monkeypatch.setattr(cache_files, "MAX_WORKSPACES", 2)
    (roots[0] / "a.j2").write_text("{{ y }}")
    load(roots[0])  # the most recent write: kept, with the next most recent; the others go
    assert {root.name for root in roots if cache_file(root).exists()} == {"ws0", "ws3"}


# --------------------------------------------------------------------------------------------------
# Two checks at once


def test_two_concurrent_checks_both_succeed_with_identical_output(tmp_path: Path, cache_home: Path) -> None:
    root = tmp_path / "ws"
    generate(root, 250)
    exe = shutil.which("oscova-lsp", path=str(Path(sys.executable).parent))
    assert exe
    command = script_command(exe, "check", "--format", "json", str(root))
    for _ in range(2):  # cold caches racing to write, then warm ones racing to read
        processes = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for _ in range(2)]
        results = [(p.communicate(timeout=300), p.returncode) for p in processes]
        assert results[0] == results[1]
        (stdout, stderr), code = results[0]
        assert code == 1 and json.loads(stdout) and stderr == ""
    uncached = check("--no-cache", str(root))
    assert uncached.stdout == stdout
    assert sorted(p.name for p in cache_file(root).parent.iterdir()) == ["facts.json", "results.json"], \
        "no temporary file is left"


# --------------------------------------------------------------------------------------------------
# Exact round trips of what YAML can hold


@pytest.mark.parametrize("text", [
    "id: a\nagent_tools: [b, c]\n1: int key\ntrue: bool key\n~: null key\n1.5: float key\n",
    "id: a\nblob: !!binary aGVsbG8=\nn: .inf\nm: -.nan\nz: -0.0\nbig: 123456789012345678901234567890\n",
    "base: &b {x: 1, y: [1, 2]}\nid: a\nother:\n  <<: *b\n  y: 3\ninstructions: |\n  Hi {{ name }}\n",
    "id: a\nid: b\n  bad: [\n",
    "id: a\ncontext_providers:\n  -\n  - personal\n  - {type: memory, state_key: m}\nmodel: 3\n",
    "id: \"\\0odd\"\n\"\\0key\": 1\n",
])
def test_definition_facts_round_trip_exactly(text: str, tmp_path: Path) -> None:
    path = str(tmp_path / "x.agent.yaml")
    fresh = parse_file(path, text)
    assert isinstance(fresh, DefinitionFile) and fresh.doc is not None
    stored = json.loads(json.dumps(facts_json.encode(fresh)))
    restored = facts_json.decode(path, cache.FileKind.DEFINITION, text, stored)
    assert isinstance(restored, DefinitionFile) and restored.doc is not None
    assert restored.doc.spans == fresh.doc.spans
    assert repr(restored.doc.value) == repr(fresh.doc.value)
    assert (restored.problems, restored.definition, restored.raw_id, restored.null_entries) == (
        fresh.problems, fresh.definition, fresh.raw_id, fresh.null_entries)


def test_without_a_cache_dir_setting_the_cache_is_in_the_platforms_cache_folder(tmp_path: Path) -> None:
    """On Linux that is `$XDG_CACHE_HOME/oscova-lsp` (platformdirs); never the workspace."""
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES, root)
    env = {k: v for k, v in os.environ.items() if k != cache_files.ENV_DIR}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    done = subprocess.run(script_command(shutil.which("oscova-lsp", path=str(Path(sys.executable).parent)) or "",
                                         "check", str(root)), capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "xdg" / "oscova-lsp").glob("*/facts.json")), "the cache was written there"
