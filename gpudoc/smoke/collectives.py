"""What only a job of several ranks can check: exact collectives, bus bandwidth, DDP steps.

Collective payloads are small integers stored as float32: every partial sum stays below 2**24, so
the result is exact in any summation order and any wrong element is a fault, never rounding. The
DDP steps must leave every rank bitwise identical, and close to one process that trains on the
whole global batch on the CPU (what data parallelism promises: a different summation order only).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from gpudoc.smoke.checks import clean
from gpudoc.smoke.data import Data, normalise
from gpudoc.smoke.model import Recipe
from gpudoc.smoke.net import Net, build_net
from gpudoc.smoke.train import fingerprint

REDUCE_ELEMENTS = 1 << 20  # 4 MiB of float32
GATHER_ELEMENTS = 1 << 14  # per rank: 64 KiB, so 1024 ranks gather 64 MiB
BANDWIDTH_ELEMENTS = 1 << 22  # 16 MiB
BANDWIDTH_ITERATIONS = 5
DDP_STEPS = 20
# The reference trains on the global batch on one CPU core; beyond this it costs seconds.
REFERENCE_MAX_IMAGES = 2048

Corrupt = Callable[[torch.Tensor], None]
"""Fault injection: spoils this rank's copy of a collective's result, as a bad receiver would."""


@dataclass(frozen=True)
class CollectiveOutcome:
    all_reduce_wrong: int
    all_gather_wrong: int
    all_gather_wrong_from: dict[str, int]  # source rank -> wrong elements received from it
    broadcast_wrong: int
    bandwidth_bytes: int
    bandwidth_seconds: float | None  # one all_reduce of bandwidth_bytes, best of a few


def pattern(rank: int, count: int, device: torch.device) -> torch.Tensor:
    """Integers 0..63 that differ per rank: exact in float32 for sums of up to 2**18 ranks."""
    values = (torch.arange(count, dtype=torch.int64) * 7 + rank * 13) % 64
    return values.to(device=device, dtype=torch.float32)


def check_collectives(
    rank: int, world: int, device: torch.device, corrupt: Corrupt | None = None
) -> CollectiveOutcome:
    """all_reduce, all_gather and broadcast, each compared element by element with the truth."""
    spoil = corrupt or (lambda tensor: None)
    reduced = pattern(rank, REDUCE_ELEMENTS, device)
    dist.all_reduce(reduced)
    spoil(reduced)
    expected = sum(pattern(r, REDUCE_ELEMENTS, torch.device("cpu")) for r in range(world))
    reduce_wrong = _wrong(reduced, expected)

    gathered = [torch.empty(GATHER_ELEMENTS, device=device) for _ in range(world)]
    dist.all_gather(gathered, pattern(rank, GATHER_ELEMENTS, device))
    spoil(gathered[-1])
    wrong_from = {
        source: _wrong(part, pattern(source, GATHER_ELEMENTS, torch.device("cpu")))
        for source, part in enumerate(gathered)
    }

    root = world - 1  # not rank 0: rank 0 is the root of too much already
    sent = pattern(root + 1, REDUCE_ELEMENTS, device) if rank == root else None
    received = sent if sent is not None else torch.zeros(REDUCE_ELEMENTS, device=device)
    dist.broadcast(received, src=root)
    spoil(received)
    broadcast_wrong = _wrong(received, pattern(root + 1, REDUCE_ELEMENTS, torch.device("cpu")))
    return CollectiveOutcome(
        reduce_wrong,
        sum(wrong_from.values()),
        {str(source): count for source, count in wrong_from.items() if count},
        broadcast_wrong,
        BANDWIDTH_ELEMENTS * 4,
        _all_reduce_seconds(device) if world > 1 else None,
    )


def _wrong(result: torch.Tensor, expected: torch.Tensor) -> int:
    return int((result.to("cpu") != expected).sum())


def _all_reduce_seconds(device: torch.device) -> float:
    payload = torch.ones(BANDWIDTH_ELEMENTS, device=device)
    dist.all_reduce(payload)  # warm-up: connections, buffers
    best = float("inf")
    for _ in range(BANDWIDTH_ITERATIONS):
        _synchronize(device)
        start = time.perf_counter()
        dist.all_reduce(payload)
        _synchronize(device)
        best = min(best, time.perf_counter() - start)
    return best


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class MomentumSGD:
    """torch.optim.SGD's momentum update, element for element. Its first use in a process
    imports torch._dynamo (4-5 s on a busy CPU), a cost a few steps cannot carry."""

    def __init__(self, params: list[torch.Tensor], recipe: Recipe) -> None:
        self.params, self.lr, self.momentum = params, recipe.lr, recipe.momentum
        self.buffers: list[torch.Tensor | None] = [None] * len(params)

    def zero_grad(self) -> None:
        for param in self.params:
            param.grad = None

    def step(self) -> None:
        with torch.no_grad():
            for i, param in enumerate(self.params):
                if param.grad is None:
                    continue
                buffer = self.buffers[i]
                if buffer is None:
                    buffer = self.buffers[i] = param.grad.detach().clone()
                else:
                    buffer.mul_(self.momentum).add_(param.grad)
                param.add_(buffer, alpha=-self.lr)


@dataclass(frozen=True)
class DdpOutcome:
    fingerprint: str
    finite: bool
    rel_err_vs_reference: float | None  # None when the job is too large for the reference


def global_batches(
    data: Data, recipe: Recipe, seed: int, world: int, steps: int
) -> list[torch.Tensor]:
    """Each step's global batch (world x batch indices, on the CPU); rank r takes slice r."""
    generator = torch.Generator().manual_seed(seed + 2)
    count = data.train_labels.shape[0]
    size = world * recipe.batch_size
    return [torch.randint(0, count, (size,), generator=generator) for _ in range(steps)]


