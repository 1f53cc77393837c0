"""`oscova-lsp schema`: the JSON Schema of definitions, of evaluations (`--eval`), or of the messages editors
exchange with the server (`--wire`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .common import (
    EXIT_OK,
)

NAME = "schema"


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(NAME, help="print the JSON Schema of agent definitions (--eval: of evaluations; "
                                       "--wire: of the messages editors exchange with the server)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--eval", action="store_true", help="the JSON Schema of evaluation files (*.eval.yaml)")
    which.add_argument("--wire", action="store_true",
                       help="the JSON Schema of run events, the oscova.* commands' arguments and answers, and the "
                            "JSON reports")


def run(args: argparse.Namespace) -> int:
    from oscova_runtime.definition import definition_json_schema
    from oscova_runtime.evaluation import eval_json_schema

    if args.wire:
        from ..wire.schema import wire_json_schema

        print(json.dumps(wire_json_schema(), indent=2))
        return EXIT_OK
    print(json.dumps(eval_json_schema() if args.eval else definition_json_schema(), indent=2))
    return EXIT_OK
