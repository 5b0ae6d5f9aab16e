"""The floor under the emulator's per-operation cost: the cheapest wrapper tensor subclass that
can run a training step, with nothing of gpudoc in it.

Like ``EmulatedTensor`` it keeps a CPU tensor inside a ``_make_wrapper_subclass`` wrapper, has a
``__torch_dispatch__`` that unwraps the operands, runs the CPU kernel and wraps the results, and a
``__torch_function__`` that only passes the call on (gpudoc's records the user's call, scope.py).
It checks no device, counts nothing, dates nothing. What a step costs with it, over the plain
CPU, is what any tensor subclass costs in PyTorch; the emulator's figure minus this one is
gpudoc's own work.
"""

from __future__ import annotations

from typing import Any

import torch

_CPU = torch.device("cpu")
_make_wrapper = torch.Tensor._make_wrapper_subclass
_disabled = torch._C._disabled_torch_function_impl


class FloorTensor(torch.Tensor):  # type: ignore[misc]
    _inner: torch.Tensor

    @classmethod
    def __torch_function__(
        cls, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        return _disabled(func, types, args, kwargs or {})

    @classmethod
    def __torch_dispatch__(
        cls, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        inner = [arg._inner if type(arg) is cls else arg for arg in args]
        if kwargs:
            kwargs = {k: v._inner if type(v) is cls else v for k, v in kwargs.items()}
        out = func._op(*inner, **(kwargs or {}))
        if isinstance(out, torch.Tensor):
            return args[0] if inner and out is inner[0] else wrap(out)  # in-place: the operand
        if isinstance(out, (tuple, list)):
            return type(out)(None if item is None else wrap(item) for item in out)
        return out


def wrap(inner: torch.Tensor) -> FloorTensor:
    wrapper: FloorTensor = _make_wrapper(
        FloorTensor, inner.size(), inner.stride(), inner.storage_offset(), None,
        inner.dtype, inner.layout, _CPU,
    )  # fmt: skip
    wrapper._inner = inner
    return wrapper


def wrap_module(module: torch.nn.Module) -> torch.nn.Module:
    """The module's parameters and buffers as FloorTensors (the same Parameter objects)."""
    swap = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    try:
        return module._apply(lambda tensor: wrap(tensor.detach()))
    finally:
        torch.__future__.set_swap_module_params_on_conversion(swap)


class FunctionOnlyTensor(torch.Tensor):  # type: ignore[misc]
    """A subclass with torch.Tensor's own ``__torch_function__`` and no ``__torch_dispatch__``:
    Python runs once per call of a torch function or method (results keep the subclass), and
    the kernels, autograd's backward included, stay in C++. What an emulator that judged devices
    at the Python API alone (not on each ATen operation) would start from."""


def wrap_function_only(module: torch.nn.Module) -> torch.nn.Module:
    """The module's parameters as FunctionOnlyTensor parameters."""
    for owner in module.modules():
        for name, param in list(owner._parameters.items()):
            if param is not None:
                owner._parameters[name] = torch.nn.Parameter(
                    param.detach().as_subclass(FunctionOnlyTensor)
                )
    return module
