"""Training, evaluation and measurement on one device: the numbers the checks judge.

Nothing here prints or decides a verdict: ``checks.py`` turns these numbers into checks.
"""

from __future__ import annotations

import hashlib
import io
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.optim.sgd import sgd

from gpudoc.smoke.data import Data, normalise, tensor_bytes
from gpudoc.smoke.model import Recipe
from gpudoc.smoke.net import Net, build_net

StepHook = Callable[[int, Net], None]
"""Called after every optimizer step with the step index and the model (progress, injection)."""


class SGD:
    """``torch.optim.SGD(params, lr, momentum)`` through its functional API ``torch.optim.sgd.sgd``.

    The same update, kernels and foreach/single-tensor choice as the class (a test holds them
    bitwise equal), without the class's bookkeeping, whose first use imports torch._dynamo:
    1.2 s of CPU per worker, as much as importing torch.
    """

    def __init__(self, params: Iterable[torch.Tensor], lr: float, momentum: float) -> None:
        self.params = list(params)
        self.lr, self.momentum = lr, momentum
        self.buffers: list[torch.Tensor | None] = [None] * len(self.params)

    def zero_grad(self) -> None:
        for param in self.params:
            param.grad = None  # the class's default, set_to_none=True

    def step(self) -> None:
        with torch.no_grad():
            sgd(
                self.params,
                [p.grad for p in self.params],
                self.buffers,
                weight_decay=0.0,
                momentum=self.momentum,
                lr=self.lr,
                dampening=0.0,
                nesterov=False,
                maximize=False,
            )


@dataclass(frozen=True)
class Lockstep:
    """One step recomputed in float64 on the CPU from the same weights and batch."""

    step: int
    logits_rel_err: float
    grads_rel_err: float


@dataclass(frozen=True)
class RunOutcome:
    losses: tuple[float, ...]
    lockstep: tuple[Lockstep, ...]
    fingerprint: str
    params_finite: bool
    net: Net


def fingerprint(net: torch.nn.Module) -> str:
    """SHA-256 of every parameter and buffer, in state_dict order: equal iff bitwise equal."""
    digest = hashlib.sha256()
    for name, tensor in net.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor_bytes(tensor))
    return digest.hexdigest()


def batches(data: Data, batch_size: int, steps: int, seed: int) -> list[torch.Tensor]:
    """Index batches for ``steps`` steps, reshuffled each epoch from a CPU generator, on-device."""
    generator = torch.Generator().manual_seed(seed)
    count = data.train_labels.shape[0]
    if count < batch_size:
        raise ValueError(f"{count} training images, fewer than one batch of {batch_size}")
    device = data.train_labels.device
    out: list[torch.Tensor] = []
    while len(out) < steps:
        order = torch.randperm(count, generator=generator).to(device)
        full = count // batch_size
        out.extend(order[i * batch_size : (i + 1) * batch_size] for i in range(full))
    return out[:steps]


def train(
    data: Data,
    recipe: Recipe,
    seed: int,
    device: torch.device,
    hook: StepHook | None = None,
    lockstep: bool = True,
) -> RunOutcome:
    """One training run from the seed's initial weights; data must already be on ``device``."""
    net = build_net(seed).to(device)
    optimizer = SGD(net.parameters(), lr=recipe.lr, momentum=recipe.momentum)
    losses: list[torch.Tensor] = []
    samples: list[Lockstep] = []
    for step, index in enumerate(batches(data, recipe.batch_size, recipe.steps, seed + 1)):
        images, labels = normalise(data.train_images[index]), data.train_labels[index]
        optimizer.zero_grad()
        logits = net(images)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        if lockstep and step in recipe.lockstep_steps:
            samples.append(compare_with_float64(step, net, images, labels, logits))
        optimizer.step()
        losses.append(loss.detach())
        if hook is not None:
            hook(step, net)
    finite = all(bool(torch.isfinite(p).all()) for p in net.parameters())
    loss_values = tuple(float(v) for v in torch.stack(losses).cpu()) if losses else ()
    return RunOutcome(loss_values, tuple(samples), fingerprint(net), finite, net)


def compare_with_float64(
    step: int, net: Net, images: torch.Tensor, labels: torch.Tensor, logits: torch.Tensor
) -> Lockstep:
    """Redo this step's forward and backward in float64 on the CPU; relative L2 errors."""
    reference = Net().double()
    with torch.no_grad():
        for ref, param in zip(reference.parameters(), net.parameters(), strict=True):
            ref.copy_(param.detach().to("cpu", torch.float64))
    ref_logits = reference(images.detach().to("cpu", torch.float64))
    F.cross_entropy(ref_logits, labels.to("cpu")).backward()
    grads = torch.cat([_flat_grad(p) for p in net.parameters()]).to("cpu", torch.float64)
    ref_grads = torch.cat([_flat_grad(p) for p in reference.parameters()])
    return Lockstep(
        step,
        _relative_error(logits.detach().to("cpu", torch.float64), ref_logits.detach()),
        _relative_error(grads, ref_grads),
    )


def _flat_grad(param: torch.Tensor) -> torch.Tensor:
    grad = param.grad
    return torch.zeros(param.numel()) if grad is None else grad.detach().reshape(-1)


def _relative_error(value: torch.Tensor, reference: torch.Tensor) -> float:
    scale = float(reference.norm())
    return float((value - reference).norm()) / scale if scale > 0 else float((value).norm())


def predict(net: Net, images: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Logits for device-resident ``images``, evaluated ``batch_size`` at a time."""
    parameter = next(net.parameters())
    if images.device != parameter.device:
        raise RuntimeError(f"eval data on {images.device}, model on {parameter.device}")
    net.eval()
    with torch.no_grad():
        out = torch.cat(
            [net(normalise(images[i : i + batch_size])) for i in range(0, len(images), batch_size)]
        )
    net.train()
    return out


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    return float((logits.argmax(dim=1) == labels).float().mean())


def round_trip(net: Net, device: torch.device) -> Net:
    """torch.save then torch.load(map_location=device, weights_only=True) into a fresh Net."""
    buffer = io.BytesIO()
    torch.save(net.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, map_location=device, weights_only=True)
    loaded: Net = Net().to(device)
    loaded.load_state_dict(state)
    return loaded


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def throughput(data: Data, batch_size: int, seconds: float, device: torch.device) -> float:
    """Training images/s after three warm-up steps, timed for at least ``seconds``."""
    net = build_net(0).to(device)
    optimizer = SGD(net.parameters(), lr=1e-4, momentum=0.9)
    index = torch.arange(batch_size, device=device) % data.train_labels.shape[0]
    images, labels = normalise(data.train_images[index]), data.train_labels[index]

    def step() -> None:
        optimizer.zero_grad()
        F.cross_entropy(net(images), labels).backward()
        optimizer.step()

    for _ in range(3):
        step()
    synchronize(device)
    steps, chunk, start = 0, 1, time.perf_counter()
    while True:
        for _ in range(chunk):
            step()
        steps += chunk
        synchronize(device)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return steps * batch_size / elapsed
        chunk = min(chunk * 2, 32)
