"""How fast is `gpudoc smoke` on the CPU? Prints wall times and the ratios the issue sets.

    python bench/smoke_speed.py [--repeat 3] [--quick]

- one CPU device, full default recipe, wall time including Python start and the torch import,
  as a ratio of the 20 s budget (must be < 1);
- two CPU workers in parallel against one (must be < 1.5);
- where the time goes inside one worker (from its JSON: seconds per device vs wall).

Medians of --repeat runs. The machine should be otherwise idle: the load average is printed, and
CPU time (which other processes do not inflate) is printed beside wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from timing import timed

BUDGET_S = 20.0


def run(devices: int, quick: bool) -> tuple[float, float, dict]:
    args = [sys.executable, "-m", "gpudoc", "smoke", "--json"]
    args += ["--device", "cpu"] * devices
    args += ["--quick"] if quick else []
    done = timed(args)
    if done.returncode != 0:
        sys.exit(f"gpudoc smoke failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.wall_s, done.cpu_s, json.loads(done.stdout)


def median_run(devices: int, quick: bool, repeat: int) -> tuple[float, float, dict]:
    runs = [run(devices, quick) for _ in range(repeat)]
    wall = statistics.median(w for w, _, _ in runs)
    cpu = statistics.median(c for _, c, _ in runs)
    walls = ", ".join(f"{w:.2f}" for w, _, _ in runs)
    print(f"  {devices} CPU worker(s): wall {walls} s; CPU time (all processes) {cpu:.2f} s")
    return wall, cpu, runs[-1][2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    one, one_cpu, report = median_run(1, options.quick, options.repeat)
    two, two_cpu, _ = median_run(2, options.quick, options.repeat)
    (result,) = report["results"]
    speeds = ", ".join(
        f"b{t['batch_size']} {t['images_per_s']:.0f} img/s" for t in result["throughput"]
    )
    print(f"one worker: {result['seconds']:.2f} s in run_device, {one:.2f} s wall; {speeds}")
    print(f"ratio one-device wall / {BUDGET_S:.0f} s budget: {one / BUDGET_S:.2f}  (must be < 1)")
    print(f"ratio two workers / one worker:      {two / one:.2f}  (must be < 1.5)")
    # On a busy machine wall time measures the neighbours; CPU time does not.
    print(f"ratio of CPU time, two / one:        {two_cpu / one_cpu:.2f}  (2.0 = no shared work)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
