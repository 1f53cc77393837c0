"""`python -m oscova_lsp`: the language server (no arguments, or a client's flags) or the command line.

`python -m` puts the current directory first on `sys.path`, so in a workspace folder its `uuid.py`,
`yaml.py` or `pydantic.py` would be imported in place of the real modules. That entry is dropped here,
before anything else is imported: `os` and `sys` are built in or frozen (a file cannot shadow them), and
the package's `__init__`, which `python -m` runs first, imports nothing.
"""

import os
import sys


def _drop_current_directory() -> None:
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # a deleted current directory: only '' can point at it
        here = None
    if sys.path and not sys.flags.safe_path and here is not None and os.path.realpath(sys.path[0] or ".") == here:
        del sys.path[0]
    sys.path[:] = [entry for entry in sys.path if entry not in ("", ".")]


_drop_current_directory()

from .cli import main  # noqa: E402 - after the clean-up above

sys.exit(main())
