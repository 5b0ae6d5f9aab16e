"""Which host tensors the user's code handed to torch, and which torch made for itself.

An emulated tensor's C++ device is ``cpu``. A composite operation that builds a tensor inside C++
from its input's options (the causal mask of ``scaled_dot_product_attention``, ``one_hot``'s
zeros, the ``arange`` of a decomposition) gets a plain CPU tensor where a GPU gets one on the
input's device. Such a tensor is not the user's, and meeting it is not a device error.

Each torch call the user's code makes with an emulated tensor is a *scope*
(``EmulatedTensor.__torch_function__``). When a host tensor meets an emulated one inside it and
is not plainly the user's (sharing storage with the call's arguments, or made by Python code),
the call is run again under :class:`_LineageMode`, which follows the host tensors computed from
the user's: those are a device error where they meet device ones. Every other host tensor there
was built by C++ from the operands' options (some never pass the dispatcher: ``at::tensor``),
and a GPU builds it on their device. A call
that needed this is remembered, and runs under the mode from then on. During ``backward()`` no
user call is in flight: every tensor there is autograd's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from gpudoc.emulate import generators
from gpudoc.emulate.reroute import REROUTES

_disabled = torch._C._disabled_torch_function_impl
_ATTRIBUTE = type(torch.Tensor.grad.__get__)  # a tensor attribute's getter or setter
HOST_MADE = "_gpudoc_host_made"  # attribute on host tensors that Python code made
_TO_COPY = torch.ops.aten._to_copy.default
_NEEDS_MODE: set[Any] = set()  # torch functions whose C++ builds tensors from options


class _Scope:
    """The user's torch call in flight (mutable on purpose: read and written per call; an
    instance, since writing a class attribute invalidates the type's lookup caches)."""

    __slots__ = ("call", "index", "users")

    def __init__(self) -> None:
        self.call: tuple[tuple[Any, ...], dict[str, Any]] | None = None
        self.index: int | None = None  # its emulated device, when it runs under the mode
        self.users: set[int] = set()  # under the mode: storages of host tensors from the user's


_SCOPE = _Scope()


class _MadeInside(BaseException):
    """A host tensor of unknown origin met a device one: run the call again under the mode."""


Wrap = Callable[[torch.Tensor, int], torch.Tensor]  # tensor.wrap: a host tensor onto cuda:N


def torch_function(
    cls: Any, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
) -> Any:
    """``EmulatedTensor.__torch_function__``: run one torch call of the user's code, as the
    scope in which tensors are judged (one frame: it runs for every torch call)."""
    if kwargs is None:
        kwargs = {}
    if type(func) is _ATTRIBUTE:
        return _disabled(func, types, args, kwargs)  # x.grad, x.grad = ..., x.data: no scope
    reroute = REROUTES.get(func)
    if reroute is not None:
        args, kwargs = reroute(args, kwargs)
    if kwargs.get("generator") is not None:
        # Here, not in __torch_dispatch__: there torch hands over a new generator object that no
        # longer says it is an emulated CUDA one.
        generators.check(kwargs["generator"], _draw_device(cls, args))
    scope = _SCOPE
    outer, outer_index = scope.call, scope.index
    scope.call, scope.index = (args, kwargs), None
    try:
        if func in _NEEDS_MODE:
            return _run_in_mode(func, types, args, kwargs, cls.wrap_host)
        try:
            return _disabled(func, types, args, kwargs)
        except _MadeInside:
            _NEEDS_MODE.add(func)
            return _run_in_mode(func, types, args, kwargs, cls.wrap_host)
    finally:
        scope.call, scope.index = outer, outer_index


def made_inside(hosts: list[torch.Tensor]) -> bool:
    """Whether these host tensors, met with device ones, are torch's own (so no device error).

    Raises _MadeInside when the call must run again under the mode to tell."""
    if torch._C._current_autograd_node() is not None:
        return True  # in backward(): autograd's own tensors
    if _SCOPE.call is None:
        return False
    if _SCOPE.index is not None:  # under the mode: computed from the user's, or C++-made
        return not any(_is_users(tensor, _SCOPE.users) for tensor in hosts)
    known = _storages(_SCOPE.call)
    if any(_is_users(tensor, known) for tensor in hosts):
        return False
    raise _MadeInside


