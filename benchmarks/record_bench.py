"""Recording overhead benchmark: what recording a run into its transcript costs per run.

The same run (the `helper` agent: a `read_file` tool call, then a streamed answer; two model requests)
goes N times through one `RunService` against the local fake endpoint, alternating between the default
recorder and one that records nothing (no model tap, no tool middleware: the run as before recording).
Reported per run: the median wall time and the mean CPU time of the event loop's thread in each mode
(the fake endpoint runs in another thread and is not counted), their difference, and the CPU time the
transcript writer's thread spends encoding the recording lines of one run (off the event loop).

End to end the difference is within the noise of a shared machine, so the recorder's own work is also
measured alone: a model call of the same shape (the request in wire form built once more, a 500-character
answer streamed in 13 updates, the line written to a sink) through `Recorder.stream`, against reading
the same updates directly; two such calls and one tool result make a run.

Run: .venv/bin/python benchmarks/record_bench.py [--runs 200]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oscova_lsp.runs.recorder import Recorder  # noqa: E402
from oscova_lsp.runs.service import RunService  # noqa: E402
from oscova_lsp.runs.transcript import read_lines  # noqa: E402
from oscova_runtime.chat_client import OpenAIChatClient  # noqa: E402
from oscova_runtime.function_invocation import FunctionInvocationContext  # noqa: E402
from oscova_runtime.messages import (  # noqa: E402
    ChatMessage,
    ChatOptions,
    ChatResponseUpdate,
    FunctionCallContent,
    TextContent,
    UsageDetails,
)
from oscova_runtime.tools import AIFunction  # noqa: E402

from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall  # noqa: E402
from tests.support.run_workspace import host_toml, write_workspace  # noqa: E402


class NotRecording(Recorder):
    """Records nothing: the run without the model and tool tap."""

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        yield


def reply(body: dict[str, Any]) -> Reply:
    if body["messages"][-1]["role"] == "tool":
        return Reply(text="The launch is on Tuesday. " * 20, chunk_size=40)
    return Reply(tool_calls=[ToolCall("read_file", {"path": "data/notes.txt"})])


async def measure(root: Path, runs: int) -> tuple[dict[str, list[float]], dict[str, list[float]], str]:
    wall: dict[str, list[float]] = {"recording": [], "not recording": []}
    cpu: dict[str, list[float]] = {"recording": [], "not recording": []}
    service = RunService(root)
    transcript = ""
    try:
        for number in range(runs * 2 + 10):
            mode = "recording" if number % 2 == 0 else "not recording"
            recorder = Recorder() if mode == "recording" else NotRecording()
            start, start_cpu = time.perf_counter(), time.thread_time()
            result = await service.run("helper", "When is the launch?", recorder=recorder)
            elapsed, used = time.perf_counter() - start, time.thread_time() - start_cpu
            assert result["status"] == "completed", result
            if number >= 10:  # the first runs warm the caches up
                wall[mode].append(elapsed)
                cpu[mode].append(used)
            if mode == "recording":
                transcript = result["transcript"]
    finally:
        await service.aclose()
    return wall, cpu, transcript


async def tap_cost(rounds: int) -> tuple[float, float]:
    """Seconds per model call read through `Recorder.stream` (request rebuilt, line written), and read
    directly; plus seconds per recorded tool call."""
    client = OpenAIChatClient("fake-model", base_url="http://127.0.0.1:9")
    tool = AIFunction("read_file", "Reads a UTF-8 text file.", {"type": "object", "properties": {
        "path": {"type": "string"}}, "required": ["path"]}, lambda path: "")
    options = ChatOptions(instructions="## Environment\n- Operating system: Linux\n" * 6 + "You help Alice.",
                          tools=[tool])
    messages = [ChatMessage.of("user", "When is the launch?"),
                ChatMessage("assistant", [FunctionCallContent("c1", "read_file", {"path": "data/notes.txt"})]),
                ChatMessage("tool", [])]
    updates = [ChatResponseUpdate("assistant", [TextContent("The launch is on Tuesday. " * 2)]) for _ in range(12)]
    updates.append(ChatResponseUpdate("assistant", [], UsageDetails(11, 7, 18), "stop"))

    async def real() -> Any:
        for update in updates:
            yield update

    lines: list[dict[str, Any]] = []
    recorder = Recorder()
    recorder.attach(lines.append, lambda value: value)
    start = time.perf_counter()
    for _ in range(rounds):
        async for _update in recorder.stream(client._arguments(messages, options, True), real):
            pass
        lines.clear()
    tapped = (time.perf_counter() - start) / rounds
    start = time.perf_counter()
    for _ in range(rounds):
        async for _update in real():
            pass
    direct = (time.perf_counter() - start) / rounds
    call = FunctionCallContent("c1", "read_file", {"path": "data/notes.txt"})
    context = FunctionInvocationContext(tool, {"path": "data/notes.txt"}, call, 0, {})

    async def run_tool(ctx: FunctionInvocationContext) -> str:
        return "The launch is on Tuesday.\n"

    start = time.perf_counter()
    for _ in range(rounds):
        await recorder.tool(context, run_tool)
        lines.clear()
    return tapped - direct, (time.perf_counter() - start) / rounds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200, help="runs in each mode")
    options = parser.parse_args()
    server = FakeOpenAI().start()
    server.responder = reply
    try:
        with tempfile.TemporaryDirectory() as folder:
            root = write_workspace(Path(folder) / "ws", host_toml(server.base_url, None, timeout=60))
            wall, cpu, transcript = asyncio.run(measure(root, options.runs))
            lines = [line for line in read_lines(transcript) if "record" in line]
            start = time.thread_time()
            for _ in range(100):
                for line in lines:
                    json.dumps(line, ensure_ascii=False, default=str)
            encode = (time.thread_time() - start) / 100
            size = sum(len(json.dumps(line, ensure_ascii=False)) + 1 for line in lines)
    finally:
        server.stop()
    model_call, tool_call = asyncio.run(tap_cost(20_000))
    for mode in wall:
        print(f"{mode:>13}: median wall {statistics.median(wall[mode]) * 1e3:6.2f} ms, "
              f"mean event-loop CPU {statistics.fmean(cpu[mode]) * 1e3:6.2f} ms per run ({len(wall[mode])} runs)")
    added_cpu = statistics.fmean(cpu["recording"]) - statistics.fmean(cpu["not recording"])
    added_wall = statistics.median(wall["recording"]) - statistics.median(wall["not recording"])
    print(f"recording adds {added_cpu * 1e3:.2f} ms of event-loop CPU and {added_wall * 1e3:.2f} ms of median wall "
          f"time per run; the writer thread encodes its {len(lines)} recording lines ({size / 1024:.1f} KiB) "
          f"in {encode * 1e3:.2f} ms")
    print(f"the recorder alone: {model_call * 1e3:.3f} ms per model call, {tool_call * 1e3:.3f} ms per tool call: "
          f"{(2 * model_call + tool_call) * 1e3:.3f} ms for this run")


if __name__ == "__main__":
    main()
