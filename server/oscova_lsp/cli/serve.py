"""`oscova-lsp serve` (and `oscova-lsp` alone): the language server over stdio or loopback TCP."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import (
    port_argument,
)

NAME = "serve"


def add_parser(sub: Any) -> None:
    add_arguments(sub.add_parser(NAME, help="run the language server (stdio by default)"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default)")
    parser.add_argument("--tcp", action="store_true", help="listen on a TCP port instead")
    parser.add_argument("--host", default="127.0.0.1", help="TCP host, loopback only (default 127.0.0.1)")
    parser.add_argument("--port", type=port_argument, default=2087, help="TCP port (default 2087)")
    parser.add_argument("--clientProcessId", "--client-process-id", dest="client_pid", type=int, default=None,
                        help="exit when this process is gone")


def run(args: argparse.Namespace) -> int:
    from ..lsp.launch import serve_stdio, serve_tcp  # pygls is imported by the server, never by `check`

    if args.tcp:
        return serve_tcp(args.host, args.port, args.client_pid)
    if sys.stdin.isatty():  # typed at a terminal: say what this waiting process is
        print("oscova-lsp: this is the language server; it speaks LSP on stdin and stdout and waits for an "
              "editor to start it. Ctrl-C stops it; `oscova-lsp --help` lists the commands (check, run, …).",
              file=sys.stderr, flush=True)
    return serve_stdio(args.client_pid)
