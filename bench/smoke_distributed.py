"""What does `gpudoc smoke --distributed` cost over the plain smoke? Prints wall, CPU and ratios.

    python bench/smoke_distributed.py [--repeat 1] [--full]

- one CPU device, `gpudoc smoke --device cpu` (the baseline);
- a job of one rank and of two CPU ranks under torchrun (`--standalone`), with the ratio of each
  to the baseline (the price of torchrun, the store, the collectives and the DDP steps);
- the two-rank job against the 60 s the issue allows.

--quick unless --full. Medians of --repeat runs. CPU time (user + sys of every process) is not
inflated by other load; wall time is: the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from timing import timed

BUDGET_S = 60.0
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone"]


def run(command: list[str]) -> tuple[float, float]:
    done = timed(command)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.wall_s, done.cpu_s


def median(label: str, command: list[str], repeat: int) -> tuple[float, float]:
    runs = [run(command) for _ in range(repeat)]
    wall = statistics.median(w for w, _ in runs)
    cpu = statistics.median(c for _, c in runs)
    print(f"  {label:<28} wall {wall:6.1f} s   CPU {cpu:6.1f} s")
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--full", action="store_true", help="the full recipe, not --quick")
    args = parser.parse_args()
    smoke = ["-m", "gpudoc", "smoke", "--device", "cpu"] + ([] if args.full else ["--quick"])
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    base = median("gpudoc smoke, 1 CPU device", [sys.executable, *smoke], args.repeat)
    ratios = []
    for ranks in (1, 2):
        command = [*TORCHRUN, "--nproc-per-node", str(ranks), *smoke, "--distributed"]
        wall, cpu = median(f"--distributed, {ranks} rank(s)", command, args.repeat)
        ratios.append((ranks, wall / base[0], cpu / base[1], wall))
    for ranks, wall_ratio, cpu_ratio, _ in ratios:
        print(f"  {ranks} rank(s) / plain smoke: wall {wall_ratio:.2f}x, CPU {cpu_ratio:.2f}x")
    two = ratios[-1][3]
    print(f"  2 ranks / {BUDGET_S:.0f} s budget: {two / BUDGET_S:.2f} (must be < 1)")


if __name__ == "__main__":
    main()
