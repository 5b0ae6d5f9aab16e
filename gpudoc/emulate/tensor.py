"""The emulated CUDA tensor: CPU data inside, a CUDA device outside.

A wrapper subclass (``_make_wrapper_subclass``) whose C++ device stays ``cpu``: autograd on a
CPU-only build aborts the process when it meets a real ``cuda`` device, so only the Python level
reports ``cuda:N``. Every ATen operation reaches ``__torch_dispatch__``, which checks that the
operands share one device (raising the text a GPU raises), runs the CPU kernel on the inner
tensors and wraps the results on that device.
"""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

import torch

from gpudoc.emulate import errors, legacy, scope, tracking
from gpudoc.emulate.state import STATE

_aten = torch.ops.aten
_CPU = torch.device("cpu")
# Operations that may legitimately mix devices, as on a GPU.
_CROSS_DEVICE_OK = {_aten.copy_.default, _aten._to_copy.default, _aten.lift_fresh.default}
_INDEXING = {_aten.index.Tensor, _aten.index_put_.default, _aten.index_put.default}
_INDEXING.add(_aten._index_put_impl_.default)
# Sizes that CUDA kernels read on the host: PyTorch wants (or accepts) them on the CPU.
_HOST_SIZES = frozenset({"lengths", "batch_sizes", "input_lengths", "target_lengths"})


