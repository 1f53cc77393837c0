"""What counting tokens adds to a preview: the provider pipeline of the full default order assembled
for a preview without counting, then with the model's tokenizer (o200k_base), warm (counts cached per text, as
in a server answering again) and cold (a fresh tokenizer: every text encoded). Target: under 5 ms added.

Run: .venv/bin/python benchmarks/tokens_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from oscova_lsp.runs.preview import assemble_preview  # noqa: E402
from oscova_runtime.catalogue import plan_providers  # noqa: E402
from oscova_runtime.definition import AgentDefinition  # noqa: E402
from oscova_runtime.host import ConfiguredHost  # noqa: E402
from oscova_runtime.session import AgentSession  # noqa: E402
from oscova_runtime.tokens import Tokenizer, openai_encoding  # noqa: E402
from runtime_bench import InstantChatClient, full_order_host, make_workspace, percentile  # noqa: E402


async def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_workspace(root)
        config = full_order_host("gpt-4o-mini")
        helper = AgentDefinition(
            id="helper", name="Helper", instructions="You are {{ agent_name }} for {{ user_name }} of {{ team }}.\n"
            "Today is {{ current_date }}.\n" + "Answer with care and cite the runbook. " * 40,
            tools=["current_datetime", "read_file", "list_directory"], agent_tools=["kid"], skills=["triage"],
            memory=True, todo=True, vision=True, workspaces=["data"])
        kid = AgentDefinition(id="kid", exposed_as_tool=True, instructions="kid")
        host = ConfiguredHost(root, config, [helper, kid], chat_clients={"default": InstantChatClient()})
        agent = await host.get_agent("helper")
        plan = plan_providers(helper, host.config, requested=True).providers
        openai_encoding.cache_clear()  # the host loaded it for the memory provider: time a load of its own
        start = time.perf_counter()
        warm = openai_encoding("o200k_base")
        load_ms = (time.perf_counter() - start) * 1000

        async def timed(tokenizer: Tokenizer | None) -> tuple[float, dict]:
            t = time.perf_counter_ns()
            result = await assemble_preview(agent, plan, "hello", AgentSession(), tokenizer)
            return (time.perf_counter_ns() - t) / 1e6, result

        for _ in range(30):
            await timed(None)
            await timed(warm)
        plain = [(await timed(None))[0] for _ in range(runs)]
        counted = [(await timed(warm))[0] for _ in range(runs)]
        cold = []
        for _ in range(max(20, runs // 10)):
            fresh = Tokenizer("o200k_base", warm._encode, warm._decode)  # the same encoding, no cached counts
            cold.append((await timed(fresh))[0])
        _, result = await timed(warm)
        figures = result["tokens"]
        print(f"providers: {len(plan)}; request: {figures['total']} tokens, {figures['cacheable']['tokens']} cacheable")
        print(f"loading o200k_base once: {load_ms:.0f} ms")
        print(f"preview without counting: median {statistics.median(plain):.3f} ms, p95 {percentile(plain, 0.95):.3f} ms")
        print(f"preview with counting (warm): median {statistics.median(counted):.3f} ms, "
              f"p95 {percentile(counted, 0.95):.3f} ms")
        print(f"preview with counting (cold): median {statistics.median(cold):.3f} ms, p95 {percentile(cold, 0.95):.3f} ms")
        print(f"added by counting: warm {statistics.median(counted) - statistics.median(plain):.3f} ms, "
              f"cold {statistics.median(cold) - statistics.median(plain):.3f} ms (median; target < 5 ms)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=300)
    asyncio.run(main(parser.parse_args().runs))
