"""``torch.Generator(device="cuda")`` and ``torch.set_default_device("cuda")`` on emulated devices.

A CPU build refuses both: a CUDA generator raises "Cannot get CUDA generator without ATen_cuda
library", and a CUDA default device leaves every factory on the host without a word. Here a CUDA
generator is a CPU generator that says it is on ``cuda:N`` (its numbers are the CPU's stream, as
every emulated number is the CPU's), and a CUDA default device is given to the factories torch
gives it to (device.py). Where a generator meets a device, the GPU's own check runs: a draw
on one device with a generator of another raises what a GPU raises, "Expected a 'cuda' device
type for generator but found 'cpu'". That is the error of ``DataLoader(shuffle=True)`` under
``set_default_device("cuda")``: its sampler draws with a CPU generator it makes itself.
"""

from __future__ import annotations

from typing import Any

import torch

from gpudoc.emulate import errors
from gpudoc.emulate.ordinal import requested_device, target_index

REAL_GENERATOR = torch.Generator


class _GeneratorType(type(torch.Generator)):  # type: ignore[misc]
    """``isinstance(g, torch.Generator)`` keeps holding for every generator, emulated or not."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, REAL_GENERATOR)

    def __subclasscheck__(cls, subclass: Any) -> bool:
        return isinstance(subclass, type) and issubclass(subclass, REAL_GENERATOR)


class EmulatedGenerator(torch.Generator, metaclass=_GeneratorType):  # type: ignore[misc]
    """What ``torch.Generator`` builds while devices are emulated: a plain generator, or for
    ``device="cuda:N"`` a CPU generator whose ``device`` is ``cuda:N``."""

    index: int

    def __new__(cls, device: Any = None) -> Any:
        requested = None if device is None else requested_device(device)
        if requested is None or requested.type != "cuda":
            return REAL_GENERATOR() if device is None else REAL_GENERATOR(device=device)
        generator = super().__new__(cls)
        generator.index = target_index(requested)
        return generator

    def __init__(self, device: Any = None) -> None:
        pass  # torch's constructor ran in __new__

    @property
    def device(self) -> torch.device:
        return torch.device("cuda", self.index)


def check(generator: Any, device: torch.device) -> None:
    """A GPU's ``check_generator``: a draw on ``device`` needs a generator of the same type."""
    if generator is None:
        return
    found = generator.device  # an emulated one says cuda:N
    if found.type != device.type:
        error = errors.EmulatedDeviceError(
            f"Expected a '{device.type}' device type for generator but found '{found.type}'", []
        )
        error.kind = "generator-device"
        raise error


def default_constructors() -> frozenset[str]:
    """The ``torch.*`` factories that take the default device, as torch's own DeviceContext
    gives it (``*_like`` and ``new_*`` follow their input instead)."""
    try:
        from torch.utils._device import _device_constructors

        return frozenset(f.__name__ for f in _device_constructors())
    except (ImportError, AttributeError):  # a torch without it: the plain constructors
        return _PLAIN_CONSTRUCTORS


_PLAIN_CONSTRUCTORS = frozenset(
    {"empty", "zeros", "ones", "full", "arange", "rand", "randn", "randint", "randperm"}
    | {"linspace", "logspace", "eye", "tensor", "as_tensor"}
)
