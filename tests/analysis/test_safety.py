"""Safe to open any folder: special files, paths past the workspace, nesting, encodings — through
the real `oscova-lsp check`, as a workspace someone else wrote would meet it."""

from __future__ import annotations

import codecs
import os
from pathlib import Path

import pytest

from .safety_support import HOST, assert_no_traceback, check


def workspace(root: Path, files: dict[str, str | bytes], host: str = HOST) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "oscova.toml").write_text(host)
    for name, body in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            target.write_bytes(body)
        else:
            target.write_text(body)
    return root


def lines_of(output: str, name: str) -> list[str]:
    return [line for line in output.splitlines() if name in line]


# ---------------------------------------------------------------------------------- 4. special files


def test_a_definition_linked_to_dev_zero_is_not_read(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"agents/a.agent.yaml": "id: a\ninstructions: hi\n"})
    os.symlink("/dev/zero", root / "agents/z.agent.yaml")
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert result.returncode == 1
    [line] = lines_of(result.stdout, "z.agent.yaml:")
    assert "OSC001" in line and "symlink that leads outside the workspace root" in line


def test_a_definition_linked_to_dev_stdin_does_not_read_the_checkers_input(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"agents/a.agent.yaml": "id: a\ninstructions: hi\n"})
    os.symlink("/dev/stdin", root / "agents/in.agent.yaml")
    result = check(".", cwd=root)  # stdin is a pipe nobody writes to or closes: reading it never ends
    assert_no_traceback(result)
    [line] = lines_of(result.stdout, "in.agent.yaml:")
    assert "OSC001" in line and "outside the workspace root" in line


@pytest.mark.parametrize("name", ["agents/f.agent.yaml", "templates/f.j2"])
def test_a_fifo_named_like_a_workspace_file_is_refused_not_waited_on(tmp_path: Path, name: str) -> None:
    root = workspace(tmp_path, {"agents/a.agent.yaml": "id: a\ninstructions: hi\n"})
    (root / name).parent.mkdir(exist_ok=True)
    os.mkfifo(root / name)
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert result.returncode == 1
    [line] = lines_of(result.stdout, os.path.basename(name) + ":")
    assert "OSC001 it is a FIFO, not a regular file, and was not read" in line


def test_a_file_past_the_size_limit_is_skipped_with_a_notice(tmp_path: Path) -> None:
    body = "id: big\ninstructions: |\n" + "  filler text\n" * 90_000  # about 1.2 MB
    root = workspace(tmp_path, {"agents/big.agent.yaml": body})
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert result.returncode == 0
    assert "big.agent.yaml: the file is larger than 1 MB" in result.stderr


# ------------------------------------------------------------------------- 5. the workspace boundary


def test_template_paths_outside_the_root_are_osc040_and_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.j2").write_text("{{ outside_secret_variable }}\n")
    root = workspace(tmp_path / "ws", {
        "agents/abs.agent.yaml": f"id: abs\ninstructions_file: {outside / 'secret.j2'}\n",
        "agents/up.agent.yaml": "id: up\ninstructions_file: ../../outside/secret.j2\n",
        "agents/inc.agent.yaml": f'id: inc\ninstructions: |\n  {{% include "{outside / "secret.j2"}" %}}\n',
        "templates/main.j2": '{% include "../outside/secret.j2" %}\n',
    }, host=HOST + '[memory]\nsystem_prompt = "../outside/secret.j2"\n')
    os.symlink(outside / "secret.j2", root / "templates/link.j2")
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert result.returncode == 1
    for name in ("abs.agent.yaml", "up.agent.yaml", "inc.agent.yaml", "main.j2", "oscova.toml"):
        found = [line for line in lines_of(result.stdout, name + ":") if "OSC040" in line]
        assert found and all("is outside the workspace root; only files inside it are read" in line
                             for line in found), (name, result.stdout)
    [link] = lines_of(result.stdout, "link.j2:")
    assert "OSC001" in link and "symlink that leads outside the workspace root" in link
    assert "outside_secret_variable" not in result.output  # the outside file was never parsed


