"""What the emulator needs to know about one ATen operator, read from its schema once.

``__torch_dispatch__`` runs for every operation on an emulated tensor. Whether an operator can
take the fast path (its tensors are plain positional ``Tensor`` / ``Tensor?`` arguments, it
takes no ``device``, and its results are new tensors or its first argument) follows from its
schema, which costs microseconds to read: it is read once per operator and kept here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

_aten = torch.ops.aten
COPY = _aten.copy_.default
PACK_PADDED = _aten._pack_padded_sequence.default
# Operations that may legitimately mix devices, as on a GPU.
CROSS_DEVICE_OK = {COPY, _aten._to_copy.default, _aten.lift_fresh.default}
INDEXING = {_aten.index.Tensor, _aten.index_put_.default, _aten.index_put.default}
INDEXING.add(_aten._index_put_impl_.default)
_GENERAL_ONLY = {PACK_PADDED, *CROSS_DEVICE_OK, *INDEXING}

# Tensor arguments a GPU takes from the host, by name: sizes its kernels read on the host
# (``.to(kCPU)`` inside the CUDA kernel, or required there, as pack_padded_sequence's).
_HOST_SIZES = frozenset({"lengths", "batch_sizes", "input_lengths", "target_lengths"})
# ... and per operator: CTC targets are moved to the device by ctc_loss itself ("as a service
# for the user", LossCTC.cpp), and cuDNN's CTC wants them on the host.
_HOST_BY_OPERATOR = {"_ctc_loss": {"targets"}, "_ctc_loss_backward": {"targets"}}
_HOST_BY_OPERATOR["_cudnn_ctc_loss"] = {"targets"}

# How the fast path returns the kernel's result (0: the operator takes the general path).
GENERAL, NEW, SELF, NEW_TUPLE = 0, 1, 2, 3
_TENSOR_TYPES = {"Tensor", "Optional[Tensor]"}


class OpFacts(NamedTuple):
    kernel: Any  # the C++ callable (OpOverload.__call__ is a Python frame more)
    fast: int  # GENERAL, NEW, SELF or NEW_TUPLE
    view: bool
    inplace_view: bool
    special: bool  # copy_, or an in-place view: looked at after the kernel ran
    host_ok: frozenset[int | str]  # positions and names of arguments a GPU takes from the host


# Keyed by id(): hashing an OpOverload is a Python call. The facts hold the operator (kernel's
# owner stays alive through ``func``), so an id is never reused while its entry exists.
FACTS: dict[int, tuple[Any, OpFacts]] = {}


def facts(func: Any) -> OpFacts:
    known = FACTS.get(id(func))
    if known is not None:
        return known[1]
    inplace_view = torch.Tag.inplace_view in func.tags
    found = OpFacts(
        func._op,
        GENERAL if func in _GENERAL_ONLY or inplace_view else _fast_kind(func._schema),
        func.is_view,
        inplace_view,
        inplace_view or func is COPY,
        _host_arguments(func),
    )
    FACTS[id(func)] = (func, found)
    return found


def _fast_kind(schema: Any) -> int:
    for argument in schema.arguments:
        kind = str(argument.type)
        if argument.kwarg_only and kind in _TENSOR_TYPES:
            return GENERAL  # out= and other keyword tensors
        if "Tensor" in kind and kind not in _TENSOR_TYPES:
            return GENERAL  # lists of tensors: cat, stack, _foreach_*
        if "Device" in kind:
            return GENERAL  # device= is read by the general path
    returns = schema.returns
    if not returns or any(str(item.type) != "Tensor" for item in returns):
        return GENERAL
    aliases = [item.alias_info for item in returns]
    if len(returns) == 1 and aliases[0] is not None and aliases[0].is_write:
        first = schema.arguments[0].alias_info
        same = first is not None and first.before_set == aliases[0].before_set
        return SELF if same else GENERAL
    if any(alias is not None and alias.is_write for alias in aliases):
        return GENERAL
    return NEW if len(returns) == 1 else NEW_TUPLE


def _host_arguments(func: Any) -> frozenset[int | str]:
    names = _HOST_SIZES | _HOST_BY_OPERATOR.get(func._schema.name.removeprefix("aten::"), set())
    found: set[int | str] = set()
    for position, argument in enumerate(func._schema.arguments):
        if argument.name in names:
            found.update((position, argument.name))
    return frozenset(found)
