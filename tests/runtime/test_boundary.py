"""The runtime side of the workspace boundary: templates, instruction files and workspace grants
resolve inside the workspace root or are refused with the reason; special files are refused, not read."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.grants import WorkspaceViolation, resolve_inside
from oscova_runtime.host import ConfiguredHost, HostConfigurationError
from oscova_runtime.host_config import HostConfig
from oscova_runtime.templates import TemplateError, TemplateRenderer

from tests.support.blocking import within

SECRET = "outside-secret-b41c"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """(root, outside): a workspace root and a sibling folder holding a secret template."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.j2").write_text(SECRET)
    root = tmp_path / "ws"
    (root / "templates").mkdir(parents=True)
    (root / "templates/ok.j2").write_text("inside {{ name }}")
    return root, outside


@pytest.mark.parametrize("include", ["ABSOLUTE", "../outside/secret.j2", "templates/link.j2"])
def test_includes_that_leave_the_root_are_refused_with_the_reason(layout: tuple[Path, Path], include: str) -> None:
    root, outside = layout
    os.symlink(outside / "secret.j2", root / "templates/link.j2")
    target = str(outside / "secret.j2") if include == "ABSOLUTE" else include
    renderer = TemplateRenderer(root)
    with pytest.raises(TemplateError) as refused:
        renderer.render_string(f'{{% include "{target}" %}}', {})
    assert "is outside the workspace root; only files inside it are read" in str(refused.value)
    assert SECRET not in str(refused.value)
    assert renderer.render_string('{% include "templates/ok.j2" %}', {"name": "x"}) == "inside x"


def test_host_templates_and_instruction_files_outside_the_root_are_refused(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    renderer = TemplateRenderer(root)
    for path in ("../outside/secret.j2", str(outside / "secret.j2")):
        with pytest.raises(TemplateError, match="outside the workspace root"):
            renderer.render_file(path, {})
        with pytest.raises(TemplateError, match="outside the workspace root"):
            renderer.read_source(path)
    definition = AgentDefinition(id="a", instructions_file="../../outside/secret.j2")
    host = ConfiguredHost(root, HostConfig(), [definition], definition_paths={"a": str(root / "agents/a.agent.yaml")})
    with pytest.raises(HostConfigurationError, match="outside the workspace root") as refused:
        host.instruction_template(definition)
    assert SECRET not in str(refused.value)


def test_a_fifo_template_is_refused_without_waiting(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    os.mkfifo(root / "templates/fifo.j2")
    os.symlink("/dev/zero", root / "templates/zero.j2")
    renderer = TemplateRenderer(root)
    with pytest.raises(TemplateError, match="it is a FIFO, not a regular file"):
        within(30, lambda: renderer.render_file("templates/fifo.j2", {}))
    with pytest.raises(TemplateError, match="outside the workspace root"):
        within(30, lambda: renderer.render_string('{% include "templates/zero.j2" %}', {}))


def test_reads_stop_at_the_limit_and_refuse_devices(tmp_path: Path) -> None:
    from oscova_runtime.paths import FileRefused, read_bytes

    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 5000)
    assert read_bytes(str(big), limit=5000) == b"x" * 5000
    with pytest.raises(FileRefused, match="larger than"):
        read_bytes(str(big), limit=4999)
    with pytest.raises(FileRefused, match="it is a character device, not a regular file"):
        read_bytes("/dev/zero")
    with pytest.raises(FileRefused, match="it is a directory"):
        read_bytes(str(tmp_path))


def test_byte_order_marks_decide_the_encoding() -> None:
    from oscova_runtime.paths import FileRefused, decode_text

    text = "id: é\n"
    for encoding, bom in (("utf-8", b"\xef\xbb\xbf"), ("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"),
                          ("utf-32-le", b"\xff\xfe\x00\x00"), ("utf-32-be", b"\x00\x00\xfe\xff")):
        assert decode_text(bom + text.encode(encoding)) == text
    assert decode_text(text.encode()) == text
    with pytest.raises(FileRefused, match="binary"):
        decode_text(text.encode("utf-16-le"))
    with pytest.raises(FileRefused, match="not valid UTF-8"):
        decode_text(b"\xff\xfd")


def test_is_inside_compares_real_paths(tmp_path: Path) -> None:
    from oscova_runtime.paths import is_inside

    (tmp_path / "root/sub").mkdir(parents=True)
    (tmp_path / "rootless").mkdir()
    os.symlink(tmp_path / "rootless", tmp_path / "root/escape")
    root = tmp_path / "root"
    assert is_inside(root / "sub", root) and is_inside(root, root)
    assert not is_inside(tmp_path / "rootless", root)  # a shared prefix is not a parent
    assert not is_inside(root / "escape/x", root)
    assert not is_inside(root / "sub/../../rootless", root)


def test_grants_outside_the_root_need_the_host_setting(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "data").mkdir(parents=True)
    (tmp_path / "shared").mkdir()
    definition = AgentDefinition(id="a", instructions="hi", workspaces=["/", "../shared", "data"])
    closed = ConfiguredHost(root, HostConfig(), [definition])
    assert closed.workspace_directories(definition) == [str(root / "data")]
    with pytest.raises(WorkspaceViolation):
        resolve_inside("/etc/passwd", closed.workspace_directories(definition))
    opened = ConfiguredHost(root, HostConfig.model_validate({"host": {"allow_outside_workspaces": True}}),
                            [definition])
    assert opened.workspace_directories(definition) == ["/", str(tmp_path / "shared"), str(root / "data")]


def test_the_read_file_tool_refuses_a_fifo_in_a_granted_folder(tmp_path: Path) -> None:
    from oscova_runtime.paths import FileRefused
    from oscova_runtime.tools import BuiltinToolContext, builtin_tools

    os.mkfifo(tmp_path / "pipe.txt")
    (tmp_path / "note.txt").write_text("hello")
    tools = builtin_tools(BuiltinToolContext(workspace_resolver=lambda: [str(tmp_path)]))
    read_file = tools["read_file"]

    assert within(30, lambda: asyncio.run(read_file.invoke({"path": "note.txt"}))) == "hello"
    with pytest.raises(FileRefused, match="FIFO"):
        within(30, lambda: asyncio.run(read_file.invoke({"path": "pipe.txt"})))


def test_the_analyze_image_tool_refuses_a_fifo_in_a_granted_folder(tmp_path: Path) -> None:
    from oscova_runtime.paths import FileRefused
    from oscova_runtime.providers.vision import AnalyzeImageTool

    os.mkfifo(tmp_path / "camera.png")
    tool = AnalyzeImageTool(None, lambda: [str(tmp_path)]).as_function()  # type: ignore[arg-type]  # not reached
    with pytest.raises(FileRefused, match="FIFO"):
        within(30, lambda: asyncio.run(tool.invoke({"path": "camera.png"})))