def test_workspace_grants_outside_the_root_need_the_host_setting(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    files = {"ws/agents/a.agent.yaml": 'id: a\ninstructions: hi\nworkspaces: ["../shared", "/", "data"]\n',
             "ws/data/.keep": ""}
    root = workspace(tmp_path, files) / "ws"
    (root / "oscova.toml").write_text(HOST)
    result = check(".", cwd=root)
    assert_no_traceback(result)
    grants = lines_of(result.stdout, "a.agent.yaml:")
    assert [line.split()[1] for line in grants] == ["OSC043", "OSC043", "OSC044"]
    assert "`../shared` is outside the workspace root" in grants[0]
    assert "`/`: it grants the whole file system" in grants[2]
    (root / "oscova.toml").write_text("[host]\nallow_outside_workspaces = true\n\n" + HOST)
    allowed = check(".", cwd=root)
    assert_no_traceback(allowed)
    assert [line.split()[1] for line in lines_of(allowed.stdout, "a.agent.yaml:")] == ["OSC044"]


# ------------------------------------------------------------------------------------ 6. nesting


@pytest.mark.parametrize("value", [
    "[" * 1000 + "]" * 1000,
    "{a = " * 400 + "1" + "}" * 400,
])
def test_toml_nesting_is_osc001_not_a_traceback(tmp_path: Path, value: str) -> None:
    root = workspace(tmp_path, {"agents/a.agent.yaml": "id: a\ninstructions: hi\n"},
                     host=HOST + f"\n[variables]\nx = {value}\n")
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert result.returncode == 1
    [line] = lines_of(result.stdout, "oscova.toml:")
    assert "OSC001 the document nests deeper than 100 levels" in line


def test_dotted_keys_nesting_past_the_bound_are_osc001(tmp_path: Path) -> None:
    root = workspace(tmp_path, {}, host=HOST + "\n[variables]\n" + "a." * 3000 + "b = 1\n")
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert "OSC001 the document nests deeper than 100 levels" in result.stdout


def test_the_last_resort_is_a_sentence_and_exit_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    from oscova_lsp.cli.common import last_resort as _last_resort

    def deep(argv: object = None) -> int:
        return deep(argv)

    def broken(argv: object = None) -> int:
        raise ValueError("an unforeseen state")

    assert _last_resort(deep)() == 2
    assert _last_resort(broken)() == 2
    err = capsys.readouterr().err
    assert "oscova-lsp: internal error: the input nests too deeply" in err
    assert "oscova-lsp: internal error: ValueError: an unforeseen state; please report it" in err
    assert "Traceback" not in err


# ------------------------------------------------------------------------------------ 8. encodings


@pytest.mark.parametrize("encoding,bom", [
    ("utf-8", codecs.BOM_UTF8), ("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE),
    ("utf-32-le", codecs.BOM_UTF32_LE), ("utf-32-be", codecs.BOM_UTF32_BE),
])
def test_text_with_a_byte_order_mark_is_read_as_text(tmp_path: Path, encoding: str, bom: bytes) -> None:
    definition = "id: bom\ninstructions: Grüße {{ user_name }}\ntoolz: []\n"
    root = workspace(tmp_path, {"agents/bom.agent.yaml": bom + definition.encode(encoding),
                                "templates/t.j2": bom + "Hallo {{ agent_name }}\n".encode(encoding)},
                     host="")
    (root / "oscova.toml").write_bytes(bom + HOST.encode(encoding))
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert "OSC001" not in result.stdout
    [line] = lines_of(result.stdout, "bom.agent.yaml:")
    assert line.split()[:2] == ["agents/bom.agent.yaml:3:1:", "OSC003"]  # read, parsed, positioned


def test_utf16_without_a_byte_order_mark_is_still_not_text(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"agents/u.agent.yaml": "id: u\n".encode("utf-16-le")})
    result = check(".", cwd=root)
    assert_no_traceback(result)
    assert "u.agent.yaml:1:1: OSC001 the file is binary" in result.stdout
