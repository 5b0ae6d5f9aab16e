"""Overhead of `gpudoc run --emulate-cuda` against the same work on the plain CPU.

Two measurements, both printed as ratios (emulated / plain; the issue's budget is 3x):

1. whole script: fixtures/emulate/tutorial_fixed.py run by `python` (torch sees no GPU, so it
   trains on the CPU) and by `gpudoc run --emulate-cuda`, each in a fresh process; CPU seconds
   (user + sys) of the child, best of N alternating runs. This includes start-up.
2. steady state: one training step of the tutorial's Net (forward, backward, SGD with momentum)
   at batch sizes 4 (the tutorial's) and 64, in-process, one thread; plain and emulated rounds
   alternate, and the fastest round of each counts (on a shared machine, other jobs only ever
   make a round slower), so the per-operation figure holds still under load. A third kind of
   round runs the same step on the cheapest wrapper tensor subclass (subclass_floor.py, nothing
   of gpudoc in it): what any tensor subclass costs in PyTorch, so the emulator's figure minus
   the floor's is gpudoc's own work. A fourth runs it on a subclass with only torch.Tensor's own
   __torch_function__ (no dispatch to Python per ATen operation): the floor of a different design.

Usage: python bench/emulate_overhead.py [--runs 3 (0: steady state only)] [--steps 5] [--rounds 60]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import subclass_floor
from timing import REPO, timed

SCRIPT = REPO / "fixtures" / "emulate" / "tutorial_fixed.py"


def child_cpu_seconds(command: list[str]) -> tuple[float, float]:
    done = timed(command)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return done.cpu_s, done.wall_s


def whole_script(runs: int) -> None:
    plain = [sys.executable, str(SCRIPT)]
    emulated = [sys.executable, "-m", "gpudoc", "run", "--emulate-cuda", str(SCRIPT)]
    best = {"plain": (1e9, 1e9), "emulated": (1e9, 1e9)}
    for _ in range(runs):
        for name, command in (("plain", plain), ("emulated", emulated)):
            cpu, wall = child_cpu_seconds(command)
            best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
    (plain_cpu, plain_wall), (emu_cpu, emu_wall) = best["plain"], best["emulated"]
    print(f"whole script ({SCRIPT.relative_to(REPO)}, best of {runs}):")
    print(f"  plain CPU   {plain_cpu:6.2f} s CPU  {plain_wall:6.2f} s wall")
    print(f"  emulated    {emu_cpu:6.2f} s CPU  {emu_wall:6.2f} s wall")
    print(f"  ratio       {emu_cpu / plain_cpu:6.2f}x CPU  {emu_wall / plain_wall:6.2f}x wall")


def steady_state(steps: int, rounds: int) -> None:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    from gpudoc.emulate.patches import emulated_cuda
    from gpudoc.emulate.state import STATE

    torch.set_num_threads(1)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.pool = nn.Conv2d(3, 6, 5), nn.MaxPool2d(2, 2)
            self.conv2, self.fc1 = nn.Conv2d(6, 16, 5), nn.Linear(400, 120)
            self.fc2, self.fc3 = nn.Linear(120, 84), nn.Linear(84, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = F.relu(self.fc1(torch.flatten(x, 1)))
            return self.fc3(F.relu(self.fc2(x)))

    def training_step(device: str, batch: int) -> Callable[[], None]:
        inputs, labels = torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,))
        if device == "floor":
            net = subclass_floor.wrap_module(Net())
        elif device == "function-only":
            net = subclass_floor.wrap_function_only(Net())
        else:
            net = Net().to(device)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
        criterion = nn.CrossEntropyLoss()

        def to(tensor: torch.Tensor) -> torch.Tensor:
            if device == "floor":
                return subclass_floor.wrap(tensor.clone())
            if device == "function-only":
                return tensor.as_subclass(subclass_floor.FunctionOnlyTensor)
            return tensor.to(device)

        def step() -> None:
            x, y = to(inputs), to(labels)
            optimizer.zero_grad()
            criterion(net(x), y).backward()
            optimizer.step()

        return step

    def round_ms(step: Callable[[], None]) -> float:
        step()  # warm
        started = time.process_time()
        for _ in range(steps):
            step()
        return (time.process_time() - started) / steps * 1000

    print(f"steady state (one training step of the tutorial Net; {rounds} alternating rounds of")
    print(f"{steps} steps, CPU time; the fastest round of each counts)")
    for batch in (4, 64):
        plain_step, floor_step = training_step("cpu", batch), training_step("floor", batch)
        function_step = training_step("function-only", batch)
        with emulated_cuda(1):
            emulated_step = training_step("cuda", batch)
        plain, emulated, floor, function_only = 1e9, 1e9, 1e9, 1e9
        for _ in range(rounds):
            plain = min(plain, round_ms(plain_step))
            with emulated_cuda(1):
                emulated = min(emulated, round_ms(emulated_step))
                ops = STATE.ops_on_device // (steps + 1)  # ATen operations per step
            floor = min(floor, round_ms(floor_step))
            function_only = min(function_only, round_ms(function_step))
        per_op_us = (emulated - plain) * 1000 / ops
        print(
            f"  batch {batch:3d}   plain {plain:7.2f} ms   emulated {emulated:7.2f} ms"
            f"   ratio {emulated / plain:5.2f}x   {ops} ops/step, {per_op_us:5.1f} us/op added"
        )
        floor_us = (floor - plain) * 1000 / ops
        print(
            f"             floor {floor:7.2f} ms (any wrapper subclass, {floor_us:5.1f} us/op):"
            f" gpudoc's own work {per_op_us - floor_us:5.1f} us/op"
        )
        function_us = (function_only - plain) * 1000 / ops
        print(
            f"             function-only subclass {function_only:7.2f} ms "
            f"({function_us:5.1f} us/op: Python per torch call, no per-ATen-op dispatch)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5, help="training steps per round")
    parser.add_argument("--rounds", type=int, default=60)
    options = parser.parse_args()
    sys.path.insert(0, str(REPO))
    if options.runs > 0:  # --runs 0: the steady state only
        whole_script(options.runs)
    steady_state(options.steps, options.rounds)


if __name__ == "__main__":
    main()
