"""A tool that keeps failing: past the consecutive-error limit the run ends with the tool's own
exception, and the result says which tool failed how often, in words."""

from __future__ import annotations

import textwrap
from pathlib import Path

from oscova_lsp.runs import RunService

from tests.support.fake_openai import FakeOpenAI, Reply, ToolCall

from .conftest import host_toml, make_workspace


async def test_a_tool_failing_past_the_limit_ends_the_run_with_its_own_error(tmp_path: Path, fake_openai: FakeOpenAI,
                                                                          canary_key: str):
    extra = '\n[tools.broken]\ncallable = "brokentools:broken"\n'
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, host=host_toml(fake_openai.base_url, extra=extra),
                          agents={"fixer": "id: fixer\ninstructions: Fix things.\ntools: [broken]\n"})
    (root / "brokentools.py").write_text(textwrap.dedent('''
        def broken(part: str) -> str:
            """Repairs a part."""
            raise OSError("disk on fire")
    '''))
    fake_openai.responder = lambda body: Reply(tool_calls=[ToolCall("broken", {"part": "a"})])
    service = RunService(root)
    try:
        result = await service.run("fixer", "repair it")
    finally:
        await service.aclose()
    assert result["status"] == "failed" and len(fake_openai.requests) == 4
    assert result["error"] == ("The tool `broken` failed in 4 tool rounds in a row (the limit is 3), so the run "
                               "stopped: OSError: disk on fire")