def mark_host_made(tensor: Any) -> None:
    """A host tensor made by Python code: the user's, wherever it meets a device tensor."""
    if type(tensor) is torch.Tensor:
        setattr(tensor, HOST_MADE, True)


def _run_in_mode(
    func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any], wrap: Wrap
) -> Any:
    flat = [*args, *kwargs.values()]
    flat += [item for value in flat if isinstance(value, (list, tuple)) for item in value]
    index = next((value._index for value in flat if _is_emulated(value)), None)
    if index is None:
        return _disabled(func, types, args, kwargs)
    outer = _SCOPE.users
    _SCOPE.index, _SCOPE.users = index, _storages((args, kwargs))
    try:
        with _LineageMode():
            result = _disabled(func, types, args, kwargs)
        return _adopt(result, index, wrap, _HOST_OUTPUTS.get(func, frozenset()))
    finally:
        _SCOPE.users = outer


def _adopt(result: Any, index: int, wrap: Wrap, host_outputs: frozenset[int] = frozenset()) -> Any:
    """Host tensors made inside the call and returned (``one_hot``'s zeros) are on the call's
    device, as on a GPU; ``host_outputs`` are the positions a GPU makes from host options."""
    if type(result) is torch.Tensor and not _is_users(result, _SCOPE.users):
        return wrap(result, index)
    if isinstance(result, tuple) and not hasattr(result, "_fields"):
        return tuple(
            item if position in host_outputs else _adopt(item, index, wrap)
            for position, item in enumerate(result)
        )
    return result


# Results a GPU makes on the host: pad_packed_sequence's lengths (from batch_sizes' options).
_HOST_OUTPUTS = {torch._C._VariableFunctions._pad_packed_sequence: frozenset({1})}


class _LineageMode(TorchDispatchMode):  # type: ignore[misc]
    """Follows the host tensors computed from the user's (the call's arguments, tensors made
    by Python code): every other host tensor in the call, C++ made on the call's behalf."""

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        if func is _TO_COPY and kwargs.get("device") is not None:
            return result  # C++ `x.to(operand.options())`: a GPU moves x to the device
        if _from_user([*args, *kwargs.values()]):
            for tensor in result if isinstance(result, (list, tuple)) else (result,):
                if type(tensor) is torch.Tensor:
                    _SCOPE.users.add(_storage_key(tensor))
        return result


def _from_user(values: list[Any]) -> bool:
    for value in values:
        if type(value) is torch.Tensor and _is_users(value, _SCOPE.users):
            return True
        if isinstance(value, (list, tuple)) and _from_user(list(value)):
            return True
    return False


def _is_emulated(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and hasattr(value, "_inner")  # tensor.EmulatedTensor


def _is_users(tensor: torch.Tensor, known: set[int]) -> bool:
    for candidate in (tensor, tensor._base):
        if candidate is None:
            continue
        if getattr(candidate, HOST_MADE, False) or hasattr(candidate, "_gpudoc_origin"):
            return True
        if _storage_key(candidate) in known:
            return True
    return False


def _storage_key(tensor: torch.Tensor) -> int:
    pointer: int = tensor.untyped_storage().data_ptr()
    return pointer if pointer else id(tensor)  # empty tensors have no storage: use identity


def _storages(call: tuple[tuple[Any, ...], dict[str, Any]]) -> set[int]:
    args, kwargs = call
    known: set[int] = set()
    pending: list[Any] = [*args, *kwargs.values()]
    while pending:
        value = pending.pop()
        if isinstance(value, torch.Tensor):
            if not _is_emulated(value):
                known.add(_storage_key(value))
        elif isinstance(value, (list, tuple)):
            pending.extend(value)
        elif isinstance(value, dict):
            pending.extend(value.values())
    return known


def _draw_device(cls: Any, args: tuple[Any, ...]) -> torch.device:
    """Where a call with emulated operands draws: the first emulated tensor's device."""
    for arg in args:
        if type(arg) is cls:
            return torch.device("cuda", arg._index)
    return torch.device("cpu")
