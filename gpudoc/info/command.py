"""`gpudoc info`: arguments (stdlib only) and the handler, which imports the real work lazily."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from gpudoc.exit_codes import FINDINGS, OK, UsageError

EPILOG = """\
exit codes: 0 the report was produced (also on a machine without a GPU); 1 with --require-gpu
when no GPU is usable, or with --strict when any check warns or fails; 2 usage error."""


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "info",
        help="what this machine offers, and why a GPU is not usable",
        description="Inventory of PyTorch, the NVIDIA driver and every GPU, and a doctor that "
        "explains in one line why a GPU is not usable and how to fix it.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--no-torch",
        action="store_true",
        help="skip the PyTorch probe: NVML, driver and environment only (fast)",
    )
    parser.add_argument("--require-gpu", action="store_true", help="exit 1 when no GPU is usable")
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when any check warns or fails"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="list every check, also those that did not apply here, with the reason",
    )
    parser.add_argument(
        "--list-checks", action="store_true", help="list the doctor's checks and exit"
    )
    parser.add_argument(
        "--torch-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="give up on the PyTorch probe after this long (default: 60)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from gpudoc.info import render
    from gpudoc.info.checks import all_checks
    from gpudoc.info.collect import collect_info, start_torch_probe
    from gpudoc.info.doctor import run_doctor

    def make_console() -> Any:  # rich only for the human views: --json never imports it
        from gpudoc.console import make_console

        return make_console()

    if args.list_checks:
        render.render_check_list(all_checks(), make_console())
        return OK
    if not 0 < args.torch_timeout < math.inf:  # also refuses nan
        raise UsageError("--torch-timeout must be a positive number of seconds")
    probe = None if args.no_torch else (lambda: start_torch_probe(args.torch_timeout))
    report = run_doctor(collect_info(torch_probe=probe))
    if args.json:
        render.render_json(report, sys.stdout)
    else:
        render.render_human(report, make_console(), verbose=args.verbose)
    assert report.summary is not None  # the doctor ran
    if args.require_gpu and report.summary.usable_gpus == 0:
        return FINDINGS
    if args.strict and report.summary.problems > 0:
        return FINDINGS
    return OK
