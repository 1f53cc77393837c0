"""The one file gateway: every file the product reads or writes inside a workspace, in its `.oscova/` folder
and in the user's cache goes through this package, and so does every listing of their folders
(`tests/test_architecture.py` fails on any other open, write, rename, removal or listing in production code).

The rules, everywhere: regular files only (a FIFO, a device, a socket or a `/proc` entry is refused before it
can hang a reader or fill its memory); reads bounded (a file over its limit is refused by its size, not read
whole; line readers are bounded per line too); nothing read, written, listed or removed past the boundary
folder given as `root` (its real path: `..` and symlinks included); files opened with `O_NOFOLLOW` on their
real path and the folder checked again once open, so a link swapped in meanwhile is refused too; whole files
written under a temporary name created exclusively beside them and renamed into place.

- `is_inside(path, folder)`: compares real paths (or, with `real=False`, the paths as written); `Boundary`
  answers it for the many paths of one pass.
- Reading: `identity` (a file's size, times and inode, for a cache that compares them instead of reading),
  `read_bytes` / `read_text` (a whole file, at most `limit`), `read_head` (the first bytes of a file
  that may be cut short), `read_lines` (a text file streamed line by line: transcripts and cases),
  `open_regular` (a descriptor, for `filecache`).
- Writing: `write_file` (a whole file, atomically, optionally only when none exists), `copy_file`,
  `write_text` (in place or appended: tools, memory, personal context), `populate_folder` and `make_link`
  (a scratch copy of a tree), `append_to_output`,
  `LineLog` (lines appended as a run goes: a full disk cuts it at a line end, never inside a line, and leaves
  room for a last line saying why), `open_for_writing`.
- Folders: `make_folders`, `scan_folder`, `walk` (links to folders are never followed), `remove_file`,
  `remove_folder`, `private_folder` (the cache's: created 0700, refused unless the user alone can write it),
  `scratch_folder` (a private temporary folder).
- `decode_text`: UTF-8 with or without a byte-order mark, UTF-16 and UTF-32 with one.

A file outside every workspace that the environment names for output has a function of its own, named for
it: `append_to_output` (GitHub's `$GITHUB_STEP_SUMMARY`, which `review --format github` writes); every other
write has a root. `make_link` makes the symlinks of a tree that `review` copies into a scratch folder, never
one leading out of it.
"""

from __future__ import annotations

from ._boundary import (
    MAX_TEXT_BYTES,
    OUTSIDE_ROOT,
    Boundary,
    FileRefused,
    Identity,
    NotPrivate,
    check_inside,
    describe_os_error,
    identity,
    is_inside,
    refusal_note,
    resolve_in_root,
    too_large,
)
from ._folders import (
    remove_file,
    remove_folder,
    scan_folder,
    scratch_folder,
    walk,
)
from ._reading import (
    decode_text,
    open_regular,
    read_bytes,
    read_head,
    read_lines,
    read_text,
)
from ._writing import (
    LINE_LOG_RESERVE,
    RESERVE_SUFFIX,
    LineLog,
    append_to_output,
    copy_file,
    make_folders,
    make_link,
    open_for_writing,
    populate_folder,
    private_folder,
    write_file,
    write_text,
)

__all__ = [
    "Boundary",
    "FileRefused",
    "Identity",
    "LINE_LOG_RESERVE",
    "LineLog",
    "MAX_TEXT_BYTES",
    "NotPrivate",
    "OUTSIDE_ROOT",
    "RESERVE_SUFFIX",
    "append_to_output",
    "check_inside",
    "copy_file",
    "decode_text",
    "describe_os_error",
    "identity",
    "is_inside",
    "make_folders",
    "make_link",
    "open_for_writing",
    "open_regular",
    "populate_folder",
    "private_folder",
    "read_bytes",
    "read_head",
    "read_lines",
    "read_text",
    "refusal_note",
    "remove_file",
    "remove_folder",
    "resolve_in_root",
    "scan_folder",
    "scratch_folder",
    "too_large",
    "walk",
    "write_file",
    "write_text",
]
