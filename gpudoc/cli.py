"""The command line: argparse, ``main(argv) -> int``.

Each subcommand lives in ``gpudoc/<name>/command.py``, which defines its arguments with the standard
library alone and imports its heavy machinery inside its handler, so ``gpudoc lint`` never pays for
torch and ``gpudoc --help`` never pays for anything.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import import_module

from gpudoc import __version__
from gpudoc.exit_codes import USAGE, UsageError

# (subcommand, module that defines it); order is the order of --help.
SUBCOMMANDS = (
    ("info", "gpudoc.info.command"),
    ("smoke", "gpudoc.smoke.command"),
    ("lint", "gpudoc.lint.command"),
    ("run", "gpudoc.emulate.command"),
)

DESCRIPTION = """\
A doctor for PyTorch on GPUs.

  gpudoc info                     what this machine offers, and why a GPU is not usable
  gpudoc smoke --all-devices      train the CIFAR-10 tutorial network on every device, check it
  gpudoc lint train.py            find device-placement bugs without running the script
  gpudoc run --emulate-cuda x.py  run a script on the CPU while PyTorch believes CUDA exists
"""

EPILOG = """\
exit codes: 0 clean, 1 findings or a failed check, 2 usage error or unreadable input.
Run 'gpudoc COMMAND --help' for a command's options."""


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors already; keep its message to one line with our prefix."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gpudoc",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gpudoc {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for _name, module_name in SUBCOMMANDS:
        import_module(module_name).add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return USAGE
    try:
        return handler(args)
    except UsageError as error:
        print(f"gpudoc {args.command}: error: {error}", file=sys.stderr)
        return USAGE
    except KeyboardInterrupt:
        print("gpudoc: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `gpudoc lint . | head` closes stdout early; that is not an error worth a traceback.
        sys.stderr.close()
        return USAGE
