"""The emulated CUDA tensor: CPU data inside, a CUDA device outside.

A wrapper subclass (``_make_wrapper_subclass``) whose C++ device stays ``cpu``: autograd on a
CPU-only build aborts the process when it meets a real ``cuda`` device, so only the Python level
reports ``cuda:N``. Every ATen operation reaches ``__torch_dispatch__``, which checks that the
operands share one device (raising the text a GPU raises), runs the CPU kernel on the inner
tensors and wraps the results on that device.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from gpudoc.emulate import dispatch, errors, legacy, scope, tracking
from gpudoc.emulate.ordinal import target_index
from gpudoc.emulate.state import STATE


class EmulatedTensor(torch.Tensor):  # type: ignore[misc]
    """A tensor that lives on an emulated ``cuda:N``; its data is the CPU tensor ``_inner``."""

    _inner: torch.Tensor
    _index: int

    @staticmethod
    def __new__(
        cls, inner: torch.Tensor, index: int, requires_grad: bool = False
    ) -> EmulatedTensor:
        wrapper: EmulatedTensor = dispatch.new_wrapper(EmulatedTensor, inner, index)
        if requires_grad:
            wrapper.requires_grad_(True)
        return wrapper

    # Not the subclass-preserving default (dispatch already returns wrappers): the user's call
    # is only remembered, to tell its tensors from those torch makes inside (scope.py).
    __torch_function__ = classmethod(scope.torch_function)
    __torch_dispatch__ = classmethod(dispatch.torch_dispatch)

    @staticmethod
    def wrap_host(inner: torch.Tensor, index: int) -> torch.Tensor:
        """A host tensor made inside a composite, onto ``cuda:index`` (scope.py); in the
        autograd graph when it is (pad_packed_sequence's output)."""
        if inner.requires_grad and torch.is_grad_enabled():
            moved: torch.Tensor = _ToDevice.apply(inner, index)
            return moved
        return dispatch.new_wrapper(EmulatedTensor, inner, index)

    # -- what Python code asks of a CUDA tensor -------------------------------------------------
    @property
    def device(self) -> torch.device:
        return STATE.devices[self._index]

    @property
    def is_cuda(self) -> bool:
        return True

    def get_device(self) -> int:
        return self._index

    def numpy(self, *, force: bool = False) -> Any:
        if force:
            return self._inner.detach().numpy(force=True)
        raise errors.NumpyOnDeviceError(self)

    def tolist(self) -> Any:
        return self._inner.tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        raise errors.NumpyOnDeviceError(self)

    def to(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        return move_tensor(self, *args, **kwargs)

    def cuda(self, device: Any = None, non_blocking: bool = False, **_: Any) -> torch.Tensor:
        return move_tensor(self, cuda_device(device))

    def cpu(self, memory_format: Any = None) -> torch.Tensor:
        return move_tensor(self, "cpu")

    def pin_memory(self, device: Any = None) -> torch.Tensor:
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")

    def is_pinned(self, device: Any = None) -> bool:
        return False

    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        if dtype is None:
            return self._inner.type().replace("torch.", "torch.cuda.", 1)
        name = legacy.type_name(dtype)
        if isinstance(name, str) and name.startswith("torch.cuda."):  # stays on the device
            return self.to(getattr(torch, name.removeprefix("torch.cuda.")).dtype)
        if isinstance(name, str) and name.startswith("torch."):  # a host type: a copy to host
            return self.cpu().type(name)
        return super().type(dtype, non_blocking, **kwargs)

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        text = repr(self._inner.detach())
        suffix = f", device='{self.device}'"
        if self.grad_fn is not None:
            suffix += f", grad_fn=<{type(self.grad_fn).__name__}>"
        elif self.requires_grad:
            suffix += ", requires_grad=True"
        return text[:-1] + suffix + ")"

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Saved as a CUDA checkpoint: CPU bytes with the location tag ``cuda:N`` (serialization).
        tracking.mark_saved_storage(self._inner, self._index)
        inner = self._inner.detach().requires_grad_(self.requires_grad)
        return inner.__reduce_ex__(protocol)

    def __deepcopy__(self, memo: dict[int, Any]) -> EmulatedTensor:
        copied = EmulatedTensor(copy.deepcopy(self._inner.detach(), memo), self._index)
        copied.requires_grad_(self.requires_grad)
        memo[id(self)] = copied
        return copied


def cuda_device(device: Any) -> torch.device:
    """What ``.cuda(device)`` means: an index, a device, or the current device."""
    if device is None:
        return torch.device("cuda", STATE.current_index)
    if isinstance(device, int):
        return torch.device("cuda", device)
    return torch.device(device)


class _ToDevice(torch.autograd.Function):  # type: ignore[misc]
    """A differentiable move between host and emulated devices (index None = host)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, index: int | None) -> torch.Tensor:
        ctx.source = tensor._index if isinstance(tensor, EmulatedTensor) else None
        return _copy_to(tensor, index)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return _copy_to(grad, ctx.source), None


def _copy_to(tensor: torch.Tensor, index: int | None) -> torch.Tensor:
    data = tensor._inner if isinstance(tensor, EmulatedTensor) else tensor
    data = data.detach().clone()
    return data if index is None else to_device(data, index)


def to_device(data: torch.Tensor, index: int) -> EmulatedTensor:
    """Every way onto a device goes through here: a move, a factory, a load."""
    errors.check_not_in_forked_worker()
    STATE.cuda_initialized = True
    return EmulatedTensor(data, index)


def move_tensor(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    """``tensor.to(...)`` with emulated devices: a copy on the target, as on a GPU."""
    copy_flag = bool(kwargs.pop("copy", False))
    if args and isinstance(args[0], torch.Tensor):  # to(other): other's device, as Python sees it
        args = (args[0].device, args[0].dtype, *args[1:])
    device, dtype, _non_blocking, _memory_format = torch._C._nn._parse_to(*args, **kwargs)
    source = tensor._index if isinstance(tensor, EmulatedTensor) else None
    if device is None:
        target = source
    elif device.type == "cuda":
        target = target_index(device)
    elif device.type == "cpu":
        target = None
    elif device.type == "meta" and not isinstance(tensor, EmulatedTensor):
        return torch._C.TensorBase.to(tensor, *args, **kwargs)  # shapes only, no GPU in it
    else:
        raise errors.not_emulated(f"device '{device}'")
    moved = tensor
    if target != source:
        if torch.is_grad_enabled() and tensor.requires_grad:
            moved = _ToDevice.apply(tensor, target)
        else:
            moved = _copy_to(tensor, target)
        tracking.note_move(tensor, moved, target)
        copy_flag = False
    if dtype is not None and dtype != moved.dtype:
        moved = _plain_to(moved, dtype)
    elif copy_flag:
        moved = _plain_to(moved, None)
    if target is None:
        scope.mark_host_made(moved)
    return moved


def _plain_to(tensor: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
    if dtype is None:
        return tensor.clone()
    return torch._C.TensorBase.to(tensor, dtype)
