"""The workspace boundary in the file-backed providers and tools: the Library, memory,
private notes, skills, shared personal context, vision and `write_file` read and write only regular files
inside the workspace root. A FIFO or a link to `/dev/zero` there is skipped with the reason (never waited on
or read whole), a link leading out is not followed, and a storage folder outside the root is refused."""

from __future__ import annotations

import asyncio
import datetime as _dt
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oscova_runtime.context import InvokingContext
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.host import ConfiguredHost, HostConfigurationError
from oscova_runtime.host_config import HostConfig
from oscova_runtime.notices import ProviderNotice, listening
from oscova_runtime.paths import FileRefused
from oscova_runtime.providers import (
    LibraryContextProvider,
    MemoryContextProvider,
    MemoryStore,
    PrivateNotesContextProvider,
    SharedAgentPersonalContextRepository,
    SkillsContextProvider,
    memory_tools,
)
from oscova_runtime.providers.vision import AnalyzeImageTool
from oscova_runtime.session import AgentSession
from oscova_runtime.templates import TemplateRenderer
from oscova_runtime.tools import BuiltinToolContext, builtin_tools

from tests.support.blocking import within

SECRET = "outside-secret-91d2"
FIFO = "it is a FIFO, not a regular file, and was not read"
LEADS_OUT = "it is a symlink that leads outside the workspace root"
DAY = _dt.date(2026, 11, 30)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text(f"{SECRET} needle\n")
    return folder


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def ctx() -> InvokingContext:
    return InvokingContext(None, AgentSession(), None)  # type: ignore[arg-type]


def run(work: Any) -> Any:
    """Runs a coroutine in a thread with a generous bound: a reader blocked on a FIFO fails, not hangs."""
    return within(30, lambda: asyncio.run(work))


def test_the_library_skips_special_files_and_links_leading_out(root: Path, outside: Path) -> None:
    library = root / "library"
    library.mkdir()
    (library / "guide.md").write_text("the needle is here\n")
    os.mkfifo(library / "pipe.md")
    os.symlink("/dev/zero", library / "zero.md")
    os.symlink(outside / "secret.md", library / "linked.md")
    provider = LibraryContextProvider(str(library), boundary=str(root))

    found = run(provider.library_search("needle"))
    assert "guide.md: the needle is here" in found
    assert SECRET not in found
    assert f"pipe.md was skipped: {FIFO}" in found
    assert f"linked.md was skipped: {LEADS_OUT}" in found
    assert "zero.md was skipped: it is a symlink that leads outside" in found
    assert run(provider.library_read("pipe.md")) == f"The Library document 'pipe.md' was not read: {FIFO}"
    assert SECRET not in run(provider.library_read("linked.md"))
    assert run(provider.library_read("guide.md")) == "the needle is here\n"


def test_a_library_folder_leading_out_of_the_root_is_refused(root: Path, outside: Path) -> None:
    os.symlink(outside, root / "library")
    definition = AgentDefinition(id="a", instructions="hi")
    host = ConfiguredHost(root, HostConfig.model_validate({"host": {"user_id": "u", "library": True}}), [definition])
    with pytest.raises(HostConfigurationError) as refused:
        run(host.provider_factory(definition, _build_context(definition)))
    assert "The library folder `library` leads outside the workspace root" in str(refused.value)


def _build_context(definition: AgentDefinition) -> Any:
    from oscova_runtime.orchestrator import BuildContext

    return BuildContext(orchestrator=None, requested_definition=definition, requested=True,  # type: ignore[arg-type]
                        dependencies={})


def _store(root: Path) -> MemoryStore:
    return MemoryStore(str(root / "memory"), "u", "a", today=lambda: DAY, boundary=str(root))


def test_memory_files_that_are_special_are_skipped_with_the_reason(root: Path) -> None:
    store = _store(root)
    (Path(store.folder) / "daily").mkdir(parents=True)
    os.mkfifo(store.long_term_path)
    os.symlink("/dev/zero", store.day_path(DAY))
    Path(store.day_path(DAY - _dt.timedelta(days=1))).write_text("- yesterday's needle\n")
    provider = MemoryContextProvider(store, memory_tools(store), TemplateRenderer(root))

    text = run(provider.provide_ai_context(ctx())).instructions
    assert f"[MEMORY.md: {FIFO}]" in text
    assert "[2026-11-30.md: it is a symlink that leads outside the workspace root" in text
    assert "yesterday's needle" in text
    search = {f.name: f for f in memory_tools(store)}["memory_search"]
    found = run(search.invoke({"query": "needle"}))
    assert "2026-11-29.md: - yesterday's needle" in found
    assert f"MEMORY.md was skipped: {FIFO}" in found


