"""`gpudoc smoke`: arguments (stdlib only) and the handler, which imports the real work lazily."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any

from gpudoc.exit_codes import FINDINGS, OK, UsageError

EPILOG = """\
checks per device: finite values, loss falls, held-out accuracy, lockstep vs float64 on the CPU,
two runs bitwise equal (if they differ, an automatic re-run C: matching A or B is a warning, all
three different a failure), identical devices bitwise equal (majority vote; a device alone is
compared with --golden FILE if given), save/load round trip, evaluation on the device;
throughput at batch 4 and 256.

exit codes: 0 every device passed (warnings allowed unless --strict), 1 a device failed or hung,
2 no verdict (bad arguments, torch missing, no device matched, unreadable --data-root or
--golden).

testing aid: GPUDOC_SMOKE_INJECT=<crash|hang|nan|bitflip|flaky>:<worker-index> breaks one worker
(bitflip: one bit in run A only; flaky: one bit in every run);
with --distributed, <fault>:rank=<r>[@start|@smoke|@collectives|@ddp] breaks one rank.

--distributed: one rank of a torchrun or srun job (torchrun --nproc-per-node=N -m gpudoc smoke
--distributed); the device smoke on every rank, exact collectives, DDP steps; rank 0 reports and
every rank exits with the job's verdict."""


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "smoke",
        help="train the CIFAR-10 tutorial network on every device and check it",
        description="Train the reference CIFAR-10 network (the PyTorch tutorial's Net) on each "
        "device, in parallel, and prove that each one computes and trains correctly.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--all-devices", action="store_true", help="the CPU and every CUDA device (the default)"
    )
    which.add_argument(
        "--device",
        action="append",
        metavar="DEV",
        help="cpu, cuda or cuda:N; repeatable, and the same device twice runs twice in parallel",
    )
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        help="write the report as JSON to stdout, or to FILE (then the table still prints)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="one training run per device, for job prologues"
    )
    parser.add_argument(
        "--recipe",
        choices=("default", "tutorial"),
        default="default",
        help="default: batch 32, lr 0.01, 300 steps (a reliable gate); tutorial: batch 4, lr "
        "0.001, 1500 steps",
    )
    parser.add_argument("--steps", type=_positive_int, metavar="N", help="training steps per run")
    parser.add_argument(
        "--data-root",
        metavar="DIR",
        help="train on real CIFAR-10 in DIR/cifar-10-batches-py (torchvision's layout)",
    )
    parser.add_argument(
        "--download", action="store_true", help="download CIFAR-10 into --data-root if missing"
    )
    parser.add_argument(
        "--timeout",
        type=_positive_float,
        default=120.0,
        metavar="S",
        help="seconds per device before it is killed and reported HUNG (default 120)",
    )
    parser.add_argument(
        "--golden",
        metavar="FILE",
        help="compare each device that has no identical peer here with the same device in FILE, "
        "the --json report of an earlier run (e.g. a healthy node): bitwise equal or FAIL",
    )
    parser.add_argument("--serial", action="store_true", help="one device at a time")
    parser.add_argument(
        "--distributed",
        action="store_true",
        help="run as one rank of a torchrun/srun job: every rank's device, collectives, DDP "
        "(--device cpu for gloo on CPUs; NCCL on GPUs otherwise)",
    )
    parser.add_argument(
        "--heartbeat-timeout",
        type=_positive_float,
        default=30.0,
        metavar="S",
        help="--distributed: a rank whose heartbeat (once a second) stops for S seconds is named "
        "at once, HUNG if its process is still there, else dead (default 30)",
    )
    parser.add_argument("--strict", action="store_true", help="warnings fail the run")
    parser.set_defaults(handler=run)


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("torch") is None:
        raise UsageError("PyTorch is not installed (pip install torch): nothing to smoke-test")
    from gpudoc.console import make_console
    from gpudoc.smoke import render
    from gpudoc.smoke.golden import load as load_golden
    from gpudoc.smoke.run import parse_devices, smoke

    _check_injection(args.distributed)
    config = _config(args)
    if args.distributed:
        if args.golden is not None:
            raise UsageError("--golden is not supported with --distributed (ranks vote instead)")
        return _run_distributed(args, config)
    devices = parse_devices(args.device) if args.device else None
    golden = load_golden(args.golden) if args.golden is not None else None
    if args.json not in (None, "-"):
        _check_writable(args.json)  # before minutes of training, not after
    err = make_console(stderr=True)
    live = args.json is None and err.is_terminal and sys.stdout.isatty()
    with render.LiveProgress(err, enabled=live) as progress:
        report = smoke(
            config,
            devices,
            progress.on_event,
            serial=args.serial,
            strict=args.strict,
            golden=golden,
        )
    if args.json == "-":
        sys.stdout.write(render.to_json(report))
    else:
        if args.json is not None:
            _write(args.json, render.to_json(report))
        # A pipe or a CI log is not 80 columns wide: do not truncate the table there.
        render.print_report(report, make_console(width=None if sys.stdout.isatty() else 150))
    return OK if report.overall in ("PASS", "WARN") else FINDINGS


