"""The one file gateway (`oscova_runtime.paths`): what every read, write, listing and removal in a
workspace, its `.oscova/` folder and the user's cache is held to, tested on real files, links, FIFOs, `/proc`
entries, a folder swapped for a link between check and open, and (as root) a tmpfs that fills up."""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from oscova_runtime.paths import (
    FileRefused,
    LineLog,
    NotPrivate,
    check_inside,
    open_regular,
    private_folder,
    read_bytes,
    read_head,
    read_lines,
    remove_file,
    scan_folder,
    walk,
    write_file,
)

from tests.support.special_files import mounted_tmpfs

LEADS_OUT = "it is a symlink that leads outside the workspace root"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """(root, outside): a workspace root holding `inside/file.txt`, and a folder beside it holding a secret."""
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "inside").mkdir(parents=True)
    outside.mkdir()
    (root / "inside" / "file.txt").write_text("inside")
    (outside / "file.txt").write_text("secret")
    return root, outside


class SwapAtOpen:
    """Swaps the folder `inside` for a link to the outside folder at the instant `os.open` is called on the file
    in it: after every check a reader makes before opening, before the open itself. That is the window a racing
    attacker aims for, met on every read rather than when the scheduler happens to allow it (the free-running
    race is `benchmarks/link_swap_bench.py`)."""

    def __init__(self, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.folder, self.away, self.outside = root / "inside", root / "away", outside
        self.path = str(self.folder / "file.txt")
        self.names = {self.path, os.path.realpath(self.path)}  # the gateway opens the real path
        self.swaps = 0
        self._armed = False
        self._open = os.open
        monkeypatch.setattr(os, "open", self._swapping_open)

    def _swapping_open(self, path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if self._armed and dir_fd is None and os.fspath(path) in self.names:
            self._armed = False
            os.rename(self.folder, self.away)
            os.symlink(self.outside, self.folder)
            self.swaps += 1
        return self._open(path, flags, mode, dir_fd=dir_fd)

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        """The next open of the file swaps the folder; the folder is put back afterwards."""
        self._armed, swaps = True, self.swaps
        try:
            yield
        finally:
            self._armed = False
            if self.swaps > swaps:
                os.unlink(self.folder)
                os.rename(self.away, self.folder)
        assert self.swaps == swaps + 1, "the file was never opened with os.open: the swap did not happen"


def _check_then_open(path: str, root: Path) -> bytes:
    """The old way: the path checked, then opened by name, so a folder swapped in between is followed."""
    check_inside(path, str(root))
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 100)
    finally:
        os.close(fd)


GATEWAY_READERS: dict[str, Callable[[str, str], bytes]] = {
    "read_bytes": lambda path, root: read_bytes(path, root=root),
    "read_head": lambda path, root: read_head(path, root=root, limit=100)[0],
    "read_lines": lambda path, root: "".join(read_lines(path, root=root, limit=100, line_limit=100)).encode(),
    "open_regular": lambda path, root: _read_and_close(open_regular(path, root=root)),
}


def _read_and_close(fd: int) -> bytes:
    try:
        return os.read(fd, 100)
    finally:
        os.close(fd)


@pytest.mark.parametrize("reader", GATEWAY_READERS)
def test_a_folder_swapped_for_a_link_while_files_are_read_never_leaks_what_is_outside(
        layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, reader: str):
    """The folder `inside` is swapped for a link to the outside folder between the check and the open. A read
    that checks first and opens after (the old way) gets the outside text, which shows the swap is the real
    attack; every gateway reader refuses, because it checks the opened file again, and reads the inside text
    once the folder is back."""
    root, outside = layout
    swap = SwapAtOpen(root, outside, monkeypatch)
    with swap.armed():
        assert _check_then_open(swap.path, root) == b"secret"
    read = GATEWAY_READERS[reader]
    with swap.armed(), pytest.raises(FileRefused, match="moved outside the workspace root while it was opened"):
        read(swap.path, str(root))
    assert read(swap.path, str(root)) == b"inside"


def test_special_files_and_system_views_are_refused_with_the_reason(layout: tuple[Path, Path]):
    root, _ = layout
    os.mkfifo(root / "fifo")
    for path, reason in ((root / "fifo", "it is a FIFO, not a regular file"), ("/dev/zero", "a character device"),
                         ("/proc/self/environ", "it is in /proc, a view of the running system"),
                         (str(root / "a\x00b"), "NUL byte")):
        with pytest.raises(FileRefused, match=reason):
            read_bytes(str(path))
    os.symlink("/proc/self/fd/0", root / "stdin")
    with pytest.raises(FileRefused, match=LEADS_OUT):
        read_bytes(str(root / "stdin"), root=str(root))
    with pytest.raises(FileRefused, match="it is a FIFO, not a regular file, and was not written"):
        LineLog(str(root / "fifo"), root=str(root))


def test_a_file_over_its_limit_is_refused_by_its_size_without_being_read(tmp_path: Path):
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as handle:
        handle.truncate(4_000_000_000)  # sparse: 4 GB that take no disk
    began = time.perf_counter()
    with pytest.raises(FileRefused, match=r"larger than 64 MB \(4,000,000,000 bytes"):
        read_lines(str(huge), limit=64_000_000, line_limit=1_000)
    with pytest.raises(FileRefused, match="4,000,000,000 bytes"):
        read_bytes(str(huge), limit=64_000_000)
    assert time.perf_counter() - began < 1


def test_line_reading_is_bounded_per_line_and_names_a_bad_line(tmp_path: Path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"one\r\ntwo\n\nthree")
    assert list(read_lines(str(path), limit=100, line_limit=10)) == ["one", "two", "", "three"]
    path.write_bytes(b"short\n" + b"x" * 5000 + b"\nafter\n")
    lines = read_lines(str(path), limit=100_000, line_limit=1000)
    assert next(lines) == "short"
    with pytest.raises(FileRefused, match="line 2 is longer than 1,000 bytes"):
        next(lines)
    path.write_bytes(b"fine\n\xff\xfe\n")
    with pytest.raises(FileRefused, match=r"line 2 is not valid UTF-8"):
        list(read_lines(str(path), limit=100, line_limit=100))


def test_a_whole_file_write_is_atomic_keeps_the_mode_and_never_writes_through_a_link(layout: tuple[Path, Path]):
    root, outside = layout
    target = root / "inside" / "case.jsonl"
    target.write_text("old")
    target.chmod(0o640)
    write_file(str(target), b"new", root=str(root))
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in target.parent.iterdir()) == ["case.jsonl", "file.txt"]  # no temporary file left
    with pytest.raises(FileRefused, match="a file of that name exists"):
        write_file(str(target), b"other", root=str(root), exclusive=True)
    assert target.read_text() == "new"
    link = root / "inside" / "link.txt"
    link.symlink_to(outside / "file.txt")
    write_file(str(link), b"replaced", root=str(root))  # the link is replaced, what it led to is untouched
    assert (outside / "file.txt").read_text() == "secret" and not link.is_symlink() and link.read_text() == "replaced"
    (root / "out").symlink_to(outside)
    with pytest.raises(FileRefused, match=LEADS_OUT):
        write_file(str(root / "out" / "new.txt"), b"x", root=str(root))
    with pytest.raises(FileRefused, match=LEADS_OUT):
        remove_file(str(root / "out" / "file.txt"), root=str(root))
    assert sorted(p.name for p in outside.iterdir()) == ["file.txt"]
    private = root / "inside" / "private.json"
    write_file(str(private), b"{}", root=str(root), private=True)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600


