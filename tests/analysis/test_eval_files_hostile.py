"""Evaluation files someone else wrote, through the real `oscova-lsp check`: a link out, a FIFO, a huge file,
malformed YAML and values of the wrong type are each a finding or a notice, never a hang or a traceback."""

from __future__ import annotations

import os
from pathlib import Path

from .safety_support import assert_no_traceback, check
from .test_safety import lines_of, workspace

AGENT = {"agents/a.agent.yaml": "id: a\ninstructions: hi\n"}


def test_an_evaluation_linked_out_of_the_workspace_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.eval.yaml"
    outside.write_text("agent: a\ncases:\n  - name: secret-case\n    input: hi\n")
    root = workspace(tmp_path / "ws", AGENT)
    os.symlink(outside, root / "linked.eval.yaml")
    os.symlink("/dev/zero", root / "zero.eval.yaml")
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert result.returncode == 1
    for name in ("linked.eval.yaml:", "zero.eval.yaml:"):
        [line] = lines_of(result.stdout, name)
        assert "OSC001" in line and "symlink that leads outside the workspace root" in line
    assert "secret-case" not in result.stdout + result.stderr


def test_a_fifo_named_like_an_evaluation_is_refused_not_waited_on(tmp_path: Path) -> None:
    root = workspace(tmp_path, AGENT)
    os.mkfifo(root / "f.eval.yaml")
    result = check(".", cwd=root)
    assert_no_traceback(result)
    [line] = lines_of(result.stdout, "f.eval.yaml:")
    assert "OSC001 it is a FIFO, not a regular file, and was not read" in line


def test_a_huge_evaluation_is_skipped_with_a_notice(tmp_path: Path) -> None:
    body = "agent: a\ncases:\n" + "  - name: c\n    input: filler text filler text\n" * 30_000  # about 1.4 MB
    root = workspace(tmp_path, {**AGENT, "big.eval.yaml": body})
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert result.returncode == 0
    assert "big.eval.yaml: the file is larger than 1 MB" in result.stderr


def test_malformed_and_wrongly_typed_evaluations_are_findings(tmp_path: Path) -> None:
    root = workspace(tmp_path, {**AGENT, "syntax.eval.yaml": "agent: a\ncases: [\n",
                                "types.eval.yaml": "agent: [a]\nrepeat: -3\npass_rate: 2\ncases: {name: x}\n",
                                "scalar.eval.yaml": "just a string\n",
                                "bomb.eval.yaml": "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
                                    f"{c}: &{c} [{', '.join([f'*{chr(ord(c) - 1)}'] * 9)}]\n" for c in "bcdefghi")})
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert result.returncode == 1
    assert "OSC001" in lines_of(result.stdout, "syntax.eval.yaml:")[0]
    types = lines_of(result.stdout, "types.eval.yaml:")
    assert [line.split()[1] for line in types] == ["OSC002"] * 4
    assert "`repeat`: input should be greater than or equal to 1" in "\n".join(types)
    assert "an evaluation must be a YAML mapping" in lines_of(result.stdout, "scalar.eval.yaml:")[0]
    assert "alias" in lines_of(result.stdout, "bomb.eval.yaml:")[0]


def test_a_long_evaluation_without_an_alias_is_no_alias_bomb(tmp_path: Path) -> None:
    cases = "".join(f"  - name: case-{n}\n    input: question {n}\n    expect:\n      - contains: answer\n"
                    for n in range(2_500))  # 12,500 nodes and not one alias
    root = workspace(tmp_path, {**AGENT, "long.eval.yaml": "agent: a\ncases:\n" + cases})
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert "alias" not in result.stdout and result.returncode == 0, result.stdout
