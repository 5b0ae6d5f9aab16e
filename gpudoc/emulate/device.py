"""Where tensors enter an emulated device: factories with ``device=``, and ``.to()`` / ``.cuda()``
on host tensors. Once a tensor is emulated, its own ``__torch_dispatch__`` (tensor.py) does
the rest.

These entry points are patched by name (``torch.zeros``, ``torch.Tensor.to``, ...) rather than
caught by a TorchFunctionMode: a mode sees every torch call, and on the tutorial's batch of 4
its pass-through alone cost 45% of a plain CPU training step (measured), while the entry points
are called a handful of times per step.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import torch
import torch.utils._device

from gpudoc.emulate import errors, generators, legacy, scope, tracking
from gpudoc.emulate.ordinal import requested_device, target_index
from gpudoc.emulate.state import STATE
from gpudoc.emulate.tensor import EmulatedTensor, cuda_device, move_tensor, to_device

# torch.* functions with a ``device=`` argument (from native_functions.yaml, plus the Python ones).
FACTORY_NAMES: tuple[str, ...] = (
    "arange",
    "bartlett_window",
    "blackman_window",
    "empty",
    "empty_like",
    "empty_permuted",
    "empty_strided",
    "eye",
    "full",
    "full_like",
    "hamming_window",
    "hann_window",
    "kaiser_window",
    "linspace",
    "logspace",
    "normal",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randint",
    "randint_like",
    "randn",
    "randn_like",
    "randperm",
    "range",
    "scalar_tensor",
    "sparse_coo_tensor",
    "tril_indices",
    "triu_indices",
    "zeros",
    "zeros_like",
    "tensor",
    "as_tensor",
    "asarray",
)
_HOST = torch.device("cpu")
PASSED_THROUGH = frozenset({"meta"})
"""Devices a CPU build of PyTorch has itself: no GPU to emulate (a meta-device skeleton, built
without memory, then ``to_empty(device="cuda")``)."""
TENSOR_FACTORY_NAMES: tuple[str, ...] = (
    "new_empty",
    "new_empty_strided",
    "new_full",
    "new_ones",
    "new_zeros",
    "new_tensor",
)


def device_aware(factory: Callable[..., Any], takes_default: bool = False) -> Callable[..., Any]:
    """A factory that makes ``device="cuda:N"`` tensors on the CPU and wraps them.
    ``takes_default``: without ``device=``, it makes them on a CUDA default device."""

    @functools.wraps(factory)
    def patched(*args: Any, **kwargs: Any) -> Any:
        device = kwargs.get("device")
        if device is None and takes_default:
            device = _cuda_default()
        if device is None:
            if "generator" in kwargs and not any(isinstance(a, torch.Tensor) for a in args):
                generators.check(kwargs["generator"], _HOST)
            result = factory(*args, **kwargs)
            caller = sys._getframe(1)
            code = caller.f_code
            if tracking.is_user_file(code.co_filename):
                # The caller is the user's frame: no walk (a Dataset makes tensors per sample).
                where = (code.co_filename, caller.f_lineno, code.co_name)
                tracking.set_origin(result, "created on the host", where)
            else:  # torch's own Python, e.g. a mask converted from the user's (scope.py)
                scope.mark_host_made(result)
            return result
        return _with_device(factory, args, kwargs, device)

    return patched


def _with_device(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], device: Any) -> Any:
    requested = requested_device(device)
    generators.check(kwargs.get("generator"), requested)
    if requested.type == "cpu":
        STATE.host_requested = True
        try:
            result = func(*args, **kwargs)
        finally:
            STATE.host_requested = False
        tracking.set_origin(result, "created on the host")
        scope.mark_host_made(result)
        return result
    if requested.type in PASSED_THROUGH:
        return func(*args, **kwargs)  # `with torch.device("meta"):` a skeleton, no memory
    if requested.type != "cuda":
        raise errors.not_emulated(f"device '{requested}'")
    index = target_index(requested)
    result = func(*args, **dict(kwargs, device=torch.device("cpu")))
    if isinstance(result, EmulatedTensor) or not isinstance(result, torch.Tensor):
        return result
    requires_grad = result.requires_grad
    wrapped = to_device(result.detach(), index)
    if requires_grad:
        wrapped.requires_grad_(True)
    tracking.set_origin(wrapped, f"created on cuda:{index}")
    return wrapped


def host_to(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    return move_tensor(self, *args, **kwargs)


def host_cuda(self: torch.Tensor, device: Any = None, non_blocking: bool = False) -> torch.Tensor:
    return move_tensor(self, cuda_device(device))


def host_type(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def patched(self: torch.Tensor, dtype: Any = None, *args: Any, **kwargs: Any) -> Any:
        dtype = legacy.type_name(dtype)
        if isinstance(dtype, str) and dtype.startswith("torch.cuda."):
            host = original(self, dtype.replace("torch.cuda.", "torch.", 1), *args, **kwargs)
            return move_tensor(host, torch.device("cuda", STATE.current_index))
        return original(self, dtype, *args, **kwargs)

    return patched


def host_type_as(original: Callable[..., Any]) -> Callable[..., Any]:
    """``x.type_as(batch)``: C++ converts with ``batch``'s options, whose device is the CPU for
    an emulated tensor; on a GPU it lands on ``batch``'s device (Lightning's idiom for tensors
    made in a step: ``torch.randn(n, z).type_as(x)``)."""

    @functools.wraps(original)
    def patched(self: torch.Tensor, other: Any) -> Any:
        if isinstance(other, torch.Tensor) and (self.is_cuda or other.is_cuda):
            return move_tensor(self, other.device, other.dtype)
        return original(self, other)

    return patched


def host_pin_memory(self: torch.Tensor, device: Any = None) -> torch.Tensor:
    # Pinning copies into page-locked host memory; here the copy is an ordinary one.
    return self.clone()


def counted_backward(original: Callable[..., Any]) -> Callable[..., Any]:
    inside: list[bool] = []  # Tensor.backward re-enters itself through __torch_function__

    @functools.wraps(original)
    def patched(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if inside:
            return original(self, *args, **kwargs)
        first = "backward" not in STATE.phase_lines
        STATE.reached("backward", tracking.where_text() if first else None)
        inside.append(True)
        try:
            return original(self, *args, **kwargs)
        finally:
            inside.pop()

    return patched


def _cuda_default() -> torch.device | None:
    """The device of ``torch.set_default_device`` / ``with torch.device(...)`` if it is CUDA."""
    current = torch.utils._device.CURRENT_DEVICE
    return current if current is not None and current.type == "cuda" else None


def default_device_function(
    original: Callable[..., Any], constructors: frozenset[str]
) -> Callable[..., Any]:
    """``DeviceContext.__torch_function__``, the mode behind ``torch.set_default_device`` and
    ``with torch.device(...)``: a CUDA default device makes the ``constructors``' tensors here.
    (Torch's own hands ``device="cuda"`` to the CPU build's kernels, which refuse it.)"""

    @functools.wraps(original)
    def patched(self: Any, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if (
            self.device.type == "cuda"
            and kwargs.get("device") is None
            and getattr(func, "__name__", None) in constructors
        ):
            return _with_device(func, tuple(args), kwargs, self.device)
        return original(self, func, types, args, kwargs)

    return patched
