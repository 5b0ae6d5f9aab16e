"""`gpudoc smoke`: arguments (stdlib only) and the handler, which imports the real work lazily."""

from __future__ import annotations

import argparse
from typing import Any

from gpudoc.exit_codes import USAGE


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "smoke",
        help="train the CIFAR-10 tutorial network on every device and check it",
        description="Train the reference CIFAR-10 network on each device and prove it trains "
        "correctly.",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print("gpudoc smoke: not built yet")
    return USAGE
