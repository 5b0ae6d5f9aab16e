"""`gpudoc info`: arguments (stdlib only) and the handler, which imports the real work lazily."""

from __future__ import annotations

import argparse
from typing import Any

from gpudoc.exit_codes import USAGE


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "info",
        help="what this machine offers, and why a GPU is not usable",
        description="Inventory of PyTorch, the NVIDIA driver and every GPU, and a doctor that "
        "explains in one line why a GPU is not usable and how to fix it.",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print("gpudoc info: not built yet")
    return USAGE