def ddp_steps(
    data: Data, recipe: Recipe, seed: int, rank: int, world: int, device: torch.device
) -> tuple[Net, list[float]]:
    """DDP training on this rank's slice of each global batch; gradients averaged by all_reduce."""
    net = build_net(seed).to(device)
    model = DistributedDataParallel(
        net, device_ids=[device.index] if device.type == "cuda" else None
    )
    optimizer = MomentumSGD(list(model.parameters()), recipe)
    losses = []
    size = recipe.batch_size
    for batch in global_batches(data, recipe, seed, world, DDP_STEPS):
        index = batch[rank * size : (rank + 1) * size].to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(normalise(data.train_images[index])), data.train_labels[index])
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return net, losses


def reference(data: Data, recipe: Recipe, seed: int, world: int) -> Net | None:
    """One process on the CPU, the whole global batch: what every rank must approximate. float32:
    reordering noise is ~1e-8 this early (design notes, 2.2), and float64 would cost 10x."""
    if world * recipe.batch_size > REFERENCE_MAX_IMAGES:
        return None
    net: Net = build_net(seed)
    optimizer = MomentumSGD(list(net.parameters()), recipe)
    images, labels = data.train_images.to("cpu"), data.train_labels.to("cpu")
    for batch in global_batches(data, recipe, seed, world, DDP_STEPS):
        optimizer.zero_grad()
        F.cross_entropy(net(normalise(images[batch])), labels[batch]).backward()
        optimizer.step()
    return net


def outcome(net: Net, losses: list[float], single: Net | None) -> DdpOutcome:
    params = torch.cat([p.detach().reshape(-1).to("cpu", torch.float64) for p in net.parameters()])
    finite = bool(torch.isfinite(params).all()) and all(clean(v) is not None for v in losses)
    rel_err = None
    if single is not None:
        expected = torch.cat([p.detach().reshape(-1).double() for p in single.parameters()])
        rel_err = clean(float((params - expected).norm() / expected.norm().clamp_min(1e-30)))
    return DdpOutcome(fingerprint(net), finite, rel_err)
