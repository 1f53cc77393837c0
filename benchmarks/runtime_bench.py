"""Runtime overhead benchmark (docs/performance.md): provider pipeline + orchestrator per run, model time excluded,
for the full default order; and a cache hit. Targets: under 2 ms per run, under 50 µs per cache hit.

Run: .venv/bin/python benchmarks/runtime_bench.py [--runs N]
The model is an in-process chat client that answers at once, so the figures are the runtime's own cost.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from oscova_runtime.definition import AgentDefinition
from oscova_runtime.host import ConfiguredHost
from oscova_runtime.host_config import HostConfig
from oscova_runtime.messages import ChatMessage, ChatOptions, ChatResponse, ChatResponseUpdate, TextContent


class InstantChatClient:
    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        return ChatResponse([ChatMessage("assistant", [TextContent("ok")])])

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate]:
        yield ChatResponseUpdate("assistant", [TextContent("ok")])


def make_workspace(root: Path) -> None:
    (root / "data").mkdir()
    (root / "skills" / "triage").mkdir(parents=True)
    (root / "skills" / "triage" / "SKILL.md").write_text("---\ndescription: Sort bugs\n---\nStep 1.")
    (root / "library").mkdir()
    (root / "library" / "guide.md").write_text("Deploy with make deploy.")
    (root / ".oscova" / "notes" / "alice").mkdir(parents=True)
    (root / ".oscova" / "notes" / "alice" / "helper.md").write_text("Prefers short answers.")
    memory = root / ".oscova" / "memory" / "alice" / "helper"
    (memory / "daily").mkdir(parents=True)
    (memory / "MEMORY.md").write_text("- likes tea\n" * 50)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def full_order_host(model: str) -> HostConfig:
    """The host configuration whose default order activates every provider (a user, todo, the Library)."""
    return HostConfig.model_validate({
        "host": {"user_id": "alice", "todo": True, "library": True},
        "user": {"name": "Alice", "timezone": "UTC"}, "variables": {"team": "Platform"},
        "models": {"default": {"model": model, "base_url": "http://127.0.0.1:9/v1"}},
    })


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_workspace(root)
        config = full_order_host("m")
        helper = AgentDefinition(
            id="helper", name="Helper", instructions="You are {{ agent_name }} for {{ user_name }} of {{ team }}.",
            tools=["current_datetime", "read_file", "list_directory"], agent_tools=["kid"], skills=["triage"],
            memory=True, todo=True, vision=True, workspaces=["data"])
        kid = AgentDefinition(id="kid", exposed_as_tool=True, instructions="kid")
        host = ConfiguredHost(root, config, [helper, kid], chat_clients={"default": InstantChatClient()})

        start = time.perf_counter()
        agent = await host.get_agent("helper")
        cold_ms = (time.perf_counter() - start) * 1000
        request = host.build_request("helper")
        orchestrator = host.orchestrator
        print(f"providers in the default order: {len(agent.context_providers)} "
              f"({', '.join(type(p).__name__ for p in agent.context_providers)})")

        for _ in range(50):  # warm-up
            await orchestrator.get_or_create_agent(request)
            await agent.run("hello")

        hits = []
        for _ in range(runs * 10):
            t = time.perf_counter_ns()
            await orchestrator.get_or_create_agent(request)
            hits.append((time.perf_counter_ns() - t) / 1000)

        per_run = []
        for _ in range(runs):
            t = time.perf_counter_ns()
            cached = await orchestrator.get_or_create_agent(request)
            await cached.run("hello")
            per_run.append((time.perf_counter_ns() - t) / 1e6)

        assemble = []
        for _ in range(runs):
            t = time.perf_counter_ns()
            await agent.assemble("hello")
            assemble.append((time.perf_counter_ns() - t) / 1e6)

        print(f"cold build (requested + 1 dependency): {cold_ms:.2f} ms")
        print(f"cache hit: median {statistics.median(hits):.2f} µs, p95 {percentile(hits, 0.95):.2f} µs "
              f"(target < 50 µs)")
        print(f"per run, orchestrator + full pipeline + post-run, model excluded: median "
              f"{statistics.median(per_run):.3f} ms, p95 {percentile(per_run, 0.95):.3f} ms (target < 2 ms)")
        print(f"pre-run assembly only: median {statistics.median(assemble):.3f} ms, "
              f"p95 {percentile(assemble, 0.95):.3f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=500)
    asyncio.run(main(parser.parse_args().runs))
