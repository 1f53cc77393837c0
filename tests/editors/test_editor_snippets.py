"""The Neovim and Emacs snippets of docs/editors.md, run as printed: each is read from the page by this test,
so the page cannot drift from what was run. Neovim 0.7 (Debian `neovim`) runs the client setup and the agent
run from the editor; Emacs 28 with eglot 1.9 and yaml-mode (Debian `emacs-nox elpa-eglot elpa-yaml-mode`)
likewise.

The snippets start `~/.local/bin/oscova-lsp`, which the one command of docs/getting-started.md ("Put
`oscova-lsp` on your `PATH`") links to a clone's `.venv/bin/oscova-lsp`: the test runs that command in a
stand-in clone whose `.venv/bin/oscova-lsp` is this environment's, and starts the editors with a `PATH` that
does not hold it, as a user's editor may be started. The model is the local OpenAI-compatible server.

In CI (`CI` set) a missing editor is a failure; elsewhere the test is skipped.
The page prints no Neovim or Emacs snippet that is not run here."""

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

DOCS = HERE.parent.parent / "docs"
EDITORS = DOCS / "editors.md"
GETTING_STARTED = DOCS / "getting-started.md"
SCRIPTS = Path(sys.executable).parent  # where `oscova-lsp` is installed


def block(page: Path, heading: str, language: str) -> str:
    """The first ```language block after the line that starts with `heading`."""
    text = page.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}")
    match = re.compile(rf"^```{language}\n(.*?)^```", re.S | re.M).search(text, start)
    assert match is not None, f"no {language} block after {heading!r} in {page.name}"
    return match.group(1)


NEOVIM_SETUP = ("## Neovim", "lua")
NEOVIM_RUN = ("**Neovim**: `vim.lsp.codelens.refresh()`", "lua")
EMACS_SETUP = ("## Emacs", "elisp")
EMACS_RUN = ("**Emacs (eglot)**", "elisp")
PATH_STEP = ("### Put `oscova-lsp` on your `PATH`", "sh")


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def home_with_the_path_step(tmp_path: Path) -> Path:
    """A home folder after the page's command, run in a clone whose `.venv/bin/oscova-lsp` is this one's."""
    home, clone = tmp_path / "home", tmp_path / "clone"
    home.mkdir()
    (clone / ".venv" / "bin").mkdir(parents=True)
    (clone / ".venv" / "bin" / "oscova-lsp").symlink_to(SCRIPTS / "oscova-lsp")
    step = block(GETTING_STARTED, *PATH_STEP)
    subprocess.run(["bash", "-euc", step], cwd=clone, env=dict(os.environ, HOME=str(home)), check=True)
    assert (home / ".local" / "bin" / "oscova-lsp").resolve() == (SCRIPTS / "oscova-lsp").resolve()
    return home


def workspace(parent: Path, fake: FakeOpenAI, *, git: bool = True) -> Path:
    """A workspace with the page's `triage` agent; its `current_time` is a warning (OSC102), so the open buffer
    gets a diagnostic and the agent still runs. `git`: the workspace is a Git repository (how eglot finds a
    project by default); else it lies in a monorepo, a folder below the repository's top."""
    root = parent / "ws" if git else parent / "repo" / "services" / "ws"
    (root / "agents").mkdir(parents=True)
    (root / "oscova.toml").write_text(models_default("fake-model", base_url=fake.base_url))
    (root / "agents" / "triage.agent.yaml").write_text(
        "id: triage\ninstructions: Triage the incident. It is {{ current_time }}.\n")
    subprocess.run(["git", "init", "-q", str(root if git else parent / "repo")], check=True)
    return root


