"""`gpudoc run`: arguments (stdlib only) and the handler, which imports the real work lazily."""

from __future__ import annotations

import argparse
from typing import Any

from gpudoc.exit_codes import USAGE


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a script on the CPU while PyTorch believes CUDA devices exist",
        description="Run your script on the CPU with emulated CUDA devices, so device bugs raise "
        "their real GPU error at your line.",
    )
    parser.add_argument("--emulate-cuda", action="store_true", help="emulate CUDA devices")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    print("gpudoc run: not built yet")
    return USAGE
