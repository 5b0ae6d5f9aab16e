"""``__torch_dispatch__`` of the emulated tensor: every ATen operation on one passes here.

It checks that the operands share one device (raising the text a GPU raises), runs the CPU
kernel on the inner tensors and wraps the results on that device. It runs for every operation,
so the common case (every tensor operand an emulated tensor on one device, an operator whose
schema ops.py found plain) takes one flat loop and no helper calls; everything else (host
operands, tensor lists, ``device=``, copies across devices, in-place views) the general path.

The functions take the emulated tensor class as ``cls`` (it is a classmethod there), so that
this module needs no import of tensor.py.
"""

from __future__ import annotations

from typing import Any

import torch

from gpudoc.emulate import errors, ops, scope
from gpudoc.emulate.ordinal import target_index
from gpudoc.emulate.state import STATE

_CPU = torch.device("cpu")
_FACTS = ops.FACTS
_make_wrapper = torch.Tensor._make_wrapper_subclass
_NO_PYTHON_KEY = torch._C.DispatchKeySet(torch._C.DispatchKey.Python)
_CUSTOM = "the custom operator {} (a CUDA extension)"


def new_wrapper(cls: Any, inner: torch.Tensor, index: int) -> Any:
    """The emulated tensor for ``inner`` on ``cuda:index`` (positional arguments parse fastest)."""
    wrapper = _make_wrapper(
        cls, inner.size(), inner.stride(), inner.storage_offset(), None,
        inner.dtype, inner.layout, _CPU,
    )  # fmt: skip
    wrapper._inner = inner
    wrapper._index = index
    return wrapper


def torch_dispatch(
    cls: Any, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
) -> Any:
    """Run one ATen operation on the inner tensors of the emulated operands."""
    known = _FACTS.get(id(func))
    facts = known[1] if known is not None else ops.facts(func)
    fast = facts.fast
    if fast:
        inner = list(args)
        index = None
        for position, arg in enumerate(args):
            if type(arg) is cls:
                inner[position] = arg._inner
                if index is None:
                    index = arg._index
                elif arg._index != index:
                    break  # two devices: the general path raises the GPU's error
            elif isinstance(arg, torch.Tensor):
                break  # a host operand
        else:
            if index is not None and (not kwargs or _plain(kwargs)):
                STATE.ops_on_device += 1
                try:
                    out = facts.kernel(*inner, **kwargs) if kwargs else facts.kernel(*inner)
                except NotImplementedError:
                    if func.namespace == "aten":
                        raise
                    raise errors.not_emulated(_CUSTOM.format(func)) from None
                if fast == ops.SELF or out is inner[0]:
                    return args[0]  # in-place: the operand itself
                if fast == ops.NEW_TUPLE:
                    return tuple(None if o is None else new_wrapper(cls, o, index) for o in out)
                wrapped = _make_wrapper(
                    cls, out.size(), out.stride(), out.storage_offset(), None,
                    out.dtype, out.layout, _CPU,
                )  # fmt: skip
                wrapped._inner = out
                wrapped._index = index
                if facts.view:
                    _keep_origin(args, wrapped)
                return wrapped
    return _dispatch_general(cls, func, facts, args, kwargs or {})


def _plain(kwargs: dict[str, Any]) -> bool:
    return not any(isinstance(value, torch.Tensor) for value in kwargs.values())


def _keep_origin(args: tuple[Any, ...], wrapped: Any) -> None:
    # detach / view / t keep the origin: Parameter() detaches, linear transposes.
    origin = getattr(args[0], "_gpudoc_origin", None)
    if origin is not None:
        wrapped._gpudoc_origin = origin


def _call_kernel(func: Any, facts: ops.OpFacts, inner: Any, kwargs: dict[str, Any]) -> Any:
    try:
        return facts.kernel(*inner, **kwargs)
    except NotImplementedError:
        if func.namespace == "aten":
            raise
        raise errors.not_emulated(_CUSTOM.format(func)) from None