class EmulatedTensor(torch.Tensor):  # type: ignore[misc]
    """A tensor that lives on an emulated ``cuda:N``; its data is the CPU tensor ``_inner``."""

    _inner: torch.Tensor
    _index: int

    @staticmethod
    def __new__(
        cls, inner: torch.Tensor, index: int, requires_grad: bool = False
    ) -> EmulatedTensor:
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls,
            inner.size(),
            strides=inner.stride(),
            storage_offset=inner.storage_offset(),
            dtype=inner.dtype,
            layout=inner.layout,
            device=_CPU,
            requires_grad=requires_grad,
        )
        wrapper._inner = inner
        wrapper._index = index
        return wrapper  # type: ignore[no-any-return]

    @classmethod
    def __torch_function__(
        cls,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        # Not the subclass-preserving default (dispatch already returns wrappers): the user's
        # call is only remembered, to tell its tensors from those torch makes inside (scope.py).
        return scope.run_call(func, types, args, kwargs, wrap)

    @classmethod
    def __torch_dispatch__(
        cls,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        return dispatch(func, args, kwargs or {})

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


def target_index(device: torch.device) -> int:
    """The emulated index for ``cuda`` / ``cuda:N``, checked against the device count."""
    index = STATE.current_index if device.index is None else device.index
    if not 0 <= index < STATE.device_count:
        raise errors.invalid_ordinal()
    return index


def wrap(inner: torch.Tensor, index: int) -> EmulatedTensor:
    return EmulatedTensor(inner, index)


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


def dispatch(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run one ATen operation on the inner tensors of the emulated operands."""
    inner_args, devices, owners = _unwrap_all(args)
    inner_kwargs: dict[str, Any] = kwargs
    if kwargs:
        inner_kwargs, kw_devices, kw_owners = _unwrap_kwargs(kwargs)
        devices.extend(kw_devices)
        owners.update(kw_owners)
    index = _common_index(func, args, kwargs, devices)
    target: int | None = index
    device_kw = inner_kwargs.get("device")
    if device_kw is not None:
        requested = torch.device(device_kw)
        if requested.type == "cuda":
            target = target_index(requested)
        elif STATE.host_requested:
            target = None
        # else: ``cpu`` is the C++ device of an emulated tensor (autograd's _to_copy backward,
        # new_tensor): it means "where the tensor already is".
        inner_kwargs = dict(inner_kwargs, device=torch.device("cpu"))
    STATE.ops_on_device += 1
    facts = _FACTS.get(func) or _facts(func)
    try:
        out = facts.kernel(*inner_args, **inner_kwargs)
    except NotImplementedError:
        if func.namespace == "aten":
            raise
        raise errors.not_emulated(f"the custom operator {func} (a CUDA extension)") from None
    if facts.special:
        if func is _COPY and not isinstance(args[0], EmulatedTensor):
            return args[0]
        if facts.inplace_view and isinstance(args[0], EmulatedTensor):
            _mirror_metadata(func, args, kwargs)
    wrapped = _wrap_outputs(out, target, owners)
    if func is _PACK_PADDED:
        wrapped = (wrapped[0], out[1])  # batch_sizes stay on the CPU, as PyTorch wants them
    if facts.view and args and isinstance(wrapped, EmulatedTensor):
        # detach / view / t keep the origin: Parameter() detaches, linear transposes.
        origin = getattr(args[0], "_gpudoc_origin", None)
        if origin is not None:
            wrapped._gpudoc_origin = origin
    return wrapped


_NO_PYTHON_KEY = torch._C.DispatchKeySet(torch._C.DispatchKey.Python)
_COPY = _aten.copy_.default
_PACK_PADDED = _aten._pack_padded_sequence.default


class _OpFacts(NamedTuple):
    kernel: Any  # the C++ callable (OpOverload.__call__ is a Python frame more)
    view: bool
    inplace_view: bool
    special: bool  # copy_, or an in-place view: looked at after the kernel ran


_FACTS: dict[Any, _OpFacts] = {}  # per operator: its tags and flags cost a lookup each time


def _facts(func: Any) -> _OpFacts:
    inplace_view = torch.Tag.inplace_view in func.tags
    facts = _OpFacts(func._op, func.is_view, inplace_view, inplace_view or func is _COPY)
    _FACTS[func] = facts
    return facts


def _mirror_metadata(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """``transpose_`` / ``unsqueeze_`` / ... changed the inner tensor's shape: change the
    wrapper's too (its CPU kernel touches sizes and strides only, never data)."""
    with torch._C._ExcludeDispatchKeyGuard(_NO_PYTHON_KEY):
        func(*args, **kwargs)


def _unwrap_all(args: tuple[Any, ...]) -> tuple[list[Any], list[tuple[str, Any]], dict[int, Any]]:
    inner: list[Any] = []
    devices: list[tuple[str, Any]] = []
    owners: dict[int, Any] = {}
    for position, arg in enumerate(args):
        inner.append(_unwrap_one(arg, position, devices, owners))
    return inner, devices, owners


def _unwrap_kwargs(
    kwargs: dict[str, Any],
) -> tuple[dict[str, Any], list[tuple[str, Any]], dict[int, Any]]:
    devices: list[tuple[str, Any]] = []
    owners: dict[int, Any] = {}
    inner = {key: _unwrap_one(value, key, devices, owners) for key, value in kwargs.items()}
    return inner, devices, owners


def _unwrap_one(
    arg: Any, where: int | str, devices: list[tuple[Any, Any]], owners: dict[int, Any]
) -> Any:
    if isinstance(arg, EmulatedTensor):
        devices.append((where, arg))
        owners[id(arg._inner)] = arg
        return arg._inner
    if isinstance(arg, torch.Tensor):
        devices.append((where, arg))
        owners[id(arg)] = arg
        return arg
    if isinstance(arg, (list, tuple)) and arg and isinstance(arg[0], torch.Tensor | None):
        return type(arg)(_unwrap_one(item, where, devices, owners) for item in arg)
    return arg


def _common_index(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], devices: list[tuple[Any, Any]]
) -> int | None:
    """The emulated index every operand shares; raises the GPU's error when they differ."""
    index: int | None = None
    mixed = False
    hosts: list[tuple[Any, torch.Tensor]] = []
    for where, tensor in devices:
        if isinstance(tensor, EmulatedTensor):
            if index is None:
                index = tensor._index
            elif tensor._index != index:
                mixed = True
        elif tensor.dim() != 0:  # a 0-dim CPU tensor is a scalar a CUDA kernel accepts
            hosts.append((where, tensor))
    if hosts and index is not None and not mixed:
        mixed = _host_operands_refused(func, hosts)
    if mixed and func not in _CROSS_DEVICE_OK:
        if func in _INDEXING:
            errors.check_indexing(func, args, kwargs)
        else:
            raise errors.DeviceMismatchError(func, args, kwargs)
    return index


def _host_operands_refused(func: Any, hosts: list[tuple[Any, torch.Tensor]]) -> bool:
    """Whether the host operands among device ones are a device error, as on a GPU."""
    schema = func._schema.arguments
    names = [schema[where].name if isinstance(where, int) else where for where, _ in hosts]
    kept = [
        tensor for name, (_, tensor) in zip(names, hosts, strict=True) if name not in _HOST_SIZES
    ]
    return bool(kept) and not scope.made_inside(kept)


def _wrap_outputs(out: Any, index: int | None, owners: dict[int, Any]) -> Any:
    if isinstance(out, torch.Tensor):
        owner = owners.get(id(out))
        if owner is not None:
            return owner  # in-place and out= operations return their own operand
        return out if index is None else wrap(out, index)
    if isinstance(out, (list, tuple)):
        return type(out)(_wrap_outputs(item, index, owners) for item in out)
    return out
