"""Install the emulated devices into torch for one process, and take them out again.

Everything the script can reach is patched at the attribute it is looked up by: ``torch.cuda``
and ``torch.accelerator`` functions, ``torch.autocast("cuda")``, ``torch.save`` / ``torch.load``,
DataLoader pinning and batch capping, ``nn.Module.to`` / ``.cuda``; global module and optimizer
hooks date parameters and count the phases the script reaches.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import torch
import torch.nn.parallel._functions as parallel_functions
import torch.nn.parallel.comm as parallel_comm
import torch.utils._device
import torch.utils.data
import torch.utils.data._utils.pin_memory as pin_memory_module
from torch.nn.modules import module as module_globals
from torch.optim import optimizer as optimizer_globals

from gpudoc.emulate import (
    cuda_api,
    cuda_rng,
    device,
    generators,
    legacy,
    loading,
    parallel,
    phases,
    tracking,
)
from gpudoc.emulate.state import STATE


class _Patcher:
    """Sets attributes; ``undo`` puts back each original, in reverse order, and removes those
    that did not exist before (or existed only on a base class), as ``mock.patch`` does."""

    def __init__(self) -> None:
        self.stack = contextlib.ExitStack()

    def set(self, owner: Any, name: str, value: Any) -> None:
        patch = mock.patch.object(owner, name, value, create=not hasattr(owner, name))
        self.stack.enter_context(patch)

    def undo(self) -> None:
        self.stack.close()


@contextlib.contextmanager
def emulated_cuda(device_count: int = 1, batch_limit: int | None = None) -> Iterator[None]:
    """Inside this block torch believes ``device_count`` CUDA devices exist."""
    STATE.configure(device_count, batch_limit)
    patcher = _Patcher()
    handles: list[Any] = []
    default_device = torch.utils._device.CURRENT_DEVICE
    try:
        _patch_torch(patcher)
        handles = _register_hooks()
        yield
    finally:
        for handle in handles:
            handle.remove()
        patcher.undo()
        if torch.utils._device.CURRENT_DEVICE is not default_device:
            torch.set_default_device(default_device)  # the script's set_default_device
        registry = torch.serialization._package_registry
        registry[:] = [entry for entry in registry if entry[1] is not tracking.tag_saved_storage]


def _patch_torch(patcher: _Patcher) -> None:
    _patch_placement(patcher)
    for name, value in cuda_api.cuda_functions().items():
        patcher.set(torch.cuda, name, value)
    for name, value in cuda_rng.rng_attributes(STATE.device_count).items():
        patcher.set(torch.cuda, name, value)
        if name in cuda_rng.FUNCTION_NAMES:  # torch.cuda.random.manual_seed(...) too
            patcher.set(torch.cuda.random, name, value)
    for name, value in legacy.legacy_types().items():
        patcher.set(torch.cuda, name, value)
    patcher.set(
        torch, "set_default_tensor_type", legacy.default_tensor_type(torch.set_default_tensor_type)
    )
    for name, value in cuda_api.accelerator_functions().items():
        patcher.set(torch.accelerator, name, value)
    patcher.set(pin_memory_module, "pin_memory", lambda data, device=None: data)
    for name, function in parallel.FUNCTIONS.items():
        patcher.set(parallel_comm, name, function)
    scatter = parallel_functions.Scatter
    patcher.set(scatter, "forward", parallel.scatter_without_streams(scatter.forward))
    patcher.set(torch, "save", loading.counted_save(torch.save))
    patcher.set(torch, "load", loading.adopting_load(torch.load))
    loader = torch.utils.data.DataLoader
    patcher.set(loader, "__iter__", phases.capped_iter(loader.__iter__))
    patcher.set(loader, "__len__", phases.capped_len(loader.__len__))
    patcher.set(torch, "compile", _eager_compile)
    # An RNN asks whether cuDNN takes its CUDA weights; the CPU build warns on every ask.
    patcher.set(torch.backends.cudnn, "is_acceptable", lambda tensor: False)
    patcher.set(torch.nn.Module, "__call__", phases.counted_call(torch.nn.Module.__call__))
    patcher.set(torch.nn.Module, "to", _counting_module_move(torch.nn.Module.to))
    patcher.set(torch.nn.Module, "cuda", _counting_module_move(torch.nn.Module.cuda))
    patcher.set(torch.nn.Module, "_apply", _swapping_apply(torch.nn.Module._apply))
    autocast = torch.amp.autocast_mode.autocast
    patcher.set(autocast, "__init__", _cuda_autocast_on_cpu(autocast.__init__))
    torch.serialization.register_package(1, tracking.tag_saved_storage, tracking.restore_storage)


def _patch_placement(patcher: _Patcher) -> None:
    takes_default = generators.default_constructors()
    for name in device.FACTORY_NAMES:
        if hasattr(torch, name):
            factory = device.device_aware(getattr(torch, name), name in takes_default)
            patcher.set(torch, name, factory)
    patcher.set(torch, "Generator", generators.EmulatedGenerator)
    context = torch.utils._device.DeviceContext  # set_default_device, `with torch.device(...)`
    default_device = device.default_device_function(context.__torch_function__, takes_default)
    patcher.set(context, "__torch_function__", default_device)
    tensor = torch.Tensor
    for name in device.TENSOR_FACTORY_NAMES:
        patcher.set(tensor, name, device.device_aware(getattr(tensor, name)))
    patcher.set(tensor, "to", device.host_to)
    patcher.set(tensor, "cuda", device.host_cuda)
    patcher.set(tensor, "type", device.host_type(tensor.type))
    patcher.set(tensor, "type_as", device.host_type_as(tensor.type_as))
    patcher.set(tensor, "pin_memory", device.host_pin_memory)
    patcher.set(tensor, "backward", device.counted_backward(tensor.backward))


def _register_hooks() -> list[Any]:
    return [
        module_globals.register_module_parameter_registration_hook(_date_parameter),
        module_globals.register_module_buffer_registration_hook(_date_parameter),
        optimizer_globals.register_optimizer_step_post_hook(phases.optimizer_stepped),
    ]


def _date_parameter(module: torch.nn.Module, name: str, tensor: Any) -> None:
    if tensor is not None and tracking.origin(tensor) is None:
        tracking.set_origin(tensor, "created on the host", tracking.construction_site())


def _counting_module_move(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def move(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        STATE.modules_moved += 1
        location = tracking.user_location()
        for submodule in self.modules():
            submodule.__dict__["_gpudoc_moved_at"] = location
        return method(self, *args, **kwargs)

    return move


def _swapping_apply(apply: Callable[..., Any]) -> Callable[..., Any]:
    """``module.to()`` swaps each parameter for its emulated copy (``swap_tensors``), so that
    the Parameter objects, and the optimizers holding them, stay the same, as on a GPU."""

    @functools.wraps(apply)
    def patched(self: torch.nn.Module, fn: Any, recurse: bool = True) -> Any:
        before = torch.__future__.get_swap_module_params_on_conversion()
        torch.__future__.set_swap_module_params_on_conversion(True)
        try:
            return apply(self, fn, recurse)
        finally:
            torch.__future__.set_swap_module_params_on_conversion(before)

    return patched


def _eager_compile(model: Any = None, **kwargs: Any) -> Any:
    """torch.compile would generate Triton for CUDA; emulation runs the model eagerly."""
    STATE.reached("torch.compile skipped (eager)", tracking.where_text())
    if model is None:
        return lambda fn: fn
    return model


def _cuda_autocast_on_cpu(init: Callable[..., None]) -> Callable[..., None]:
    """``autocast("cuda")`` casts CUDA tensors; emulated ones are CPU tensors underneath."""

    @functools.wraps(init)
    def patched(self: Any, device_type: str, dtype: Any = None, *args: Any, **kwargs: Any) -> None:
        if device_type == "cuda":
            device_type, dtype = "cpu", dtype if dtype is not None else torch.float16
            if dtype not in (torch.float16, torch.bfloat16):
                # CUDA autocast takes float32 silently (nanoGPT --dtype=float32); CPU autocast
                # would warn from here and disable itself: disable it without the warning.
                named = dict(zip(("enabled", "cache_enabled"), args, strict=False))
                args, kwargs = (), {**kwargs, **named, "enabled": False}
        init(self, device_type, dtype, *args, **kwargs)

    return patched