def _dispatch_general(
    cls: Any, func: Any, facts: ops.OpFacts, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Any operation: host operands, tensor lists, ``device=``, copies across devices."""
    inner_args, devices, owners = _unwrap_all(cls, args)
    inner_kwargs: dict[str, Any] = kwargs
    if kwargs:
        inner_kwargs, kw_devices, kw_owners = _unwrap_kwargs(cls, kwargs)
        devices.extend(kw_devices)
        owners.update(kw_owners)
    index = _common_index(cls, func, args, kwargs, devices)
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
        inner_kwargs = dict(inner_kwargs, device=_CPU)
    STATE.ops_on_device += 1
    out = _call_kernel(func, facts, inner_args, inner_kwargs)
    if facts.special:
        if func is ops.COPY and not isinstance(args[0], cls):
            return args[0]
        if facts.inplace_view and isinstance(args[0], cls):
            _mirror_metadata(func, args, kwargs)
    wrapped = _wrap_outputs(cls, out, target, owners)
    if func is ops.PACK_PADDED:
        wrapped = (wrapped[0], out[1])  # batch_sizes stay on the CPU, as PyTorch wants them
    if facts.view and args and isinstance(wrapped, cls):
        _keep_origin(args, wrapped)
    return wrapped


def _mirror_metadata(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """``transpose_`` / ``unsqueeze_`` / ... changed the inner tensor's shape: change the
    wrapper's too (its CPU kernel touches sizes and strides only, never data)."""
    with torch._C._ExcludeDispatchKeyGuard(_NO_PYTHON_KEY):
        func(*args, **kwargs)


Devices = list[tuple[Any, Any]]  # (position or keyword, tensor) of every tensor operand


def _unwrap_all(cls: Any, args: tuple[Any, ...]) -> tuple[list[Any], Devices, dict[int, Any]]:
    devices: Devices = []
    owners: dict[int, Any] = {}
    inner = [_unwrap_one(cls, arg, position, devices, owners) for position, arg in enumerate(args)]
    return inner, devices, owners


def _unwrap_kwargs(
    cls: Any, kwargs: dict[str, Any]
) -> tuple[dict[str, Any], Devices, dict[int, Any]]:
    devices: Devices = []
    owners: dict[int, Any] = {}
    inner = {key: _unwrap_one(cls, value, key, devices, owners) for key, value in kwargs.items()}
    return inner, devices, owners


def _unwrap_one(
    cls: Any, arg: Any, where: int | str, devices: Devices, owners: dict[int, Any]
) -> Any:
    if isinstance(arg, cls):
        devices.append((where, arg))
        owners[id(arg._inner)] = arg
        return arg._inner
    if isinstance(arg, torch.Tensor):
        devices.append((where, arg))
        owners[id(arg)] = arg
        return arg
    if isinstance(arg, (list, tuple)) and arg and isinstance(arg[0], torch.Tensor | None):
        return type(arg)(_unwrap_one(cls, item, where, devices, owners) for item in arg)
    return arg


def _common_index(
    cls: Any, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], devices: Devices
) -> int | None:
    """The emulated index every operand shares; raises the GPU's error when they differ."""
    index: int | None = None
    mixed = False
    hosts: Devices = []
    for where, tensor in devices:
        if isinstance(tensor, cls):
            if index is None:
                index = tensor._index
            elif tensor._index != index:
                mixed = True
        elif tensor.dim() != 0:  # a 0-dim CPU tensor is a scalar a CUDA kernel accepts
            hosts.append((where, tensor))
    if hosts and index is not None and not mixed:
        mixed = _host_operands_refused(func, hosts)
    if mixed and func not in ops.CROSS_DEVICE_OK:
        if func in ops.INDEXING:
            errors.check_indexing(func, args, kwargs)
        else:
            raise errors.DeviceMismatchError(func, args, kwargs)
    return index


def _host_operands_refused(func: Any, hosts: Devices) -> bool:
    """Whether the host operands among device ones are a device error, as on a GPU."""
    host_ok = ops.facts(func).host_ok
    kept = [tensor for where, tensor in hosts if where not in host_ok]
    return bool(kept) and not scope.made_inside(kept)


def _wrap_outputs(cls: Any, out: Any, index: int | None, owners: dict[int, Any]) -> Any:
    if isinstance(out, torch.Tensor):
        owner = owners.get(id(out))
        if owner is not None:
            return owner  # in-place and out= operations return their own operand
        return out if index is None else new_wrapper(cls, out, index)
    if isinstance(out, (list, tuple)):
        return type(out)(_wrap_outputs(cls, item, index, owners) for item in out)
    return out
