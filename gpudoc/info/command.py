"""`gpudoc info`: arguments (stdlib only) and the handler, which imports the real work lazily."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from gpudoc.exit_codes import FINDINGS, OK, UsageError

EPILOG = """\
exit codes: 0 the report was produced (also on a machine without a GPU); 1 with --require-gpu
when no GPU is usable, or with --strict when any check warns or fails; with --from, also when a
check fails; 2 usage error, or a report that cannot be read."""


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
        "--from",
        dest="from_files",
        nargs="+",
        metavar="FILE",
        help="read reports from another machine instead of this one (- is standard input): "
        "collect_env, nvidia-smi (table, -L, -q, -q -x, --query-gpu csv), kernel logs, "
        "lspci, ibstat, lsmod, pip list/freeze/show, conda list, PyTorch's CUDA warnings, shell "
        "variables",
    )
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
        "--list-checks",
        action="store_true",
        help="list the doctor's checks and exit (as JSON with --json)",
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
    from gpudoc.info.collect import collect_info
    from gpudoc.info.doctor import run_doctor

    def make_console() -> Any:  # rich only for the human views: --json never imports it
        from gpudoc.console import make_console

        return make_console()

    if args.list_checks:
        if args.json:
            render.render_check_list_json(all_checks(), sys.stdout)
        else:
            render.render_check_list(all_checks(), make_console())
        return OK
    if not 0 < args.torch_timeout < math.inf:  # also refuses nan
        raise UsageError("--torch-timeout must be a positive number of seconds")
    if args.from_files:
        report = run_doctor(_read_reports(args))
    else:
        report = run_doctor(collect_info(torch_probe=_probe_starter(args)))
    if args.json:
        render.render_json(report, sys.stdout)
    else:
        render.render_human(report, make_console(), verbose=args.verbose)
    return _exit_status(args, report)


def _exit_status(args: argparse.Namespace, report: Any) -> int:
    """1 for --require-gpu without a GPU, --strict with a problem, or a failure in reports (with
    one line on stderr saying which); else 0."""
    assert report.summary is not None  # the doctor ran
    where = '"checks" in the JSON' if args.json else "the doctor above"
    if args.require_gpu and report.summary.usable_gpus == 0:
        _why(f"--require-gpu: no usable GPU{_culprits(report)}; see {where}")
        return FINDINGS
    if args.strict and report.summary.problems > 0:
        count = report.summary.problems
        _why(f"--strict: {count} problem{'s' * (count != 1)}{_culprits(report)}; see {where}")
        return FINDINGS
    if report.sources is not None and report.summary.failures > 0:
        count = report.summary.failures
        failed = ", ".join(r.check_id for r in report.checks if r.status == "fail")
        _why(f"{count} failure{'s' * (count != 1)} in the reports ({failed}); see {where}")
        return FINDINGS
    return OK


def _read_reports(args: argparse.Namespace) -> Any:
    """The InfoReport the --from files say; a file that cannot be read is a usage error."""
    from gpudoc.info.reports.load import load_reports
    from gpudoc.info.reports.text import ReportError

    if args.no_torch:
        raise UsageError("--no-torch applies to this machine, not to reports read with --from")
    try:
        return load_reports(args.from_files)
    except ReportError as error:
        raise UsageError(str(error)) from None


def _probe_starter(args: argparse.Namespace) -> Any:
    """Start the PyTorch probe; its wait shows a spinner on stderr when that is a terminal."""
    from gpudoc.info.collect import start_torch_probe

    if args.no_torch:
        return None
    spin = not args.json and sys.stderr.isatty()  # --json never imports rich

    def start() -> Any:
        wait = start_torch_probe(args.torch_timeout)
        if not spin:
            return wait

        def wait_with_spinner() -> Any:
            from gpudoc.console import make_console

            with make_console(stderr=True).status("probing PyTorch in a subprocess"):
                return wait()

        return wait_with_spinner

    return start


def _culprits(report: Any) -> str:
    ids = [r.check_id for r in report.checks if r.status in ("fail", "warn", "crashed")]
    return f" ({', '.join(ids)})" if ids else ""


def _why(message: str) -> None:
    """One line on stderr saying why the exit status is 1 (the report itself is on stdout)."""
    print(f"gpudoc info: {message}", file=sys.stderr)