def test_memory_never_writes_through_a_link_leading_out(root: Path, outside: Path) -> None:
    store = _store(root)
    Path(store.folder).parent.mkdir(parents=True)
    os.symlink(outside, store.folder)  # `memory/u/a` -> outside: MEMORY.md would land there
    save = {f.name: f for f in memory_tools(store)}["memory_save"]
    with pytest.raises(FileRefused, match="outside the workspace root"):
        run(save.invoke({"content": "remember this", "long_term": True}))
    assert sorted(os.listdir(outside)) == ["secret.md"]


def test_memory_never_waits_on_a_fifo_it_would_append_to(root: Path) -> None:
    store = _store(root)
    Path(store.folder).mkdir(parents=True)
    os.mkfifo(store.long_term_path)
    with pytest.raises(FileRefused, match="it is a FIFO, not a regular file, and was not written"):
        within(30, lambda: store.append("remember", long_term=True))


@pytest.mark.parametrize("memory_root", ["../outside", "ABSOLUTE", "link"])
def test_a_memory_root_outside_the_workspace_is_refused(root: Path, outside: Path, memory_root: str) -> None:
    os.symlink(outside, root / "link")
    value = str(outside) if memory_root == "ABSOLUTE" else memory_root
    config = HostConfig.model_validate({"host": {"user_id": "u"}, "memory": {"root": value}})
    definition = AgentDefinition(id="a", instructions="hi", memory=True)
    host = ConfiguredHost(root, config, [definition])
    with pytest.raises(HostConfigurationError) as refused:
        run(host.provider_factory(definition, _build_context(definition)))
    assert f"The memory folder `{value}` leads outside the workspace root" in str(refused.value)
    assert sorted(os.listdir(outside)) == ["secret.md"]


def test_private_notes_that_are_special_or_lead_out_are_not_read(root: Path, outside: Path) -> None:
    """Not waited on, not followed, and ("Missing or unauthorized notes contribute nothing") not in the prompt:
    the reason goes to the run's listener."""
    notes = root / ".oscova/notes/u"
    notes.mkdir(parents=True)
    os.mkfifo(notes / "a.md")
    os.symlink(outside / "secret.md", notes / "b.md")
    heard: list[ProviderNotice] = []

    async def provide(agent_id: str) -> Any:
        with listening(heard.append):
            provider = PrivateNotesContextProvider(str(root / ".oscova/notes"), "u", agent_id, boundary=str(root))
            return await provider.provide_ai_context(ctx())

    assert run(provide("a")).instructions is None
    assert run(provide("b")).instructions is None
    assert [n.message.partition(": ")[2] for n in heard] == [
        FIFO, "it is a symlink that leads outside the user's own notes folder"]
    assert SECRET not in str(heard)


def test_skills_that_are_special_or_named_out_of_the_root_are_not_read(root: Path, outside: Path) -> None:
    (root / "skills/triage").mkdir(parents=True)
    os.mkfifo(root / "skills/triage/SKILL.md")
    (outside / "escape").mkdir()
    (outside / "escape/SKILL.md").write_text(f"---\ndescription: {SECRET}\n---\n{SECRET}\n")
    provider = SkillsContextProvider(str(root / "skills"), ["triage", "../../outside/escape"], boundary=str(root))
    context = run(provider.provide_ai_context(ctx()))
    assert f"- triage: (not read: {FIFO})" in context.instructions
    assert SECRET not in context.instructions
    assert run(provider.load_skill("triage")) == f"The skill 'triage' was not read: {FIFO}"
    assert SECRET not in run(provider.load_skill("../../outside/escape"))


def test_the_personal_context_is_never_waited_on_or_written_out_of_the_root(root: Path, outside: Path) -> None:
    repository = SharedAgentPersonalContextRepository(str(root / ".oscova/personal/u"), boundary=str(root))
    Path(repository.path_for("a")).parent.mkdir(parents=True)
    os.mkfifo(repository.path_for("a"))
    with pytest.raises(FileRefused, match="FIFO"):
        run(repository.get("a"))
    os.symlink(outside, root / ".oscova/personal/u/b")
    with pytest.raises(FileRefused, match="outside the workspace root"):
        run(repository.save("b", "my context"))
    assert sorted(os.listdir(outside)) == ["secret.md"]


