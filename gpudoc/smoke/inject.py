"""Fault injection, a documented testing aid: ``GPUDOC_SMOKE_INJECT=<fault>:<worker-index>``.

Several faults, one per worker, may be given with commas: ``crash:0,nan:2``.

Each fault strikes worker ``index`` once, halfway through its first training run, and must turn
exactly that worker's row into a failure whose reason names the fault:

- ``crash``: the process dies from SIGSEGV, as a crashing driver library would;
- ``hang``: the process stops making progress, as a wedged GPU would; the watchdog kills it;
- ``nan``: one weight becomes NaN;
- ``bitflip``: bit 22 (the mantissa's top bit) of one weight flips, a silent data corruption
  that leaves loss and accuracy unchanged; only the bitwise checks see it.
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
    from gpudoc.smoke.net import Net
    from gpudoc.smoke.train import StepHook

ENV = "GPUDOC_SMOKE_INJECT"
FAULTS = ("crash", "hang", "nan", "bitflip")
BITFLIP_BIT = 22


@dataclass(frozen=True)
class Fault:
    kind: str
    index: int


def parse(spec: str) -> tuple[Fault, ...]:
    """``"nan:1,crash:0"`` -> its faults; ``ValueError`` with a one-line message otherwise."""
    faults = []
    for item in spec.split(","):
        kind, _, index = item.strip().partition(":")
        if kind not in FAULTS or not index.isdigit():
            expected = f"<fault>:<worker-index>[,...] with fault one of {', '.join(FAULTS)}"
            raise ValueError(f"{ENV}={spec!r}: expected {expected}")
        faults.append(Fault(kind, int(index)))
    return tuple(faults)


def from_env(environ: Mapping[str, str] = os.environ) -> tuple[Fault, ...]:
    spec = environ.get(ENV, "").strip()
    return parse(spec) if spec else ()


def fault_for(index: int, environ: Mapping[str, str] = os.environ) -> Fault | None:
    return next((f for f in from_env(environ) if f.index == index), None)


def hook(fault: Fault, at_step: int, announce: Callable[[str, int], None]) -> StepHook:
    """A step hook that strikes once, after optimizer step ``at_step``."""
    import torch

    def strike(step: int, net: Net) -> None:
        if step != at_step:
            return
        announce(fault.kind, step)
        if fault.kind == "crash":
            _crash()
        elif fault.kind == "hang":
            while True:
                time.sleep(1)
        with torch.no_grad():
            weight = net.fc1.weight
            if fault.kind == "nan":
                weight[0, 0] = float("nan")
            else:
                bits = weight.view(torch.int32).view(-1)
                bits[0] ^= 1 << BITFLIP_BIT

    return strike


def _crash() -> None:
    sys.stdout.flush()
    if hasattr(signal, "SIGSEGV") and os.name == "posix":
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file in the user's directory
        os.kill(os.getpid(), signal.SIGSEGV)
    os._exit(139)
