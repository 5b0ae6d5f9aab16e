"""The command line: argparse, ``main(argv) -> int``.

Each subcommand lives in ``gpudoc/<name>/command.py``, which defines its arguments with the standard
library alone and imports its heavy machinery inside its handler, so ``gpudoc lint`` never pays for
torch and ``gpudoc --help`` never pays for anything.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import Any

from gpudoc import __version__
from gpudoc.exit_codes import INTERRUPTED, TERMINATED, USAGE, UsageError

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
exit codes: 0 clean, 1 findings or a failed check, 2 usage error or unreadable input,
130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
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
    previous = _on_sigterm(_raise_terminated)
    try:
        return handler(args)
    except UsageError as error:
        print(f"gpudoc {args.command}: error: {error}", file=sys.stderr)
        return USAGE
    except KeyboardInterrupt:
        print("gpudoc: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Terminated:
        print("gpudoc: terminated", file=sys.stderr)
        return TERMINATED
    except BrokenPipeError:
        # `gpudoc lint . | head` closes stdout early; that is not an error worth a traceback.
        sys.stderr.close()
        return USAGE
    finally:
        _on_sigterm(previous)


class Terminated(BaseException):
    """SIGTERM, raised in the main thread like KeyboardInterrupt, so that ``finally`` blocks run
    (smoke kills its workers) before the exit status 143."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


def _on_sigterm(handler: Any) -> Any:
    """Install ``handler`` for SIGTERM (in the main thread only: elsewhere Python refuses)."""
    if threading.current_thread() is not threading.main_thread() or handler is None:
        return None
    return signal.signal(signal.SIGTERM, handler)