def _config(args: argparse.Namespace) -> Any:
    from dataclasses import replace

    from gpudoc.smoke.model import RECIPES, SmokeConfig

    recipe = RECIPES[args.recipe]
    if args.steps:
        recipe = replace(recipe, steps=args.steps)
    data_root = _data_root(args.data_root, args.download)
    seconds = 0.15 if args.quick else 0.3
    return SmokeConfig(
        recipe=recipe,
        quick=args.quick,
        data_root=data_root,
        timeout_s=args.timeout,
        throughput_seconds=seconds,
    )


def _data_root(root: str | None, download: bool) -> str | None:
    """Validate --data-root here, in the parent, so that bad data is exit 2, not N failed rows."""
    from gpudoc.smoke import cifar

    if root is None:
        if download:
            raise UsageError("--download needs --data-root DIR to download into")
        return None
    try:
        if download:
            cifar.download(root)
        cifar.load_cifar(root)
    except cifar.CifarError as error:
        raise UsageError(str(error)) from None
    return os.path.abspath(root)


def _check_injection(distributed: bool) -> None:
    from gpudoc.smoke import inject

    try:
        faults = inject.from_env()
    except ValueError as error:
        raise UsageError(str(error)) from None
    if any(f.rank != distributed for f in faults):
        form = "<fault>:rank=<r>" if distributed else "<fault>:<worker-index>"
        raise UsageError(
            f"{inject.ENV}: {'with' if distributed else 'without'} --distributed, "
            f"name a fault as {form}"
        )


def _run_distributed(args: argparse.Namespace, config: Any) -> int:
    """This process is one rank; rank 0 prints the job's report, every rank exits with its
    verdict."""
    from gpudoc.console import make_console
    from gpudoc.smoke import launch

    kinds = {d.strip().lower() for d in args.device or ["cuda"]}
    if not kinds <= {"cpu", "cuda"} or len(kinds) > 1:
        raise UsageError("with --distributed, --device is cpu or cuda (each rank binds its own)")
    env = launch.from_environ(os.environ)  # before torch loads: no launcher is a quick exit 2
    from gpudoc.smoke.run import check_fault_targets

    check_fault_targets(env.world_size, "rank")
    from gpudoc.smoke import render
    from gpudoc.smoke.distributed import Job

    job = Job(config, env, kinds.pop(), strict=args.strict, stall_s=args.heartbeat_timeout)
    report = job.run()
    unwritten = None
    if report is not None:
        if args.json == "-":
            sys.stdout.write(render.distributed_json(report))
        else:
            render.print_distributed(
                report, make_console(width=None if sys.stdout.isatty() else 150)
            )
            try:
                if args.json is not None:
                    _write(args.json, render.distributed_json(report))
            except UsageError as error:  # the other ranks still need the verdict first
                unwritten = error
        sys.stdout.flush()
    code = job.finish(report)
    if unwritten is not None:
        raise unwritten
    # A rank is a process of its own (torchrun or srun started it) and its verdict is out: exit
    # now, without the teardown of torch and torch._dynamo (about 1 CPU-s per rank).
    from gpudoc.smoke.spawn import exit_now

    exit_now(code)


def _check_writable(path: str) -> None:
    """Exit 2 now if the report could not be written later; leave no empty file behind."""
    existed = os.path.lexists(path)
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror}") from None
    if not existed:
        os.unlink(path)


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror}") from None
