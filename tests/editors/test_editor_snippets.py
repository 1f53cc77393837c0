"""The Neovim and Emacs snippets of docs/editors.md, run as printed: each is read from the page by this test,
so the page cannot drift from what was run. Neovim 0.7 (Debian `neovim`) runs the client setup
and the agent run from the editor; Emacs 28 with eglot 1.9 and yaml-mode (Debian `emacs-nox elpa-eglot
elpa-yaml-mode`) likewise. `oscova-lsp` is the console script of this environment, found on PATH as a user's
would be; the model is the local OpenAI-compatible server.

In CI (`CI` set) a missing editor is a failure; elsewhere the test is skipped.
The page prints no Neovim snippet that is not run here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.host_files import models_default

from .test_real_editors import HERE, require

EDITORS = HERE.parent.parent / "docs" / "editors.md"
SCRIPTS = Path(sys.executable).parent  # where `oscova-lsp` is installed


def page_block(heading: str, language: str) -> str:
    """The first ```language block after the paragraph that starts with `heading`."""
    text = EDITORS.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}")
    match = re.compile(rf"^```{language}\n(.*?)^```", re.S | re.M).search(text, start)
    assert match is not None, f"no {language} block after {heading!r}"
    return match.group(1)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def workspace(tmp_path: Path, fake: FakeOpenAI) -> Path:
    """A git repository (how eglot finds a project) holding a workspace with the page's `triage` agent; its
    `current_time` is a warning (OSC102), so the open buffer gets a diagnostic and the agent still runs."""
    root = tmp_path / "ws"
    (root / "agents").mkdir(parents=True)
    (root / "oscova.toml").write_text(models_default("fake-model", base_url=fake.base_url))
    (root / "agents" / "triage.agent.yaml").write_text(
        "id: triage\ninstructions: Triage the incident. It is {{ current_time }}.\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def run_editor(command: list[str], root: Path, snippets: dict[str, str], **extra: str,
               ) -> subprocess.CompletedProcess[str]:
    """`command` in `root`, with each snippet written to a file named by its environment variable."""
    env = dict(os.environ, HOME=str(root.parent), PATH=f"{SCRIPTS}{os.pathsep}{os.environ.get('PATH', '')}",
               **extra)
    for name, text in snippets.items():
        path = root.parent / f"{name.lower()}.snippet"
        path.write_text(text)
        env[name] = str(path)
    return subprocess.run(command, cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120)


NEOVIM_SETUP = ("## Neovim", "lua")
NEOVIM_RUN = ("**Neovim**: `vim.lsp.codelens.refresh()`", "lua")
EMACS_SETUP = ("## Emacs", "elisp")
EMACS_RUN = ("**Emacs (eglot)**", "elisp")


@pytest.mark.parametrize(("reply", "printed"), [
    (Reply(text="Page the on-call for eu-west."), "PRINT completed: Page the on-call for eu-west."),
    (Reply(status=500, error_message="the model is overloaded"),
     "PRINT failed: The model returned an error (HTTP 500): the model is overloaded"),
])
def test_the_neovim_snippets_give_diagnostics_and_run_an_agent(tmp_path: Path, fake: FakeOpenAI,
                                                                      reply: Reply, printed: str) -> None:
    nvim = require("nvim", "neovim")
    root = workspace(tmp_path, fake)
    fake.enqueue(reply)
    proc = run_editor([nvim, "--headless", "--clean", "-u", str(HERE / "snippet_nvim.lua"),
                       str(root / "agents" / "triage.agent.yaml")], root,
                      {"SETUP_SNIPPET": page_block(*NEOVIM_SETUP), "RUN_SNIPPET": page_block(*NEOVIM_RUN)})
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert re.search(r"^DIAG triage\.agent\.yaml 1:\d+ OSC102$", proc.stdout, re.M), proc.stdout
    assert printed in proc.stdout.splitlines(), proc.stdout + proc.stderr
    assert fake.requests[0].messages[-1]["content"] == "502s in eu-west"


def test_the_page_names_what_the_emacs_snippet_needs() -> None:
    text = EDITORS.read_text(encoding="utf-8")
    paragraph = text[text.index(f"\n{EMACS_SETUP[0]}"):].split("```", 1)[0]
    assert "yaml-mode" in paragraph and "elpa-yaml-mode" in paragraph
    ci = (HERE.parent.parent / ".ci" / "run").read_text()
    assert re.search(r"apt-get install .*elpa-yaml-mode", ci)


@pytest.mark.parametrize(("reply", "status"), [
    (Reply(text="Page the on-call for eu-west.", chunk_size=4), "completed: Page the on-call for eu-west."),
    (Reply(status=500, error_message="the model is overloaded"),
     "failed: The model returned an error (HTTP 500): the model is overloaded"),
])
def test_the_emacs_snippets_give_diagnostics_and_run_an_agent(tmp_path: Path, fake: FakeOpenAI,
                                                                     reply: Reply, status: str) -> None:
    emacs = require("emacs", "emacs-nox elpa-eglot elpa-yaml-mode")
    elpa = Path("/usr/share/emacs/site-lisp/elpa")
    if not (any(elpa.glob("eglot-*")) and any(elpa.glob("yaml-mode-*"))):
        if os.environ.get("CI"):
            pytest.fail("eglot or yaml-mode is missing; CI must apt-get install elpa-eglot elpa-yaml-mode")
        pytest.skip("eglot or yaml-mode is not installed (apt-get install elpa-eglot elpa-yaml-mode)")
    root = workspace(tmp_path, fake)
    fake.enqueue(reply)
    proc = run_editor([emacs, "--batch", "-Q", "-l", str(HERE / "snippet_eglot.el")], root,
                      {"SETUP_SNIPPET": page_block(*EMACS_SETUP), "RUN_SNIPPET": page_block(*EMACS_RUN)},
                      TARGET=str(root / "agents" / "triage.agent.yaml"))
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "MODE yaml-mode" in proc.stdout
    assert re.search(r"^DIAG 2 oscova \[OSC102\]", proc.stdout, re.M), proc.stdout  # the instructions line
    assert status in proc.stderr.splitlines(), proc.stderr
    if status.startswith("completed"):  # the deltas, printed by the snippet's notification handler
        assert "Page the on-call for eu-west.\nEND" in proc.stdout, proc.stdout
    assert fake.requests[0].messages[-1]["content"] == "502s in eu-west"

