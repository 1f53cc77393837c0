"""Property-based (derandomized): whatever TOML or file kinds a workspace holds, `oscova-lsp check` exits 0, 1 or 2
within the time limit and prints no traceback."""

from __future__ import annotations

import codecs
import os
import shutil
import socket
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .safety_support import HOST, assert_no_traceback, check

SUBPROCESS = settings(max_examples=20, derandomize=True, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow])

nesting = st.builds(lambda depth, opener: "x = " + ("[" * depth + "]" * depth if opener == "[" else
                                                    "{a = " * depth + "1" + "}" * depth),
                    st.integers(0, 3000), st.sampled_from("[{"))
huge_table = st.builds(lambda n, width: "\n".join(f"k{i} = \"{'v' * width}\"" for i in range(n)),
                       st.integers(0, 30_000), st.integers(0, 20))
dotted = st.builds(lambda depth: "a." * depth + "b = 1", st.integers(0, 3000))
toml_text = st.one_of(nesting, huge_table, dotted).map(lambda body: (HOST + "\n[variables]\n" + body + "\n").encode())
invalid_utf8 = st.builds(lambda head, junk: HOST.encode() + head + junk, st.binary(max_size=64),
                         st.binary(min_size=1, max_size=64).map(lambda b: b"\xff" + b))


@SUBPROCESS
@given(st.one_of(toml_text, invalid_utf8))
def test_any_host_configuration_is_checked_without_a_traceback(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "oscova.toml").write_bytes(data)
        (root / "a.agent.yaml").write_text("id: a\ninstructions: hi\n")
        assert_no_traceback(check(".", cwd=root))


BOMS = [b"", codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE]
ENCODINGS = {b"": "utf-8", codecs.BOM_UTF8: "utf-8", codecs.BOM_UTF16_LE: "utf-16-le",
             codecs.BOM_UTF16_BE: "utf-16-be", codecs.BOM_UTF32_LE: "utf-32-le", codecs.BOM_UTF32_BE: "utf-32-be"}
KINDS = ["regular", "empty", "symlink-in", "symlink-out", "fifo", "dev-zero", "dev-stdin", "dev-null",
         "dangling", "directory", "socket"]
NAMES = ["agents/x.agent.yaml", "templates/x.j2", "oscova.toml", "pyproject.toml", "x.agent.yml"]


def place(root: Path, outside: Path, name: str, kind: str, bom: bytes, index: int) -> None:
    target = root / name.replace("x.", f"x{index}.") if "x." in name else root / name
    if target.exists() or target.is_symlink():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    body = (f"id: a{index}\ninstructions: hi {{{{ agent_name }}}}\n") if "agent" in name else (
        HOST if name.endswith(".toml") else "{{ agent_name }}\n")
    if name == "pyproject.toml":
        body = "[tool.oscova]\n" + body
    if kind == "regular":
        target.write_bytes(bom + body.encode(ENCODINGS[bom]))
    elif kind == "empty":
        target.write_bytes(bom)
    elif kind == "symlink-in":
        (root / f"real{index}.txt").write_bytes(bom + body.encode(ENCODINGS[bom]))
        os.symlink(root / f"real{index}.txt", target)
    elif kind == "symlink-out":
        os.symlink(outside / "secret.txt", target)
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "dangling":
        os.symlink(root / "nowhere", target)
    elif kind == "directory":
        target.mkdir()
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(str(target))
    else:
        os.symlink({"dev-zero": "/dev/zero", "dev-stdin": "/dev/stdin", "dev-null": "/dev/null"}[kind], target)


@SUBPROCESS
@given(st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(KINDS), st.sampled_from(BOMS)),
                min_size=1, max_size=6))
def test_any_mix_of_file_kinds_is_checked_without_hanging(files: list[tuple[str, str, bytes]]) -> None:
    folder = tempfile.mkdtemp()
    try:
        outside = Path(folder) / "outside"
        outside.mkdir()
        (outside / "secret.txt").write_text("id: secret-outside\n")
        root = Path(folder) / "ws"
        root.mkdir()
        for index, (name, kind, bom) in enumerate(files):
            place(root, outside, name, kind, bom, index)
        result = check(".", cwd=root)
        assert_no_traceback(result)
        assert "secret-outside" not in result.output
    finally:
        shutil.rmtree(folder, ignore_errors=True)
