"""Tracing overhead benchmark: what observing a run's calls and making its spans cost, export excluded.

A run of `coordinator` makes 7 calls (two model calls, the agent `repeater` used as a tool with its own
model call, and `read_file`), against an in-process model that answers at once, so the figures are the
runtime's and the tracer's own cost. Each run is timed in three modes, interleaved, as CPU time of the
event loop's thread (where every hook and span runs; steady on a shared, loaded machine) and as wall time:
- off: no observer (tracing not configured; the hooks read one context variable each);
- events: the run service's call log (usage and duration per call, as run events carry them);
- traced: the call log and OpenTelemetry spans (GenAI attributes, redaction) into an in-memory exporter,
  so exporting costs nothing and what remains is the tracing itself. Target: < 2 ms per run.

Run: .venv/bin/python benchmarks/trace_bench.py [--runs N] [--content]   (needs `oscova-lsp[otel]`)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from oscova_lsp.runs.events import CallLog, Redactor
from oscova_lsp.runs.tracing import SpanObserver
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.host import ConfiguredHost
from oscova_runtime.host_config import HostConfig
from oscova_runtime.messages import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    TextContent,
    UsageDetails,
)
from oscova_runtime.telemetry import observe_calls


class ScriptedChatClient:
    """Answers at once: the coordinator first asks for both tools, then answers; the repeater answers."""

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        return ChatResponse([ChatMessage("assistant", [TextContent("launch on Tuesday")])], UsageDetails(5, 3, 8),
                            "stop", "m-2025")

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate]:
        if not any(m.role == "tool" for m in messages):
            yield ChatResponseUpdate("assistant", [FunctionCallContent("c1", "repeater", {"query": "launch?"}),
                                                   FunctionCallContent("c2", "read_file", {"path": "data/notes.txt"})],
                                     UsageDetails(23, 9, 32), "tool_calls", "m-2025")
            return
        yield ChatResponseUpdate("assistant", [TextContent("It is on Tuesday.")])
        yield ChatResponseUpdate("assistant", [], UsageDetails(41, 6, 47), "stop", "m-2025")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main(runs: int, content: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "data").mkdir()
        (root / "data" / "notes.txt").write_text("The launch is on Tuesday.\n")
        config = HostConfig.model_validate({"models": {"default": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}}})
        coordinator = AgentDefinition(id="coordinator", name="Coordinator", instructions="Ask, read, answer.",
                                      tools=["read_file"], workspaces=["data"], agent_tools=["repeater"])
        repeater = AgentDefinition(id="repeater", exposed_as_tool=True, instructions="Repeat the query.")
        host = ConfiguredHost(root, config, [coordinator, repeater], chat_clients={"default": ScriptedChatClient()})
        agent = await host.get_agent("coordinator")

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("bench")
        redact = Redactor(["sk-bench-secret-value"])

        async def run(observers: tuple[Any, ...]) -> tuple[float, float]:
            """(CPU ms of this thread, wall ms) of one run."""
            cpu, wall = time.thread_time(), time.perf_counter()
            with observe_calls(*observers):
                async for _ in agent.run_streaming("When is the launch?"):
                    pass
            return (time.thread_time() - cpu) * 1000, (time.perf_counter() - wall) * 1000

        def events_only() -> tuple[Any, ...]:
            return (CallLog(lambda kind, **fields: None),)

        def traced() -> tuple[Any, ...]:
            return (CallLog(lambda kind, **fields: None),
                    SpanObserver(tracer, redact, capture_content=content, conversation_id="bench"))

        for _ in range(50):  # warm-up
            await run(())
            await run(traced())
        exporter.clear()
        off: list[tuple[float, float]] = []
        logged: list[tuple[float, float]] = []
        spans: list[tuple[float, float]] = []
        for _ in range(runs):  # interleaved, so load on the machine hits every mode alike
            off.append(await run(()))
            logged.append(await run(events_only()))
            spans.append(await run(traced()))
        per_run = len(exporter.get_finished_spans()) // runs
        assert per_run == 5 + 2, f"expected 7 spans per run, got {per_run}"

    def row(name: str, timings: list[tuple[float, float]]) -> str:
        cpu, wall = [t[0] for t in timings], [t[1] for t in timings]
        return (f"{name:<30} CPU median {statistics.median(cpu):6.3f} ms  p95 {percentile(cpu, 0.95):6.3f} ms"
                f"   wall median {statistics.median(wall):6.3f} ms")

    print(f"{runs} runs of coordinator (7 calls: 3 model calls, 2 tool calls, 2 agent invocations) per mode"
          f"{'; spans with message contents' if content else ''}")
    print(row("off (not configured)", off))
    print(row("events (usage, duration)", logged))
    print(row("traced (events + 7 spans)", spans))
    for name, timings in (("events overhead per run", logged), ("tracing overhead per run", spans)):
        cpu = statistics.median(t[0] for t in timings) - statistics.median(t[0] for t in off)
        wall = statistics.median(t[1] for t in timings) - statistics.median(t[1] for t in off)
        print(f"{name:<30} CPU {cpu:6.3f} ms   wall {wall:6.3f} ms   (medians' difference; target < 2 ms)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--content", action="store_true", help="capture message contents too")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.content))
