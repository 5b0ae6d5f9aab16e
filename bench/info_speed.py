"""How fast is `gpudoc info`? Prints median wall times side by side with
`python -m torch.utils.collect_env` (the usual peer) and `python -c "import torch"` (the floor for
anything that asks torch), as ratios. Targets: `--no-torch` within 0.3 s; `gpudoc info` within
1 s of `import torch`.

    python bench/info_speed.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
COMMANDS = {
    "gpudoc info --no-torch": [PY, "-m", "gpudoc", "info", "--no-torch"],
    "gpudoc info --no-torch --json": [PY, "-m", "gpudoc", "info", "--no-torch", "--json"],
    "gpudoc info": [PY, "-m", "gpudoc", "info"],
    "gpudoc info --json": [PY, "-m", "gpudoc", "info", "--json"],
    'python -c "import torch"': [PY, "-c", "import torch"],
    "python -m torch.utils.collect_env": [PY, "-m", "torch.utils.collect_env"],
}


def measure(command: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (user + sys of the command and its children) per run."""
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    measure(COMMANDS['python -c "import torch"'], 1)  # warm the page cache
    medians, cpu = {}, {}
    load = os.getloadavg()[0]
    for name, command in COMMANDS.items():
        walls, cpus = measure(command, runs)
        medians[name], cpu[name] = statistics.median(walls), statistics.median(cpus)
        print(f"  measured {name}: min wall {min(walls):.3f} s", file=sys.stderr)
    peer = medians["python -m torch.utils.collect_env"]
    print(f"median of {runs} runs; {os.cpu_count()} CPUs, load average {load:.1f} at start")
    print(f"{'command':<36} {'wall s':>7} {'CPU s':>7} {'wall vs collect_env':>20}")
    for name, seconds in medians.items():
        print(f"{name:<36} {seconds:>7.3f} {cpu[name]:>7.3f} {seconds / peer:>19.2f}x")
    over_torch = medians["gpudoc info"] - medians['python -c "import torch"']
    print(f"gpudoc info --no-torch: {medians['gpudoc info --no-torch']:.3f} s (target <= 0.3 s)")
    print(f"gpudoc info minus import torch: {over_torch:+.3f} s (target <= 1 s)")


if __name__ == "__main__":
    main()
