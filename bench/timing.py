"""How every bench times a command: wall seconds, and the CPU seconds (user + sys) of the
command and all its children, from this process's RUSAGE_CHILDREN before and after."""

from __future__ import annotations

import os
import resource
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Timed:
    wall_s: float
    cpu_s: float
    returncode: int
    stdout: str
    stderr: str


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(
    command: Sequence[str], env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Timed:
    """One run of ``command`` with this checkout first on PYTHONPATH, plus ``env``."""
    environ = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    cpu, start = children_cpu_s(), time.perf_counter()
    done = subprocess.run(
        list(command), capture_output=True, text=True, env=environ, cwd=cwd, check=False
    )
    wall = time.perf_counter() - start
    return Timed(wall, children_cpu_s() - cpu, done.returncode, done.stdout, done.stderr)
