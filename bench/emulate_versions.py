"""Per-operation cost of two gpudoc checkouts' emulators, measured side by side.

One worker process per checkout (``PYTHONPATH`` set to it) builds the same training step as
emulate_overhead.py (the tutorial's Net, forward, backward, SGD with momentum, one thread) and
times one round when asked. The parent alternates the workers' plain and emulated rounds, so
both checkouts meet the same machine load; the fastest round of each counts. The figure is the
microseconds the emulator adds per ATen operation: (emulated - plain) / operations per step.

Usage: python bench/emulate_versions.py OLD_CHECKOUT [NEW_CHECKOUT (default: this one)]
       [--rounds 40] [--steps 5] [--batch 4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from timing import REPO

WORKER = r"""
import json, sys, time
import torch, torch.nn as nn, torch.nn.functional as F
from gpudoc.emulate.patches import emulated_cuda
from gpudoc.emulate.state import STATE
torch.set_num_threads(1)
steps, batch = int(sys.argv[1]), int(sys.argv[2])

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.pool = nn.Conv2d(3, 6, 5), nn.MaxPool2d(2, 2)
        self.conv2, self.fc1 = nn.Conv2d(6, 16, 5), nn.Linear(400, 120)
        self.fc2, self.fc3 = nn.Linear(120, 84), nn.Linear(84, 10)
    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc3(F.relu(self.fc2(x)))

def training_step(device):
    inputs, labels = torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,))
    net = Net().to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    def step():
        x, y = inputs.to(device), labels.to(device)
        optimizer.zero_grad()
        criterion(net(x), y).backward()
        optimizer.step()
    return step

def round_ms(step):
    step()
    started = time.process_time()
    for _ in range(steps):
        step()
    return (time.process_time() - started) / steps * 1000

plain = training_step("cpu")
with emulated_cuda(1):
    emulated = training_step("cuda")
for line in sys.stdin:
    if line.strip() == "plain":
        print(json.dumps({"ms": round_ms(plain)}), flush=True)
    else:
        with emulated_cuda(1):
            STATE.ops_on_device = 0
            ms = round_ms(emulated)
            ops = STATE.ops_on_device // (steps + 1)
        print(json.dumps({"ms": ms, "ops": ops}), flush=True)
"""


def start(checkout: Path, steps: int, batch: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    command = [sys.executable, "-c", WORKER, str(steps), str(batch)]
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=checkout
    )


def ask(worker: subprocess.Popen[str], kind: str) -> dict[str, float]:
    assert worker.stdin is not None and worker.stdout is not None
    worker.stdin.write(kind + "\n")
    worker.stdin.flush()
    line = worker.stdout.readline()
    if not line:
        sys.exit(f"a worker stopped (exit {worker.wait()})")
    answer: dict[str, float] = json.loads(line)
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path, nargs="?", default=REPO)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=4)
    options = parser.parse_args()
    checkouts = {"old": options.old.resolve(), "new": options.new.resolve()}
    workers = {name: start(path, options.steps, options.batch) for name, path in checkouts.items()}
    best = {(name, kind): 1e9 for name in workers for kind in ("plain", "emulated")}
    ops = dict.fromkeys(workers, 0.0)
    try:
        for _ in range(options.rounds):
            for name, worker in workers.items():
                for kind in ("plain", "emulated"):
                    answer = ask(worker, kind)
                    best[name, kind] = min(best[name, kind], answer["ms"])
                    ops[name] = answer.get("ops", ops[name])
    finally:
        for worker in workers.values():
            worker.kill()
    print(f"training step, batch {options.batch}: {options.rounds} alternating rounds of ")
    print(f"{options.steps} steps per checkout, CPU time, the fastest round of each counts")
    added = {}
    for name, path in checkouts.items():
        plain, emulated = best[name, "plain"], best[name, "emulated"]
        added[name] = (emulated - plain) * 1000 / ops[name]
        print(
            f"  {name} ({path.name}): plain {plain:7.2f} ms  emulated {emulated:7.2f} ms"
            f"  {ops[name]:.0f} ops/step  {added[name]:5.1f} us/op added"
        )
    print(f"  old / new per-op cost: {added['old'] / added['new']:.2f}x")


if __name__ == "__main__":
    main()
