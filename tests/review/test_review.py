"""`oscova-lsp review` on real git repositories: what each change does to the
requests of the agents it reaches, the diagnostics it introduces and fixes, the agent tests that drift, and
the usage errors. Every review runs as a subprocess with the network blocked; none may connect anywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply

from .conftest import workspace_files
from .support import agents, commit, connections, diff_of, git, init, review, review_json, write


def test_a_partial_reaching_agents_through_includes_changes_each_of_them_with_its_cause(repo: Path):
    write(repo, {"templates/partials/persona.j2": "You are {{ agent_name }} of the {{ team }} team. Reply in French.\n"})
    code, report = review_json(repo)
    found = agents(report)
    assert sorted(found) == ["triage", "writer"]  # writer through writer.j2 → intro.j2 → persona.j2
    for agent_id in ("triage", "writer"):
        assert found[agent_id]["status"] == "changed"
        assert found[agent_id]["causes"] == ["templates/partials/persona.j2"]
        assert [c["part"] for c in found[agent_id]["changes"]] == ["instructions"]
    assert "+You are writer of the Platform team. Reply in French." in diff_of(found["writer"], "instructions")
    assert "-You are writer of the Platform team." in diff_of(found["writer"], "instructions")
    assert report["workspaces"][0]["unchanged"] == 3  # echo, lead, plain
    assert report["summary"] == {"changed": 2, "added": 0, "removed": 0, "unchanged": 3, "diagnosticsIntroduced": 0,
                                 "errorsIntroduced": 0, "diagnosticsFixed": 0, "testsReplayed": 0, "testsDrifted": 0}
    assert code == 0 and report["exitCode"] == 0
    assert connections(repo) == []


def test_a_removed_tool_shows_in_the_tool_list_of_that_agent_only(repo: Path):
    text = (repo / "agents/writer.agent.yaml").read_text().replace("tools: [read_file, current_datetime]",
                                                                    "tools: [current_datetime]")
    write(repo, {"agents/writer.agent.yaml": text})
    code, report = review_json(repo)
    writer = agents(report)["writer"]
    assert writer["causes"] == ["agents/writer.agent.yaml"]
    assert [c["part"] for c in writer["changes"]] == ["tools"]
    tools = diff_of(writer, "tools")
    assert "-read_file: Reads a UTF-8 text file" in tools
    assert "+" not in "".join(line[0] for line in tools.splitlines()[2:] if line)  # nothing was added
    assert sorted(agents(report)) == ["writer"] and code == 0


def test_a_provider_option_changes_what_that_provider_contributes_to_every_agent(repo: Path):
    (repo / "docs").mkdir()
    write(repo, {"docs/guide.md": "Guide.\n"})
    text = (repo / "oscova.toml").read_text().replace('workspace_directories = ["data"]',
                                                      'workspace_directories = ["data", "docs"]')
    write(repo, {"oscova.toml": text})
    code, report = review_json(repo)
    found = agents(report)
    assert sorted(found) == ["echo", "lead", "plain", "triage", "writer"]  # the environment provider renders for all
    for agent in found.values():
        assert agent["causes"] == ["oscova.toml"]
        diff = diff_of(agent, "instructions")
        assert "+- <repository>/docs" in diff  # the scratch folder never shows
        assert "oscova-review-" not in diff and str(repo) not in diff
    assert code == 0


def test_a_changed_variable_changes_only_the_agents_whose_templates_use_it(repo: Path):
    write(repo, {"oscova.toml": (repo / "oscova.toml").read_text().replace('team = "Platform"', 'team = "Support"')})
    code, report = review_json(repo)
    found = agents(report)
    assert sorted(found) == ["triage", "writer"]
    assert found["triage"]["causes"] == ["oscova.toml"]
    assert "+You are triage of the Support team." in diff_of(found["triage"], "instructions")
    assert report["workspaces"][0]["unchanged"] == 3  # their host configuration changed, their requests did not
    assert code == 0


def test_a_renamed_agent_is_removed_and_added_and_its_callers_lose_the_tool_with_a_diagnostic(repo: Path):
    git(repo, "mv", "agents/echo.agent.yaml", "agents/repeater.agent.yaml")
    text = (repo / "agents/repeater.agent.yaml").read_text().replace("id: echo", "id: repeater")
    write(repo, {"agents/repeater.agent.yaml": text})
    code, report = review_json(repo)
    found = agents(report)
    assert found["echo"]["status"] == "removed" and found["echo"]["path"] == "agents/echo.agent.yaml"
    assert found["repeater"]["status"] == "added" and "Repeat the query." in found["repeater"]["request"]
    for caller in ("lead", "triage"):
        assert found[caller]["status"] == "changed"
        assert found[caller]["causes"] == ["agents/echo.agent.yaml"]
        assert "-echo: Repeats what it is told." in diff_of(found[caller], "tools")
    introduced = report["workspaces"][0]["diagnostics"]["introduced"]
    assert sorted((d["path"], d["code"], d["severity"]) for d in introduced) == [
        ("agents/lead.agent.yaml", "OSC020", "warning"), ("agents/triage.agent.yaml", "OSC020", "warning")]
    assert {d["line"] for d in introduced if d["path"] == "agents/lead.agent.yaml"} == {3}
    assert code == 0  # warnings only, and no agent test


def test_an_error_the_change_introduces_fails_the_review_and_its_fix_is_reported(repo: Path):
    write(repo, {"templates/intro.j2": '{% include "templates/partials/persona.j2" %}\nBe {{ tone }}.\n'})
    code, report = review_json(repo)
    introduced = report["workspaces"][0]["diagnostics"]["introduced"]
    assert [(d["path"], d["line"], d["code"], d["severity"]) for d in introduced] == [
        ("templates/intro.j2", 2, "OSC101", "error")]
    assert code == 1 and report["exitCode"] == 1 and report["summary"]["errorsIntroduced"] == 1
    commit(repo, "an unbound variable")
    write(repo, {"templates/intro.j2": '{% include "templates/partials/persona.j2" %}\nBe brief.\n'})
    code, report = review_json(repo, "--base", "HEAD")
    assert [(d["code"], d["path"]) for d in report["workspaces"][0]["diagnostics"]["fixed"]] == [
        ("OSC101", "templates/intro.j2")]
    assert report["workspaces"][0]["diagnostics"]["introduced"] == [] and code == 0


def _recorded_case(repo: Path, fake: FakeOpenAI, agent: str, answer: str) -> None:
    from tests.runs.test_cli import oscova

    fake.enqueue(Reply(text=answer))
    ran = oscova("run", agent, "--input", "Hello there", "--json", cwd=repo)
    assert ran.returncode == 0, ran.stderr
    run_id = json.loads(ran.stdout.splitlines()[0])["runId"]
    saved = oscova("test", "--save", run_id, "--name", agent, cwd=repo)
    assert saved.returncode == 0, saved.stderr


def test_an_agent_test_of_a_changed_agent_is_replayed_offline_and_its_drift_fails_the_review(
        tmp_path: Path, fake_openai: FakeOpenAI):
    repo = init(tmp_path / "repo", workspace_files(fake_openai.base_url))
    (repo / ".gitignore").write_text(".oscova/runs/\n")
    _recorded_case(repo, fake_openai, "writer", "Done.")
    _recorded_case(repo, fake_openai, "echo", "Repeated.")
    _recorded_case(repo, fake_openai, "plain", "Plain.")
    commit(repo, "agent tests")
    fake_openai.reset()
    write(repo, {"templates/partials/persona.j2": "You are {{ agent_name }}, a careful writer.\n"})
    text = (repo / "agents/plain.agent.yaml").read_text().replace("Answer plainly.", "Answer very plainly.")
    write(repo, {"agents/plain.agent.yaml": text})
    marker = tmp_path / "imported.txt"
    runs = sorted(p.name for p in (repo / ".oscova" / "runs").iterdir())
    code, report = review_json(repo, env={"REVIEW_IMPORT_MARKER": str(marker)})
    tests = {t["name"]: t for t in report["workspaces"][0]["tests"]}
    assert sorted(tests) == ["plain", "writer"]  # echo did not change: its test is not replayed
    assert tests["writer"]["status"] == "drifted"
    assert "differs in the instructions" in tests["writer"]["difference"]
    assert "+You are writer, a careful writer." in tests["writer"]["difference"]
    assert tests["plain"]["status"] == "not replayed"  # its tool is the workspace's code: not imported untrusted
    assert "tool `search_notes`" in tests["plain"]["reason"] and "--trust" in tests["plain"]["reason"]
    assert report["summary"]["testsDrifted"] == 1 and code == 1
    assert fake_openai.requests == [] and connections(repo) == []
    assert not marker.exists()
    assert sorted(p.name for p in (repo / ".oscova" / "runs").iterdir()) == runs  # replays wrote no transcript here
    assert git(repo, "status", "--porcelain").splitlines() == [" M agents/plain.agent.yaml",
                                                              " M templates/partials/persona.j2"]

    code, report = review_json(repo, "--trust", env={"REVIEW_IMPORT_MARKER": str(marker)})
    tests = {t["name"]: t for t in report["workspaces"][0]["tests"]}
    assert tests["plain"]["status"] == "drifted" and code == 1  # replayed with its tool this time
    assert marker.exists() and fake_openai.requests == [] and connections(repo) == []


def test_without_trust_nothing_of_the_workspace_is_imported_and_its_provider_is_named_as_not_loaded(repo: Path, tmp_path: Path):
    write(repo, {"templates/tickets.j2": "<tickets>{{ open_tickets }}, newest first</tickets>\n"})
    marker = tmp_path / "imported.txt"
    code, report = review_json(repo, env={"REVIEW_IMPORT_MARKER": str(marker)})
    assert not marker.exists()
    assert agents(report) == {}  # the provider is not loaded: its template renders nowhere
    assert {(n["kind"], n["name"]) for n in report["workspaces"][0]["notLoaded"]} == {("provider", "tickets")}
    assert report["trusted"] is False
    code, report = review_json(repo, "--trust", env={"REVIEW_IMPORT_MARKER": str(marker)})
    # the base's and the work tree's own modules, each imported once
    assert sorted(marker.read_text().split()) == ["providers.tickets"] * 2 + ["tools.search"] * 2
    triage = agents(report)["triage"]
    assert triage["causes"] == ["templates/tickets.j2"]
    assert "+<tickets>T-1 (open), newest first</tickets>" in diff_of(triage, "instructions")
    assert report["workspaces"][0]["notLoaded"] == [] and connections(repo) == []


def test_a_binary_file_and_a_blob_git_cannot_read_at_the_base_are_sentences_not_failures(tmp_path: Path):
    files = workspace_files()
    repo = init(tmp_path / "repo", {**files, "templates/notes.j2": "placeholder\n", "docs/lost.md": "Lost.\n"})
    (repo / "templates/notes.j2").write_bytes(b"\x00\x01\x02binary\xff")
    commit(repo, "a binary template")
    lost = git(repo, "rev-parse", "HEAD:docs/lost.md")
    (repo / ".git" / "objects" / lost[:2] / lost[2:]).unlink()  # a loose object gone, as in a damaged clone
    write(repo, {"templates/notes.j2": "Notes: {{ team }}.\n"})
    code, report = review_json(repo, "--base", "HEAD")
    assert any("`docs/lost.md` at " in n and "could not be read from git" in n for n in report["notes"])
    fixed = report["workspaces"][0]["diagnostics"]["fixed"]
    assert [(d["path"], d["code"]) for d in fixed] == [("templates/notes.j2", "OSC001")]
    assert "binary" in fixed[0]["message"]
    assert code == 0
    text = review(repo, "--base", "HEAD")
    assert text.returncode == 0 and "could not be read from git" in text.stdout and "Traceback" not in text.stderr


def test_a_base_that_does_not_exist_is_a_usage_error(repo: Path):
    for given, words in (("no-such-branch", "the base 'no-such-branch' is not a commit, branch or tag"),
                         ("-x", "--base takes a commit, branch or tag, not '-x'")):
        done = review(repo, f"--base={given}")
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.strip() == f"oscova-lsp: {words}" + ("" if given == "-x" else " of this repository")


def test_a_shallow_clone_without_the_merge_base_is_a_usage_error_that_says_how_to_fetch_it(repo: Path, tmp_path: Path):
    write(repo, {"templates/intro.j2": "Be brief, always.\n"})
    commit(repo, "change one")
    write(repo, {"templates/intro.j2": "Be brief, always, please.\n"})
    commit(repo, "change two")
    git(repo, "checkout", "-q", "main")
    write(repo, {"data/notes.txt": "Moved.\n"})
    commit(repo, "main moves on")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", "--no-single-branch", "--branch", "change", f"file://{repo}", str(clone))
    assert git(clone, "rev-parse", "--is-shallow-repository") == "true"
    done = review(clone)
    assert done.returncode == 2 and done.stdout == ""
    assert "this clone is shallow and does not hold the merge base of HEAD and origin/main" in done.stderr
    assert "fetch-depth: 0" in done.stderr and "Traceback" not in done.stderr
    done = review(clone, "--base", "HEAD~1")
    assert done.returncode == 2 and "this clone is shallow" in done.stderr


def test_outside_a_git_repository_a_review_is_a_usage_error(tmp_path: Path):
    folder = tmp_path / "plain"
    write(folder, {"oscova.toml": "[host]\n", "agents/a.agent.yaml": "id: a\ninstructions: Hi.\n"})
    done = review(folder, env={"GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert done.returncode == 2
    assert "is not inside a git repository" in done.stderr and "Traceback" not in done.stderr
    done = review(folder, "missing-folder", env={"GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert done.returncode == 2 and "no such file or directory: missing-folder" in done.stderr


def test_the_default_base_is_the_merge_base_with_main_and_the_work_tree_is_never_written(repo: Path):
    write(repo, {"templates/intro.j2": '{% include "templates/partials/persona.j2" %}\nBe terse.\n'})
    first = commit(repo, "on the branch")
    git(repo, "checkout", "-q", "main")
    write(repo, {"data/notes.txt": "main moved on\n"})
    commit(repo, "main moves")
    git(repo, "checkout", "-q", "change")
    base = git(repo, "merge-base", "HEAD", "main")
    before = git(repo, "status", "--porcelain", "--ignored")
    code, report = review_json(repo)
    assert report["base"] == {"ref": "main", "commit": base, "chosen": "the merge base with main"}
    assert sorted(agents(report)) == ["writer"] and first != base
    assert git(repo, "status", "--porcelain", "--ignored") == before  # no file written, no .oscova, no cache
    assert not (repo / ".oscova").exists()


@pytest.mark.parametrize("form", ["markdown", "github", "text"])
def test_each_format_carries_the_summary_the_diffs_and_the_causes(repo: Path, tmp_path: Path, form: str):
    write(repo, {"templates/partials/persona.j2": "You are {{ agent_name }}, reply in French.\n",
                 "templates/intro.j2": '{% include "templates/partials/persona.j2" %}\nBe {{ tone }}.\n'})
    summary = tmp_path / "summary.md"
    done = review(repo, "--format", form, env={"GITHUB_STEP_SUMMARY": str(summary)} if form == "github" else None)
    assert done.returncode == 1, done.stderr
    if form == "github":
        assert "::error file=templates/intro.j2,line=2,col=" in done.stdout
        assert "::notice file=agents/writer.agent.yaml,line=1,title=The request of writer changed::" in done.stdout
        body = summary.read_text()
    else:
        body = done.stdout
    if form == "text":
        assert "~ writer: instructions — via `templates/intro.j2`, `templates/partials/persona.j2`" in body
        assert "introduced templates/intro.j2:2:" in body
    else:
        assert "| agents changed | 2 |" in body and "| diagnostics introduced | 1 (1 error) |" in body
        assert "<summary><code>writer</code>: instructions — via <code>templates/intro.j2</code>, " in body
        assert "```diff\n--- writer instructions at " in body
        assert "+You are writer, reply in French." in body


def test_untracked_memory_is_the_same_on_both_sides_so_it_is_no_change(repo: Path):
    write(repo, {"agents/keeper.agent.yaml": "id: keeper\ninstructions: Keep notes.\nmemory: true\n",
                 ".gitignore": ".oscova/\n"})
    commit(repo, "an agent with memory")
    write(repo, {".oscova/memory/alice/keeper/MEMORY.md": "- The launch is on Tuesday.\n",
                 "oscova.toml": (repo / "oscova.toml").read_text() + "# a comment: every agent renders again\n"})
    code, report = review_json(repo, "--base", "HEAD")
    assert agents(report) == {}  # keeper rendered on both sides, with the same memory: unchanged
    assert report["workspaces"][0]["unchanged"] == 6
    write(repo, {".oscova/memory/alice/keeper/MEMORY.md": "- The launch moved to Friday.\n"})
    code, report = review_json(repo, "--base", "HEAD")
    assert agents(report) == {}  # state is the work tree's on both sides: never a change of the review's


def test_the_network_guard_of_these_tests_refuses_and_records_a_connection(tmp_path: Path):
    import socket
    import subprocess
    import sys

    from .support import GUARD, network_log

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    (tmp_path / "guard").mkdir()
    (tmp_path / "guard" / "sitecustomize.py").write_text(GUARD)
    cwd = tmp_path / "here"
    cwd.mkdir()
    done = subprocess.run([sys.executable, "-c", f"import socket; socket.create_connection(('127.0.0.1', {port}))"],
                          env={"PYTHONPATH": str(tmp_path / "guard"), "REVIEW_NETWORK_LOG": str(network_log(cwd))},
                          capture_output=True, text=True, timeout=30)
    listener.close()
    assert done.returncode != 0 and "the network is blocked in this test" in done.stderr
    assert connections(cwd) == [f"('127.0.0.1', {port})"]


def test_each_changed_agent_shows_its_token_delta_and_whether_the_cacheable_prefix_moved(repo: Path):
    """Counted in the model's own tokenizer (`[models.default] tokenizer`), before and after the change."""
    host = (repo / "oscova.toml").read_text().replace('model = "fake-model"', 'model = "fake-model"\ntokenizer = "o200k_base"')
    write(repo, {"oscova.toml": host})
    commit(repo, "count with o200k_base")
    write(repo, {"templates/partials/persona.j2":
                 "You are {{ agent_name }} of the {{ team }} team. " + "Answer in plain words, one step at a time. " * 20 + "\n"})
    code, report = review_json(repo, "--base", "HEAD")  # the tokenizer is set on both sides
    writer = agents(report)["writer"]["economics"]
    assert writer["tokenizer"] == "o200k_base" and writer["exact"] is True
    assert writer["delta"] == writer["tokensAfter"] - writer["tokensBefore"] and writer["delta"] >= 20 * 9
    # the partial opens the instructions and nothing in them changes per run: the prefix grew by the same tokens
    assert writer["prefixMoved"] is True and writer["cacheableAfter"] - writer["cacheableBefore"] == writer["delta"]
    text = review(repo, "--base", "HEAD").stdout
    assert f"tokens {writer['tokensBefore']:,} → {writer['tokensAfter']:,} (+{writer['delta']:,}, o200k_base)" in text, text
    assert code == 0


def test_without_a_known_tokenizer_the_token_figures_are_marked_as_estimates(repo: Path):
    write(repo, {"templates/partials/persona.j2": "You are {{ agent_name }} of the {{ team }} team, always.\n"})
    _, report = review_json(repo)
    economics = agents(report)["writer"]["economics"]
    assert economics["exact"] is False
    text = review(repo).stdout
    assert f"tokens ≈ {economics['tokensBefore']:,} → ≈ {economics['tokensAfter']:,}" in text
