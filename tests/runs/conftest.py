"""Fixtures for the run service tests: the local OpenAI-compatible server and small temp workspaces."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from oscova_lsp.runs import RunService

from tests.support import phoenix as collector
from tests.support import run_workspace
from tests.support.fake_openai import FakeOpenAI

CANARY_KEY = "sk-canary-7f3a9c2e51d84b60"
KEY_VARIABLE = "OSCOVA_RUNS_TEST_KEY"


def host_toml(base_url: str, *, key_variable: str | None = KEY_VARIABLE, timeout: float = 10, extra: str = "") -> str:
    return run_workspace.host_toml(base_url, key_variable, timeout=timeout, extra=extra)


def make_workspace(root: Path, base_url: str, *, host: str | None = None, agents: dict[str, str] | None = None) -> Path:
    return run_workspace.write_workspace(root, host if host is not None else host_toml(base_url), agents)


@pytest.fixture
def canary_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_VARIABLE, CANARY_KEY)
    return CANARY_KEY


@pytest.fixture
def workspace(tmp_path: Path, fake_openai: FakeOpenAI, canary_key: str) -> Path:
    return make_workspace(tmp_path / "ws", fake_openai.base_url)


@pytest.fixture
async def service(workspace: Path) -> AsyncIterator[RunService]:
    svc = RunService(workspace)
    yield svc
    await svc.aclose()


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[collector.Phoenix]:
    """Arize Phoenix, a real OTLP collector; started once (it takes 20 s of CPU) and shared by the session."""
    yield from collector.serve(tmp_path_factory.mktemp("phoenix"))


class Recorder:
    """Collects run events (the `on_event` callback)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e["kind"] for e in self.events]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == kind]


async def run_recorded(workspace: Path, agent: str, text: str) -> tuple[dict[str, Any], Recorder]:
    """One run of `agent` by a run service of its own, closed after: its result and the events it sent."""
    from oscova_lsp.runs import RunService

    events = Recorder()
    service = RunService(workspace)
    try:
        result = await service.run(agent, text, on_event=events)
    finally:
        await service.aclose()
    return result, events
