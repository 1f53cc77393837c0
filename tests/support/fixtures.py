"""Fixtures every test folder shares: the local OpenAI-compatible server (loaded by tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_openai import FakeOpenAI


@pytest.fixture(scope="session")
def _server() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def fake_openai(_server: FakeOpenAI) -> FakeOpenAI:
    """The running local server, its queue and record emptied for this test."""
    _server.reset()
    return _server
