"""How fast is `gpudoc info`? Prints median wall times side by side with
`python -m torch.utils.collect_env` (the usual peer) and `python -c "import torch"` (the floor for
anything that asks torch), as ratios. Targets: `--no-torch` within 0.3 s; `gpudoc info` within
1 s of `import torch`.

    python bench/info_speed.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from timing import timed

PY = sys.executable
COMMANDS = {
    "gpudoc info --no-torch": [PY, "-m", "gpudoc", "info", "--no-torch"],
    "gpudoc info --no-torch --json": [PY, "-m", "gpudoc", "info", "--no-torch", "--json"],
    "gpudoc info": [PY, "-m", "gpudoc", "info"],
    "gpudoc info --json": [PY, "-m", "gpudoc", "info", "--json"],
    'python -c "import torch"': [PY, "-c", "import torch"],
    "python -m torch.utils.collect_env": [PY, "-m", "torch.utils.collect_env"],
}


def measure_once(command: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + sys of the command and its children) of one run."""
    done = timed(command, env={"NO_COLOR": "1"})
    return done.wall_s, done.cpu_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    measure_once(COMMANDS['python -c "import torch"'])  # warm the page cache
    load = os.getloadavg()[0]
    walls: dict[str, list[float]] = {name: [] for name in COMMANDS}
    cpus: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(runs):  # round-robin, so that other load on the machine hits every command
        for name, command in COMMANDS.items():
            wall, cpu_s = measure_once(command)
            walls[name].append(wall)
            cpus[name].append(cpu_s)
    medians = {name: statistics.median(times) for name, times in walls.items()}
    cpu = {name: statistics.median(times) for name, times in cpus.items()}
    peer = medians["python -m torch.utils.collect_env"]
    print(f"median of {runs} runs; {os.cpu_count()} CPUs, load average {load:.1f} at start")
    print(f"{'command':<36} {'wall s':>7} {'CPU s':>7} {'wall vs collect_env':>20}")
    for name, seconds in medians.items():
        print(f"{name:<36} {seconds:>7.3f} {cpu[name]:>7.3f} {seconds / peer:>19.2f}x")
    torch_floor = 'python -c "import torch"'
    over_torch = medians["gpudoc info"] - medians[torch_floor]
    over_torch_cpu = cpu["gpudoc info"] - cpu[torch_floor]
    print(f"gpudoc info --no-torch: {medians['gpudoc info --no-torch']:.3f} s (target <= 0.3 s)")
    print(
        f"gpudoc info minus import torch: {over_torch:+.3f} s wall, {over_torch_cpu:+.3f} s CPU "
        "(target <= 1 s)"
    )


if __name__ == "__main__":
    main()