def run_editor(command: list[str], cwd: Path, home: Path, snippets: dict[str, str], **extra: str,
               ) -> subprocess.CompletedProcess[str]:
    """`command` in `cwd`, with each snippet written to a file named by its environment variable; `PATH`
    without this environment's scripts, so only the snippet's path can start the server."""
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and Path(p).resolve() != SCRIPTS.resolve())
    env = dict(os.environ, HOME=str(home), PATH=path, **extra)
    for name, text in snippets.items():
        file = home / f"{name.lower()}.snippet"
        file.write_text(text)
        env[name] = str(file)
    return subprocess.run(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize(("reply", "printed"), [
    (Reply(text="Page the on-call for eu-west."), "PRINT completed: Page the on-call for eu-west."),
    (Reply(status=500, error_message="the model is overloaded"),
     "PRINT failed: The model returned an error (HTTP 500): the model is overloaded"),
])
def test_the_neovim_snippets_give_diagnostics_and_run_an_agent(tmp_path: Path, fake: FakeOpenAI,
                                                               reply: Reply, printed: str) -> None:
    nvim = require("nvim", "neovim")
    home = home_with_the_path_step(tmp_path)
    root = workspace(tmp_path, fake)
    fake.enqueue(reply)
    proc = run_editor([nvim, "--headless", "--clean", "-u", str(HERE / "snippet_nvim.lua"),
                       str(root / "agents" / "triage.agent.yaml")], root, home,
                      {"SETUP_SNIPPET": block(EDITORS, *NEOVIM_SETUP), "RUN_SNIPPET": block(EDITORS, *NEOVIM_RUN)})
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert re.search(r"^DIAG triage\.agent\.yaml 1:\d+ OSC102$", proc.stdout, re.M), proc.stdout
    assert f"ROOT {root}" in proc.stdout.splitlines(), proc.stdout
    assert printed in proc.stdout.splitlines(), proc.stdout + proc.stderr
    assert fake.requests[0].messages[-1]["content"] == "502s in eu-west"


def test_the_neovim_snippet_starts_the_workspaces_server_from_a_subfolder_and_none_outside(
        tmp_path: Path, fake: FakeOpenAI) -> None:
    # Started from another folder (the workspace's parent), the root is still the folder of `oscova.toml`; a
    # definition outside every workspace starts no server (it would check nothing).
    nvim = require("nvim", "neovim")
    home = home_with_the_path_step(tmp_path)
    root = workspace(tmp_path, fake)
    stray = tmp_path / "elsewhere" / "persona.agent.yaml"
    stray.parent.mkdir()
    stray.write_text("id: persona\n")
    script = tmp_path / "clients.lua"
    script.write_text(
        "dofile(os.getenv('SETUP_SNIPPET'))\n"
        f"vim.cmd('edit {stray}')\n"
        "vim.defer_fn(function()\n"
        "  io.stdout:write(('OUTSIDE %d\\n'):format(#vim.lsp.get_active_clients()))\n"
        f"  vim.cmd('edit {root / 'agents' / 'triage.agent.yaml'}')\n"
        "  vim.defer_fn(function()\n"
        "    for _, c in ipairs(vim.lsp.get_active_clients()) do\n"
        "      io.stdout:write(('CLIENT %s %s\\n'):format(c.name, c.config.root_dir))\n"
        "    end\n"
        "    vim.cmd('qall!')\n"
        "  end, 1500)\n"
        "end, 1500)\n")
    proc = run_editor([nvim, "--headless", "--clean", "-u", str(script)], tmp_path, home,
                      {"SETUP_SNIPPET": block(EDITORS, *NEOVIM_SETUP)})
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    assert "OUTSIDE 0" in lines, proc.stdout + proc.stderr
    assert f"CLIENT oscova {root}" in lines, proc.stdout + proc.stderr


def test_the_page_names_what_the_emacs_snippet_needs() -> None:
    text = EDITORS.read_text(encoding="utf-8")
    paragraph = text[text.index(f"\n{EMACS_SETUP[0]}"):].split("```", 1)[0]
    assert "yaml-mode" in paragraph and "elpa-yaml-mode" in paragraph
    ci = (HERE.parent.parent / ".ci" / "run").read_text()
    assert re.search(r"apt-get install .*elpa-yaml-mode", ci)


@pytest.mark.parametrize("git", [True, False], ids=["its-own-repository", "in-a-monorepo"])
@pytest.mark.parametrize(("reply", "status"), [
    (Reply(text="Page the on-call for eu-west.", chunk_size=4), "completed: Page the on-call for eu-west."),
    (Reply(status=500, error_message="the model is overloaded"),
     "failed: The model returned an error (HTTP 500): the model is overloaded"),
])
def test_the_emacs_snippets_give_diagnostics_and_run_an_agent(tmp_path: Path, fake: FakeOpenAI,
                                                              reply: Reply, status: str, git: bool) -> None:
    emacs = require("emacs", "emacs-nox elpa-eglot elpa-yaml-mode")
    elpa = Path("/usr/share/emacs/site-lisp/elpa")
    if not (any(elpa.glob("eglot-*")) and any(elpa.glob("yaml-mode-*"))):
        if os.environ.get("CI"):
            pytest.fail("eglot or yaml-mode is missing; CI must apt-get install elpa-eglot elpa-yaml-mode")
        pytest.skip("eglot or yaml-mode is not installed (apt-get install elpa-eglot elpa-yaml-mode)")
    home = home_with_the_path_step(tmp_path)
    root = workspace(tmp_path, fake, git=git)
    fake.enqueue(reply)
    proc = run_editor([emacs, "--batch", "-Q", "-l", str(HERE / "snippet_eglot.el")], root, home,
                      {"SETUP_SNIPPET": block(EDITORS, *EMACS_SETUP), "RUN_SNIPPET": block(EDITORS, *EMACS_RUN)},
                      TARGET=str(root / "agents" / "triage.agent.yaml"))
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "MODE yaml-mode" in proc.stdout
    assert f"ROOT {root}/" in proc.stdout.splitlines(), proc.stdout  # the workspace, not the repository
    assert re.search(r"^DIAG 2 oscova \[OSC102\]", proc.stdout, re.M), proc.stdout  # the instructions line
    assert status in proc.stderr.splitlines(), proc.stderr
    if status.startswith("completed"):  # the deltas, printed by the snippet's notification handler
        assert "Page the on-call for eu-west.\nEND" in proc.stdout, proc.stdout
    assert fake.requests[0].messages[-1]["content"] == "502s in eu-west"