def test_listings_and_walks_never_follow_a_link_out(layout: tuple[Path, Path]):
    root, outside = layout
    (root / "inside" / "out").symlink_to(outside)
    (root / "linked").symlink_to(outside)
    assert [e.name for e in scan_folder(str(root / "inside"), root=str(root))] == ["file.txt", "out"]
    with pytest.raises(FileRefused, match=LEADS_OUT):
        scan_folder(str(root / "linked"), root=str(root))
    with pytest.raises(FileRefused, match=LEADS_OUT):
        walk(str(root / "linked"), root=str(root))
    files = [os.path.join(d, f) for d, _, names in walk(str(root), root=str(root)) for f in names]
    assert files == [str(root / "inside" / "file.txt")]  # `inside/out` and `linked` are not walked


def test_a_private_folder_is_made_0700_and_refused_when_others_could_write_it(tmp_path: Path):
    home = tmp_path / "a" / "cache"
    private_folder(str(home))
    assert stat.S_IMODE(home.stat().st_mode) == 0o700 and stat.S_IMODE(home.parent.stat().st_mode) == 0o700
    home.chmod(0o777)
    with pytest.raises(NotPrivate, match=r"other users can write to the folder \(mode 0777\)"):
        private_folder(str(home))
    home.chmod(0o700)
    (tmp_path / "link").symlink_to(home)
    private_folder(str(tmp_path / "link"))  # a link the user made to a folder of theirs
    with pytest.raises(FileRefused, match="it is a symlink, not a folder"):
        private_folder(str(tmp_path / "link"), follow=False)
    if os.geteuid() == 0:
        os.chown(home, 4242, 4242)
        with pytest.raises(NotPrivate, match="not owned by you"):
            private_folder(str(home))


