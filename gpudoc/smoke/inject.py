"""Fault injection, a documented testing aid: ``GPUDOC_SMOKE_INJECT=<fault>:<worker-index>``.

Several faults, one per worker, may be given with commas: ``crash:0,nan:2``; a worker (or rank)
the run does not have is a usage error (exit 2). Under
``--distributed`` a fault names a rank instead: ``<fault>:rank=<r>[@<phase>]`` (see
``distributed.py``; the default phase, ``smoke``, strikes the rank's single-device smoke;
``start`` strikes the rank itself as soon as it has joined the job).

Each fault strikes worker ``index`` halfway through its first training run (run A), once, and
names itself in that worker's row:

- ``crash``: the process dies from SIGSEGV, as a crashing driver library would;
- ``hang``: the process stops making progress, as a wedged GPU would; the watchdog kills it;
- ``nan``: one weight becomes NaN;
- ``bitflip``: bit 22 (the mantissa's top bit) of one weight flips in run A only, a transient
  silent data corruption that leaves loss and accuracy unchanged; only the bitwise checks see
  it. B and the re-run C agree, so the device's own checks can only WARN (a one-off difference);
  the cross-device vote, or ``--golden``, FAILs it, because there the odd run is shown wrong
  (under ``--quick``, one run: two identical devices that disagree with no majority both FAIL);
- ``flaky``: like ``bitflip``, but in every run, at a different weight each time (an intermittent
  fault that keeps coming back): A, B and C all differ and the device FAILs even alone.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the parent parses the variable without paying for torch
    import torch

    from gpudoc.smoke.net import Net
    from gpudoc.smoke.train import StepHook

ENV = "GPUDOC_SMOKE_INJECT"
FAULTS = ("crash", "hang", "nan", "bitflip", "flaky")
BITFLIP_BIT = 22


RANK_PHASES = ("start", "smoke", "collectives", "ddp")


@dataclass(frozen=True)
class Fault:
    kind: str
    index: int
    rank: bool = False  # ``index`` is a rank of a --distributed job, not a worker index
    phase: str = "smoke"


def parse(spec: str) -> tuple[Fault, ...]:
    """``"nan:1,crash:0"`` -> its faults; ``ValueError`` with a one-line message otherwise."""
    faults = []
    for item in spec.split(","):
        kind, _, index = item.strip().partition(":")
        rank = index.startswith("rank=")
        index, _, phase = index.removeprefix("rank=").partition("@")
        if kind not in FAULTS or not index.isdigit() or (phase and not rank):
            raise ValueError(f"{ENV}={spec!r}: expected {_EXPECTED}")
        if phase and phase not in RANK_PHASES:
            raise ValueError(f"{ENV}={spec!r}: phase {phase!r} is not one of {RANK_PHASES}")
        faults.append(Fault(kind, int(index), rank, phase or "smoke"))
    return tuple(faults)


_EXPECTED = (
    f"<fault>:<worker-index>[,...], or <fault>:rank=<r>[@<phase>] under --distributed, with "
    f"fault one of {', '.join(FAULTS)}"
)


def from_env(environ: Mapping[str, str] = os.environ) -> tuple[Fault, ...]:
    spec = environ.get(ENV, "").strip()
    return parse(spec) if spec else ()


def fault_for(index: int, environ: Mapping[str, str] = os.environ) -> Fault | None:
    return next((f for f in from_env(environ) if f.index == index and not f.rank), None)


def faults_for_rank(rank: int, environ: Mapping[str, str] = os.environ) -> tuple[Fault, ...]:
    return tuple(f for f in from_env(environ) if f.rank and f.index == rank)


def strikes(fault: Fault, run: int) -> bool:
    """Whether ``fault`` strikes training run ``run`` (0 = A, 1 = B, 2 = the re-run C)."""
    return run == 0 or fault.kind == "flaky"


def hook(
    fault: Fault, at_step: int, announce: Callable[[str, int], None], run: int = 0
) -> StepHook:
    """A step hook that strikes once, after optimizer step ``at_step`` of training run ``run``."""
    import torch

    def strike(step: int, net: Net) -> None:
        if step != at_step:
            return
        announce(fault.kind, step)
        stop(fault.kind)
        with torch.no_grad():
            spoil(fault.kind, net.fc1.weight, element=run)

    return strike


def stop(kind: str) -> None:
    """``crash`` kills this process and ``hang`` stops it for good; other faults do nothing."""
    if kind == "crash":
        _crash()
    elif kind == "hang":
        while True:
            time.sleep(1)


def spoil(kind: str, tensor: torch.Tensor, element: int = 0) -> None:
    """``nan``, ``bitflip`` or ``flaky`` (a bitflip) one element of a float32 ``tensor``, in
    place."""
    import torch

    with torch.no_grad():
        flat = tensor.view(-1)
        if kind == "nan":
            flat[element] = float("nan")
        elif kind in ("bitflip", "flaky"):
            flat.view(torch.int32)[element] ^= 1 << BITFLIP_BIT


def _crash() -> None:
    sys.stdout.flush()
    if hasattr(signal, "SIGSEGV") and os.name == "posix":
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file in the user's directory
        os.kill(os.getpid(), signal.SIGSEGV)
    os._exit(139)
