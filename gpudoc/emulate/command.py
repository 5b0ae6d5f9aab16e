"""`gpudoc run`: arguments (stdlib only) and the handler, which imports the real work lazily."""

from __future__ import annotations

import argparse
import os
import re
import warnings
from typing import TYPE_CHECKING, Any

from gpudoc.exit_codes import FINDINGS, USAGE, UsageError

if TYPE_CHECKING:  # the parser is built for every command: import the model only to run
    from gpudoc.emulate.model import Target

EPILOG = """\
examples:
  gpudoc run --emulate-cuda train.py
  gpudoc run --emulate-cuda --devices 2 --batches 3 -- train.py --epochs 1
  gpudoc run --emulate-cuda -m mypackage.train

The script's own output and exit status pass through. gpudoc's report goes to stderr.
exit codes: the script's own status when it finishes (0 when it succeeds); 1 on a device error;
2 on a usage error, or when the script needs something only a real GPU has (a CUDA extension)."""


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a script on the CPU while PyTorch believes CUDA devices exist",
        description="Run your script on the CPU with emulated CUDA devices, so device bugs raise "
        "their real GPU error at your line.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--emulate-cuda", action="store_true", help="emulate CUDA devices")
    parser.add_argument(
        "--devices", type=int, default=1, metavar="N", help="number of emulated GPUs (default 1)"
    )
    parser.add_argument(
        "--batches",
        type=int,
        default=None,
        metavar="K",
        help="stop every DataLoader loop after K batches",
    )
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    parser.add_argument("script", nargs="?", help="the script to run")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="the script's arguments")
    parser.set_defaults(handler=run)


# torch.accelerator (2.6) and swap_tensors on conversion (2.3): older torch is allowed by the
# [torch] extra, for smoke and info, but cannot emulate.
MIN_TORCH = (2, 6)


def check_torch(version: str | None) -> None:
    """UsageError (exit 2) unless the installed torch is new enough to emulate CUDA."""
    if version is None:
        raise UsageError("gpudoc run --emulate-cuda needs torch: pip install 'gpudoc[torch]'")
    numbers = re.match(r"(\d+)\.(\d+)", version)
    if numbers is None or (int(numbers[1]), int(numbers[2])) < MIN_TORCH:
        wanted = ".".join(map(str, MIN_TORCH))
        raise UsageError(f"gpudoc run --emulate-cuda needs torch>={wanted}; found torch {version}")


def _torch_version() -> str | None:
    import importlib.metadata  # here: `gpudoc lint` builds this parser too, and must start fast

    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def run(args: argparse.Namespace) -> int:
    target = _target(args)
    check_torch(_torch_version())
    from gpudoc.emulate.render import render
    from gpudoc.emulate.runner import run_emulated

    report = run_emulated(target, args.devices, args.batches)
    render(report)
    if report.gpudoc_failure is not None:
        return USAGE
    if report.error is not None:
        return FINDINGS
    if report.not_emulated is not None:
        return USAGE
    return report.script_exit_code


def _target(args: argparse.Namespace) -> Target:
    from gpudoc.emulate.model import Target

    if not args.emulate_cuda:
        raise UsageError("gpudoc run needs --emulate-cuda (the only way it runs scripts so far)")
    if args.devices < 1:
        raise UsageError(f"--devices must be at least 1, got {args.devices}")
    if args.batches is not None and args.batches < 1:
        raise UsageError(f"--batches must be at least 1, got {args.batches}")
    rest = [item for item in [args.script, *args.script_args] if item is not None]
    if rest and rest[0] == "--":
        rest = rest[1:]
    if args.module is not None:
        return Target(args.module, tuple(rest), as_module=True)
    if not rest:
        raise UsageError("give a script to run (gpudoc run --emulate-cuda train.py)")
    script = rest[0]
    _check_script(script)
    return Target(script, tuple(rest[1:]), as_module=False)


def _check_script(script: str) -> None:
    """What ``python script`` would refuse before running a line is a usage error (exit 2), in
    one line: a script that is missing, a directory without ``__main__.py``, or not Python."""
    if os.path.isdir(script):
        if os.path.isfile(os.path.join(script, "__main__.py")):
            return  # python runs a directory's __main__.py, and so does runpy
        raise UsageError(f"cannot run {script!r}: it is a directory (with no __main__.py)")
    if not os.path.exists(script):
        raise UsageError(f"cannot open script {script!r}: no such file")
    try:
        with open(script, "rb") as handle:
            source = handle.read()
        with warnings.catch_warnings():  # python warns when it compiles the script to run it
            warnings.simplefilter("ignore")
            compile(source, script, "exec", dont_inherit=True)
    except OSError as error:
        raise UsageError(f"cannot open script {script!r}: {error.strerror}") from None
    except SyntaxError as error:
        raise UsageError(f"cannot run {script!r}: {_syntax(error)}") from None
    except ValueError:  # null bytes (Python 3.11; 3.12 raises SyntaxError)
        raise UsageError(f"cannot run {script!r}: a binary file, not a Python script") from None


def _syntax(error: SyntaxError) -> str:
    message = error.msg or "invalid syntax"
    if "null bytes" in message:
        return "a binary file, not a Python script"
    if message.startswith(("Non-UTF-8 code", "encoding problem", "unknown encoding")):
        return f"not valid UTF-8 and no encoding declared ({message.split(' in file ')[0]})"
    if "codec can't decode" in message:  # undecodable bytes inside a string literal
        return f"not valid UTF-8 and no encoding declared (line {error.lineno})"
    where = f" at line {error.lineno}" if error.lineno else ""
    return f"syntax error{where}: {message}"
