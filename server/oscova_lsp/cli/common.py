"""What every command shares: exit statuses, the parser that exits 2 with a sentence, argument types, the
workspace a command works in, and the last resort that turns any failure into a sentence."""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable, Sequence

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
"""`EXIT_INCOMPLETE`: `run` ended `completed` with an answer that is cut off (`finish_reason` `length` or
`content_filter`) or that a guard stopped (the result's `incomplete`)."""
COLOR_CHOICES = ("auto", "always", "never")
"""`--color`: `auto` colours at a terminal (`reporting.wants_color`)."""



class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"oscova-lsp: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def codes_argument(value: str) -> frozenset[str]:
    """`--select` / `--ignore`: comma-separated codes or prefixes, each naming a rule (a typo is an error)."""
    from ..analysis.lint import code_list

    try:
        return code_list(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def port_argument(value: str) -> int:
    """`--port`: a TCP port number (0 lets the system choose one)."""
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"the port must be a number from 0 to 65535, not {value}")
    return port


def last_resort(entry: Callable[..., int]) -> Callable[..., int]:
    """No input ends in a traceback: an unexpected failure is one sentence on stderr and exit status 2."""

    @functools.wraps(entry)
    def guarded(argv: Sequence[str] | None = None) -> int:
        try:
            return entry(argv)
        except (SystemExit, KeyboardInterrupt):
            raise
        except RecursionError:
            print("oscova-lsp: internal error: the input nests too deeply to be processed; please report it "
                  "with the file that caused it", file=sys.stderr)
        except MemoryError:
            print("oscova-lsp: internal error: out of memory; please report it with the file that caused it",
                  file=sys.stderr)
        except Exception as error:  # noqa: BLE001 - the edge of the program: words, not a traceback
            print(f"oscova-lsp: internal error: {type(error).__name__}: {error}; please report it "
                  "(OSCOVA_LSP_TRACEBACK=1 prints the traceback)", file=sys.stderr)
            if os.environ.get("OSCOVA_LSP_TRACEBACK"):
                raise
        return EXIT_USAGE

    return guarded


def workspace_root(option: str | None) -> str | None:
    """`--root` when it holds a host configuration, else the root found from the current directory; None
    (with a sentence on stderr) when there is no workspace: a run or preview needs one, and writes nothing
    outside it."""
    from ..analysis.disk import find_root, host_config_path

    if option is not None:
        root = os.path.abspath(option)
        if not os.path.isdir(root):
            print(f"oscova-lsp: the workspace root {option} is not a directory", file=sys.stderr)
            return None
        if host_config_path(root) is None:
            above = find_root(root)
            hint = f"; the nearest workspace is {above}" if above else ""
            print(f"oscova-lsp: no workspace at {root}: it holds no oscova.toml (or pyproject.toml with "
                  f"[tool.oscova]){hint}", file=sys.stderr)
            return None
        return root
    found = find_root(os.getcwd())
    if found is None:
        print(f"oscova-lsp: no oscova.toml was found in {os.getcwd()} or any folder above it; run from inside "
              "a workspace or pass --root DIR", file=sys.stderr)
    return found