def test_a_refused_personal_context_shows_the_reason_where_the_context_would_be(root: Path) -> None:
    definition = AgentDefinition(id="a", instructions="<user>{{ user_context }}</user>", shared=True)
    host = ConfiguredHost(root, HostConfig.model_validate({"host": {"user_id": "u"}}), [definition])
    path = Path(host.personal_repository.path_for("a"))  # type: ignore[attr-defined]
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    model = run(host.personal_model_factory(definition)(ctx()))
    assert model["user_context"] == f"[context.md: {FIFO}]"


def test_vision_refuses_a_fifo_image_without_waiting(root: Path) -> None:
    os.mkfifo(root / "photo.png")
    tool = AnalyzeImageTool(None, lambda: [str(root)])  # type: ignore[arg-type] - refused before any call
    with pytest.raises(FileRefused, match=FIFO):
        run(tool.analyze_image("photo.png"))


def test_write_file_refuses_a_fifo_in_a_granted_folder_without_waiting(root: Path) -> None:
    os.mkfifo(root / "pipe.txt")
    write_file = builtin_tools(BuiltinToolContext(workspace_resolver=lambda: [str(root)]))["write_file"]
    with pytest.raises(FileRefused, match="it is a FIFO, not a regular file, and was not written"):
        run(write_file.invoke({"path": "pipe.txt", "content": "x"}))
    assert run(write_file.invoke({"path": "sub/ok.txt", "content": "fine"})) == "Wrote 4 characters to sub/ok.txt."
    assert (root / "sub/ok.txt").read_text() == "fine"


# ------------------------------------------------------------------- any mix of file kinds (property-based)

KINDS = ["regular", "fifo", "dev-zero", "dev-stdin", "link-out", "link-in", "dangling", "directory", "socket"]


def make(path: Path, kind: str, outside: Path) -> None:
    """A file of `kind` at `path` (its folder made); a regular one holds the word `needle`."""
    import socket

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        return
    if kind == "regular":
        path.write_text("- a needle\n")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(path))
    elif kind == "link-in":
        (path.parent / f"real-{path.name}").write_text("- a needle\n")
        os.symlink(path.parent / f"real-{path.name}", path)
    else:
        target = {"dev-zero": "/dev/zero", "dev-stdin": "/dev/stdin", "link-out": str(outside / "secret.md"),
                  "dangling": str(path.parent / "nowhere")}[kind]
        os.symlink(target, path)


@settings(max_examples=25, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["MEMORY.md", "daily/2026-11-30.md", "daily/2026-11-29.md", "lib/a.md",
                                           "lib/sub/b.md", "notes/u/a.md", "skills/s/SKILL.md"]),
                          st.sampled_from(KINDS)), min_size=1, max_size=7))
def test_any_mix_of_file_kinds_is_read_or_skipped_never_waited_on(files: list[tuple[str, str]]) -> None:
    """Whatever the memory, Library, notes and skills folders hold, every provider and tool answers, in
    bounded time, without an exception and without the outside file's text."""
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        outside = base / "outside"
        outside.mkdir()
        (outside / "secret.md").write_text(f"{SECRET} needle\n")
        root = base / "ws"
        store = MemoryStore(str(root / "memory"), "u", "a", today=lambda: DAY, boundary=str(root))
        for name, kind in files:
            make((Path(store.folder) / name) if not name.startswith(("lib", "notes", "skills")) else root / name,
                 kind, outside)
        tools = {f.name: f for f in memory_tools(store)}
        library = LibraryContextProvider(str(root / "lib"), boundary=str(root))
        skills = SkillsContextProvider(str(root / "skills"), ["s"], boundary=str(root))
        notes = PrivateNotesContextProvider(str(root / "notes"), "u", "a", boundary=str(root))

        async def everything() -> list[str]:
            memory = MemoryContextProvider(store, list(tools.values()), TemplateRenderer(root))
            return [
                (await memory.provide_ai_context(ctx())).instructions or "",
                await tools["memory_search"].invoke({"query": "needle"}),
                await library.library_search("needle"),
                await library.library_read("a.md"),
                (await skills.provide_ai_context(ctx())).instructions or "",
                await skills.load_skill("s"),
                (await notes.provide_ai_context(ctx())).instructions or "",
            ]

        texts = run(everything())
        assert all(SECRET not in text for text in texts)
