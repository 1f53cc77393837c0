"""A workspace's own `tokenizer.json` (`[models.NAME] tokenizer`): its patterns run in a Rust library that panics
on some texts (`PanicException`, a `BaseException`). `preview --json` and `review` fall back to the estimate and
say why, never with a traceback; an untrusted review never loads the file at all."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.review.support import agents, commit, init, review, write
from tests.support.run_workspace import host_toml, write_workspace

from .test_cli import cli_env, oscova

PANICS = "(a+)+b"
"""A Split pattern the Rust regex engine gives up on (a panic) on a long run of `a` not followed by `b`."""
AS = "a" * 40 + "!"


def tokenizer_json(pattern: str) -> str:
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": None,
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        "post_processor": None, "decoder": None,
        "model": {"type": "WordLevel", "vocab": {"a": 0, "b": 1, "[UNK]": 2}, "unk_token": "[UNK]"}})


def with_tokenizer(toml: str) -> str:
    return re.sub(r"(\[models\.default\]\n)", r'\1tokenizer = "tok.json"\n', toml)


def test_preview_json_counts_by_the_estimate_when_the_tokenizer_panics(tmp_path: Path, fake_openai):
    root = write_workspace(tmp_path / "ws", with_tokenizer(host_toml(fake_openai.base_url, None)),
                           {"helper": f"id: helper\ninstructions: Say {AS}\n"})
    (root / "tok.json").write_text(tokenizer_json(PANICS))
    shown = oscova("preview", "helper", "--input", AS, "--json", cwd=root, env=cli_env(RUST_BACKTRACE="1"))
    assert shown.returncode == 0, shown.stderr
    assert "Traceback" not in shown.stderr and "stack backtrace" not in shown.stderr, shown.stderr
    counted = json.loads(shown.stdout)["tokens"]
    assert counted["exact"] is False
    assert counted["note"].startswith("the tokenizer tok.json failed while counting a text (Onig: Regex search "
                                      "error: retry-limit-in-match over); counts are estimates"), counted["note"]


def test_review_never_prints_a_traceback_for_a_panicking_tokenizer_and_never_loads_it_untrusted(tmp_path: Path):
    from tests.review.conftest import workspace_files

    files = workspace_files()
    files["oscova.toml"] = with_tokenizer(files["oscova.toml"])
    files["tok.json"] = tokenizer_json(PANICS)
    repo = init(tmp_path / "repo", files)
    write(repo, {"templates/partials/persona.j2": f"You are {{{{ agent_name }}}}, {AS}\n"})
    commit(repo, "a long run of a")
    write(repo, {"templates/partials/persona.j2": f"You are {{{{ agent_name }}}}, {AS} {AS}\n"})
    for trust in ([], ["--trust"]):
        done = review(repo, "--base", "HEAD", "--format", "json", *trust, env={"RUST_BACKTRACE": "1"})
        assert done.returncode in (0, 1), done.stderr
        assert "Traceback" not in done.stderr and "stack backtrace" not in done.stderr, done.stderr
        writer = agents(json.loads(done.stdout))["writer"]["economics"]
        assert writer["exact"] is False
    untrusted = review(repo, "--base", "HEAD", "--format", "json", env={"RUST_BACKTRACE": "1"})
    assert "panicked" not in untrusted.stderr  # never loaded: its patterns never ran
