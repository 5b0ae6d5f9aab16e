"""`gpudoc lint`: arguments (stdlib only) and the handler, which imports the real work lazily."""

from __future__ import annotations

import argparse
from typing import Any

from gpudoc.exit_codes import USAGE


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lint",
        help="find device-placement bugs without running the script",
        description="Read PyTorch scripts with libcst, never run them, and report "
        "device-placement bugs.",
    )
    parser.add_argument("paths", nargs="*", help="files or directories; - reads stdin")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print("gpudoc lint: not built yet")
    return USAGE
