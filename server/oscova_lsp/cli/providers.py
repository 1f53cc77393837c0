"""`oscova-lsp providers`: the built-in context provider types, in their default order."""

from __future__ import annotations

import argparse
from typing import Any

from .common import (
    EXIT_OK,
)

NAME = "providers"


def add_parser(sub: Any) -> None:
    sub.add_parser(NAME, help="list the built-in context provider types (the default order)")


def run(args: argparse.Namespace) -> int:
    """The built-in provider types, from the runtime's catalogue (the one list the checker and runs use)."""
    from oscova_runtime.catalogue import PROVIDERS

    for spec in PROVIDERS:
        print(f"{spec.position:>2}  {spec.type:<14} {spec.class_name}")
        print(f"    {spec.summary}")
        print(f"    active: {spec.applies_when}; contributes {', '.join(spec.contributes)}"
              + (f"; tools {', '.join(spec.tools)}" if spec.tools else "")
              + (f"; variables {', '.join(v.name for v in spec.variables)}" if spec.variables else ""))
    print("\nA definition lists more in `context_providers` (a type above, or a `[providers.NAME]` of oscova.toml);"
          " they are appended at position 10.")
    return EXIT_OK
