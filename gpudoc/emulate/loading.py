"""``torch.save`` / ``torch.load`` with emulated devices.

Saving writes a real CUDA checkpoint: CPU bytes tagged ``cuda:N`` (tracking.tag_saved_storage), so
the file loads on a GPU machine as it would have been written there. Loading without
``map_location`` puts ``cuda:N`` storages back on emulated devices; ``map_location="cpu"`` keeps
them on the host, as on a GPU.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from gpudoc.emulate import errors, tracking
from gpudoc.emulate.state import STATE
from gpudoc.emulate.tensor import EmulatedTensor, to_device


def counted_save(save: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(save)
    def patched(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
        STATE.reached("checkpoint saved", tracking.where_text())
        tracking.saved_storages.clear()
        try:
            return save(obj, f, *args, **kwargs)
        finally:
            tracking.saved_storages.clear()

    return patched


def adopting_load(load: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(load)
    def patched(*args: Any, **kwargs: Any) -> Any:
        where_text = tracking.where_text()
        tracking.loaded_storages.clear()
        try:
            result = load(*args, **kwargs)  # the script's own load: its errors are its own
            STATE.reached("checkpoint loaded", where_text)  # only a load that worked
            where = tracking.user_location()
            try:
                return _adopt(result, where, set())
            except Exception as failure:
                doing = "putting what torch.load returned on devices"
                raise errors.GpudocFailure(doing, failure) from failure
        finally:
            tracking.loaded_storages.clear()

    return patched


def _adopt(value: Any, where: tracking.Location | None, seen: set[int]) -> Any:
    """Wrap every loaded tensor whose storage came from a ``cuda`` location."""
    if id(value) in seen:
        return value
    seen.add(id(value))
    if isinstance(value, torch.Tensor) and not isinstance(value, EmulatedTensor):
        return _adopt_tensor(value, where)
    if isinstance(value, torch.nn.Module):
        _adopt_module(value, where)
    elif isinstance(value, dict):
        for key in list(value):
            value[key] = _adopt(value[key], where, seen)
    elif isinstance(value, list):
        value[:] = [_adopt(item, where, seen) for item in value]
    elif isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_adopt(item, where, seen) for item in value)
    return value


def _adopt_tensor(tensor: torch.Tensor, where: tracking.Location | None) -> torch.Tensor:
    index = tracking.loaded_storages.get(tensor.untyped_storage().data_ptr())
    if index is None:
        tracking.set_origin(tensor, "loaded to the host", where)
        return tensor
    wrapped = to_device(tensor.detach(), index)
    if isinstance(tensor, torch.nn.Parameter):
        wrapped = torch.nn.Parameter(wrapped, requires_grad=tensor.requires_grad)
    elif tensor.requires_grad:
        wrapped.requires_grad_(True)
    tracking.set_origin(wrapped, f"loaded to cuda:{index}", where)
    return wrapped


def _adopt_module(module: torch.nn.Module, where: tracking.Location | None) -> None:
    for submodule in module.modules():
        # RNNs keep weak references to their weights, which swap_tensors refuses: drop them
        # and let the RNN take them again, as its own _apply() does for module.to().
        rnn = isinstance(submodule, torch.nn.RNNBase)
        if rnn:
            submodule._flat_weight_refs = []
        for param in list(submodule._parameters.values()):
            if param is not None:
                adopted = _adopt_tensor(param, where)
                if adopted is not param:
                    torch.utils.swap_tensors(param, adopted)
        for name, buffer in list(submodule._buffers.items()):
            if buffer is not None:
                submodule._buffers[name] = _adopt_tensor(buffer, where)
        if rnn:
            submodule._init_flat_weights()
