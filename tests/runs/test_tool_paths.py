"""A relative tool path means one thing: relative to the workspace root, for `read_file`,
`write_file` and `list_directory` alike, whatever the agent's workspace directories are; the tools say so
in the descriptions the model is sent, and `write_file` reports where the bytes went."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oscova_lsp.runs import RunService

from tests.support.fake_openai import Reply, ToolCall

from .conftest import host_toml, make_workspace

WRITER = """\
    id: writer
    instructions: Write the status note.
    tools: [read_file, write_file, list_directory]
    workspaces: [data/drafts]
    """


async def approve(_request: dict[str, Any]) -> bool:
    return True


async def test_write_then_read_of_a_root_relative_path_is_one_file_and_the_reply_names_it(tmp_path: Path,
                                                                                       fake_openai) -> None:
    root = make_workspace(tmp_path / "ws", fake_openai.base_url,
                          host=host_toml(fake_openai.base_url, key_variable=None), agents={"writer": WRITER})
    (root / "data" / "drafts").mkdir(parents=True)
    fake_openai.enqueue(
        Reply(tool_calls=[ToolCall("write_file", {"path": "data/drafts/status.md", "content": "All good"}, "w1")]),
        Reply(tool_calls=[ToolCall("read_file", {"path": "data/drafts/status.md"}, "r1"),
                          ToolCall("list_directory", {"path": "data/drafts"}, "l1")]),
        Reply(text="Done."))
    service = RunService(root)
    try:
        result = await service.run("writer", "write it", approve=approve)
    finally:
        await service.aclose()
    assert result["status"] == "completed", result
    assert (root / "data" / "drafts" / "status.md").read_text() == "All good"
    assert not (root / "data" / "drafts" / "data").exists()
    tool_results = [m["content"] for r in fake_openai.requests for m in r.messages if m.get("role") == "tool"]
    assert "Wrote 8 characters to data/drafts/status.md." in tool_results
    assert "All good" in tool_results and "status.md" in tool_results


async def test_the_model_is_told_what_a_relative_path_is_relative_to(tmp_path: Path, fake_openai) -> None:
    root = make_workspace(tmp_path / "ws", fake_openai.base_url,
                          host=host_toml(fake_openai.base_url, key_variable=None), agents={"writer": WRITER})
    fake_openai.enqueue(Reply(text="Nothing to do."))
    service = RunService(root)
    try:
        await service.run("writer", "hello", approve=approve)
    finally:
        await service.aclose()
    tools = {t["function"]["name"]: t["function"]["description"] for t in fake_openai.requests[0].body["tools"]}
    for name in ("read_file", "write_file", "list_directory"):
        assert f"A relative path is relative to the workspace root ({root.resolve()})" in tools[name], tools[name]
