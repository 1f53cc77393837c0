"""The editing features keep answering while runs stream and templates render.

The server is a subprocess driven by pytest-lsp; its model endpoint is the local fake server started in a
process of its own (`python -m tests.support.fake_openai`). How fast they answer (hover and completion p95
under 50 ms while 20 runs stream) is measured by `benchmarks/responsiveness_bench.py`: on a shared machine,
and beside other tests, a test's timing is luck. Here: every answer is right, comes while every run streams
(none ended), and the runs are cancelled afterwards; a request that never comes back fails after ANSWER_SECONDS.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from tests.support.run_workspace import AGENTS, host_toml, write_workspace

from .conftest import RUN_CLIENT, SessionOptions
from .test_runs import plain

pytestmark = pytest.mark.asyncio(loop_scope="module")

RUNS = 20
SAMPLES = 100
"""Hover and completion requests each, sent while every run streams."""
ANSWER_SECONDS = 30
"""Generous: only a request that never comes back fails."""
DELTAS_PER_ANSWER = 400_000
"""Long enough that no run ends during the measurement; the runs are cancelled afterwards."""
ENDLESS_LOOP = "{% for i in range(100000) %}{% for j in range(1000) %}{{ j }}{% endfor %}{% endfor %}"
"""10^8 iterations, each writing a number: the preview blocked the server for many seconds before
rendering had a budget and a thread of its own."""
HELPER = "agents/helper.agent.yaml"
HOVER_AT = lsp.Position(line=0, character=1)  # the `id` key
COMPLETE_AT = lsp.Position(line=3, character=14)  # inside `{{ user_name }}`


@pytest.fixture(scope="module")
def fast_endpoint() -> Iterator[str]:
    """A fake endpoint in its own process that streams every answer as fast as it can."""
    process = subprocess.Popen([sys.executable, "-m", "tests.support.fake_openai", "--deltas",
                                str(DELTAS_PER_ANSWER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               cwd=Path(__file__).parents[2])
    assert process.stdout is not None and process.stdin is not None
    base_url = process.stdout.readline().strip()
    assert base_url.startswith("http://127.0.0.1:"), base_url
    yield base_url
    process.stdin.close()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Observed:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []


@pytest.fixture(scope="module")
def lsp_options() -> SessionOptions:
    return RUN_CLIENT


@pytest.fixture(scope="module")
def lsp_workspace(fast_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_workspace(tmp_path_factory.mktemp("responsive") / "ws", host_toml(fast_endpoint, None, timeout=180), {  # a loaded machine: slow, not failed
        **AGENTS,
        "endless": f"id: endless\ninstructions: \"{ENDLESS_LOOP}done\"\n",
    })


@pytest.fixture(scope="module")
def client(lsp_session: LanguageClient, lsp_workspace: Path) -> LanguageClient:
    observed = Observed()

    @lsp_session.feature("oscova/runEvent")
    def on_run_event(params: Any) -> None:
        event = plain(params)
        event["received"] = time.monotonic()
        observed.events.append(event)

    lsp_session.editor.open(HELPER)  # type: ignore[attr-defined]
    lsp_session.observed = observed  # type: ignore[attr-defined]
    lsp_session.root = lsp_workspace  # type: ignore[attr-defined]
    return lsp_session


def helper_uri(client: LanguageClient) -> str:
    return from_fs_path(str(client.root / HELPER))  # type: ignore[attr-defined]


async def timed_hover(client: LanguageClient) -> float:
    start = time.perf_counter()
    found = await asyncio.wait_for(client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=helper_uri(client)), position=HOVER_AT)), ANSWER_SECONDS)
    elapsed = time.perf_counter() - start
    assert found is not None and "id" in str(found.contents)
    return elapsed


async def timed_completion(client: LanguageClient) -> float:
    start = time.perf_counter()
    found = await asyncio.wait_for(client.text_document_completion_async(lsp.CompletionParams(
        text_document=lsp.TextDocumentIdentifier(uri=helper_uri(client)), position=COMPLETE_AT)), ANSWER_SECONDS)
    elapsed = time.perf_counter() - start
    assert found is not None and "user_name" in {item.label for item in found.items}
    return elapsed


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, int(len(ordered) * 0.95) - 1)]


async def run_command(client: LanguageClient, argument: dict[str, Any]) -> Any:
    return await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="oscova.runAgent", arguments=[argument]))


async def test_hover_and_completion_answer_while_twenty_runs_stream(client: LanguageClient):
    observed: Observed = client.observed  # type: ignore[attr-defined]
    for _ in range(10):  # warm: first requests import and index
        await timed_hover(client)
        await timed_completion(client)
    runs = [asyncio.ensure_future(run_command(client, {"agentId": "echo", "input": f"run {n}",
                                                       "uri": helper_uri(client)})) for n in range(RUNS)]
    try:
        deadline = time.monotonic() + 180  # twenty runs start in a run host: slow on a loaded machine, not failed
        while len({e["runId"] for e in observed.events if e["kind"] == "delta"}) < RUNS:
            failed = [e.get("error") for e in observed.events if e["kind"] == "failed"]
            assert not failed, failed[:1]
            assert time.monotonic() < deadline, "the runs never all streamed"
            await asyncio.sleep(0.05)
        window_start = time.monotonic()
        hovers, completions = [], []
        for _ in range(SAMPLES):
            hovers.append(await timed_hover(client))
            completions.append(await timed_completion(client))
            await asyncio.sleep(0.02)
        window_end = time.monotonic()
        # Honest load: every run was still streaming through the whole window, none had ended.
        late = {e["runId"] for e in observed.events if e["kind"] == "delta" and e["received"] > window_end - 1.0}
        ended = [e for e in observed.events if e["kind"] in ("completed", "failed", "cancelled")]
        assert len(late) == RUNS and not ended, (len(late), ended[:1])
        streamed = sum(len(e["text"]) for e in observed.events
                       if e["kind"] == "delta" and window_start <= e["received"] <= window_end)
        print(f"\n{RUNS} runs streamed {streamed / (window_end - window_start) / 1e6:.2f} MB/s of text; "
              f"hover p95 {p95(hovers) * 1000:.1f} ms, completion p95 {p95(completions) * 1000:.1f} ms")
    finally:
        for run_id in {e["runId"] for e in observed.events if e["kind"] == "started"}:
            await client.workspace_execute_command_async(lsp.ExecuteCommandParams(
                command="oscova.cancelRun", arguments=[{"runId": run_id}]))
        results = await asyncio.wait_for(asyncio.gather(*runs, return_exceptions=True), 60)
    assert [r["status"] for r in results] == ["cancelled"] * RUNS


async def test_a_template_that_never_ends_is_stopped_and_hover_answers_meanwhile(client: LanguageClient):
    await client.workspace_execute_command_async(lsp.ExecuteCommandParams(  # warm: the run service loads
        command="oscova.previewPrompt", arguments=[{"agentId": "echo", "uri": helper_uri(client)}]))
    preview = asyncio.ensure_future(client.workspace_execute_command_async(lsp.ExecuteCommandParams(
        command="oscova.previewPrompt", arguments=[{"agentId": "endless", "uri": helper_uri(client)}])))
    await asyncio.sleep(0.05)
    waits = []
    while not preview.done():
        waits.append(await timed_hover(client))
    print(f"\n{len(waits)} hovers while the preview rendered, the slowest {max(waits) * 1000:.0f} ms")
    # The render ran in a worker thread, not on the event loop: hovers kept being answered while it rendered
    # (on the loop, the first hover would have waited for the render to end, and it would be the only one).
    assert len(waits) >= 3, waits
    with pytest.raises(JsonRpcException) as raised:
        await preview
    assert "The instructions took too long to render (more than 1,000,000 loop steps and calls" in str(raised.value)