def test_a_full_disk_cuts_a_line_log_at_a_line_end_and_leaves_room_for_why(tmp_path: Path):
    folder = tmp_path / "small"
    with mounted_tmpfs(folder, "size=64k"):
        log = LineLog(str(folder / "run.jsonl"), root=str(folder))
        line = b"x" * 999 + b"\n"
        while log.append(line):
            pass
        assert log.failure is not None and log.failure.strerror
        assert log.end(b'{"record": "incomplete"}\n')
        log.close()
        data = (folder / "run.jsonl").read_bytes()
        assert data.endswith(b'\n{"record": "incomplete"}\n') and data.count(line) == log.lines - 1
        assert sorted(p.name for p in folder.iterdir()) == ["run.jsonl"]  # the reserve is given back


def test_the_reserve_a_killed_run_left_is_removed_by_the_next_log_and_a_live_ones_kept(tmp_path: Path):
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "crashed.jsonl").write_bytes(b'{"kind": "started"}\n')
    (folder / ".crashed.jsonl.reserve").write_bytes(bytes(8192))  # its process was killed: nobody holds it
    (folder / ".elsewhere.reserve").symlink_to(tmp_path / "outside")  # never followed, never removed
    (tmp_path / "outside").write_bytes(b"keep")
    live = LineLog(str(folder / "live.jsonl"), root=str(folder))  # a run still writing
    second = LineLog(str(folder / "second.jsonl"), root=str(folder))
    names = sorted(p.name for p in folder.iterdir())
    assert names == [".elsewhere.reserve", ".live.jsonl.reserve", ".second.jsonl.reserve", "crashed.jsonl",
                     "live.jsonl", "second.jsonl"], names
    assert (tmp_path / "outside").read_bytes() == b"keep"
    second.close()
    live.close()
    assert sorted(p.name for p in folder.iterdir()) == [".elsewhere.reserve", "crashed.jsonl", "live.jsonl",
                                                        "second.jsonl"]


# -- a scratch copy of a tree (`review`) ------------------------------------------------------------------


def test_make_link_makes_links_inside_and_refuses_every_link_leading_out(tmp_path):
    from oscova_runtime.paths import make_link

    root = tmp_path / "copy"
    root.mkdir()
    (root / "templates").mkdir()
    (root / "templates" / "persona.j2").write_text("persona")
    make_link(str(root / "templates" / "alias.j2"), "persona.j2", root=str(root))
    assert (root / "templates" / "alias.j2").read_text() == "persona"
    make_link(str(root / "here"), ".", root=str(root))  # the root itself: inside
    for name, target in (("out.j2", "../../outside"), ("abs.j2", "/etc/passwd"), ("up", "here/..")):
        with pytest.raises(FileRefused, match="leads outside the workspace root"):
            make_link(str(root / name), target, root=str(root))
        assert not os.path.lexists(root / name)  # `up` was made, found leading out, and removed
    with pytest.raises(FileRefused, match="exists"):
        make_link(str(root / "templates" / "alias.j2"), "persona.j2", root=str(root))


def test_populate_folder_writes_below_its_folder_only_and_never_through_a_link(tmp_path):
    from oscova_runtime.paths import populate_folder

    root, outside = tmp_path / "copy", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    os.symlink(outside, root / "linked")
    refused = populate_folder(str(root), [("a/b/c.txt", b"c"), ("top.txt", b"t"), ("../escape.txt", b"x"),
                                          ("linked/evil.txt", b"x"), ("a/b", b"x"), ("a//d", b"x")])
    assert (root / "a" / "b" / "c.txt").read_bytes() == b"c" and (root / "top.txt").read_bytes() == b"t"
    assert sorted(refused) == ["../escape.txt", "a//d", "a/b", "linked/evil.txt"]
    assert "not a plain relative path" in refused["../escape.txt"]
    assert list(outside.iterdir()) == [] and not (tmp_path / "escape.txt").exists()


def test_append_to_output_appends_to_a_regular_file_and_refuses_a_link_a_fifo_or_a_folder(tmp_path):
    from oscova_runtime.paths import append_to_output

    summary = tmp_path / "steps" / "summary.md"
    append_to_output(str(summary), "one\n")
    append_to_output(str(summary), "two\n")
    assert summary.read_text() == "one\ntwo\n"
    target = tmp_path / "elsewhere.txt"
    target.write_text("kept\n")
    (tmp_path / "link.md").symlink_to(target)
    os.mkfifo(tmp_path / "pipe.md")
    for name, reason in (("link.md", "symlink"), ("pipe.md", "FIFO"), ("steps", "directory")):
        with pytest.raises(FileRefused, match=reason):
            append_to_output(str(tmp_path / name), "x\n")
    assert target.read_text() == "kept\n" and summary.read_text() == "one\ntwo\n"
