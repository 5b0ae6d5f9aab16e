"""``torch.nn.parallel.comm`` for emulated devices, so ``nn.DataParallel`` runs as on N GPUs.

The real functions copy between GPUs in C++ (NCCL or peer copies); here each is the same data
movement done with ``.to()``, which keeps autograd, origins and device checks in the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from gpudoc.emulate.cuda_api import index_of


def _device(device: Any) -> torch.device:
    return torch.device("cuda", index_of(device))


def scatter(
    tensor: torch.Tensor,
    devices: Sequence[Any] | None = None,
    chunk_sizes: Sequence[int] | None = None,
    dim: int = 0,
    streams: Any = None,
    *,
    out: Any = None,
) -> tuple[torch.Tensor, ...]:
    targets = [_device(device) for device in devices or ()]
    if chunk_sizes is None:
        chunks = tensor.chunk(len(targets), dim)
    else:
        chunks = tensor.split(list(chunk_sizes), dim)
    return tuple(chunk.to(target) for chunk, target in zip(chunks, targets, strict=False))


def gather(
    tensors: Sequence[torch.Tensor], dim: int = 0, destination: Any = None, *, out: Any = None
) -> torch.Tensor:
    target = torch.device("cpu") if destination == -1 or destination == "cpu" else None
    target = target or _device(destination)
    return torch.cat([tensor.to(target) for tensor in tensors], dim)


def broadcast(
    tensor: torch.Tensor, devices: Sequence[Any] | None = None, *, out: Any = None
) -> tuple[torch.Tensor, ...]:
    return tuple(_copy(tensor, _device(device)) for device in devices or ())


def broadcast_coalesced(
    tensors: Sequence[torch.Tensor], devices: Sequence[Any], buffer_size: int = 10485760
) -> list[list[torch.Tensor]]:
    return [[_copy(tensor, _device(device)) for tensor in tensors] for device in devices]


def reduce_add(inputs: Sequence[torch.Tensor], destination: Any = None) -> torch.Tensor:
    target = _device(destination)
    total = inputs[0].to(target, copy=True)
    for tensor in inputs[1:]:
        total = total + tensor.to(target)
    return total


def reduce_add_coalesced(
    inputs: Sequence[Sequence[torch.Tensor]], destination: Any = None, buffer_size: int = 10485760
) -> tuple[torch.Tensor, ...]:
    return tuple(reduce_add(list(group), destination) for group in zip(*inputs, strict=True))


def _copy(tensor: torch.Tensor, target: torch.device) -> torch.Tensor:
    """The source device keeps its own tensor, as the C++ broadcast does."""
    return tensor if tensor.device == target else tensor.to(target)


FUNCTIONS = {
    "scatter": scatter,
    "gather": gather,
    "broadcast": broadcast,
    "broadcast_coalesced": broadcast_coalesced,
    "reduce_add": reduce_add,
    "reduce_add_coalesced": reduce_add_coalesced,
}


def scatter_without_streams(forward: Any) -> Any:
    """``Scatter.forward`` of a host input, without the copy streams it builds where an
    accelerator is available: ``torch.Stream`` on a device index, which a CPU build has no
    accelerator for ("unknown parameter type", or "Cannot access accelerator device"). The
    emulated copies are synchronous; the streams were only a speed-up."""

    def patched(ctx: Any, *args: Any) -> Any:
        available = torch.accelerator.is_available
        torch.accelerator.is_available = lambda: False
        try:
            return forward(ctx, *args)
        finally:
            torch.accelerator.is_available = available

    return staticmethod(patched)
