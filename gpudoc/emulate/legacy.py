"""The legacy typed constructors ``torch.cuda.FloatTensor(...)``, ``torch.cuda.LongTensor(...)``.

Many GAN scripts and tutorials still write ``Tensor = torch.cuda.FloatTensor if cuda else
torch.FloatTensor`` and then ``Tensor(n, 1).fill_(1.0)``, ``Tensor(numpy_array)`` or
``imgs.type(Tensor)``. On a CPU-only build these classes refuse to construct; here each builds
the host tensor with its CPU twin (``torch.FloatTensor``) and puts it on the current device, and
``isinstance(x, torch.cuda.FloatTensor)`` holds for emulated float tensors, as on a GPU.
"""

from __future__ import annotations

from typing import Any

import torch

from gpudoc.emulate.state import STATE

NAMES = (
    "FloatTensor",
    "DoubleTensor",
    "HalfTensor",
    "BFloat16Tensor",
    "ByteTensor",
    "CharTensor",
    "ShortTensor",
    "IntTensor",
    "LongTensor",
    "BoolTensor",
)


class _LegacyType(type):
    host: Any
    dtype: torch.dtype

    def __instancecheck__(cls, instance: Any) -> bool:
        return (
            isinstance(instance, torch.Tensor) and instance.is_cuda and instance.dtype == cls.dtype
        )

    def __call__(cls, *args: Any, **kwargs: Any) -> torch.Tensor:
        device = kwargs.pop("device", None)
        host = cls.host(*args, **kwargs)
        target = torch.device("cuda", STATE.current_index) if device is None else device
        return host.to(target)  # Tensor.to is the emulated move while emulation is on

    def __repr__(cls) -> str:
        return f"<class 'torch.cuda.{cls.__name__}'>"


def legacy_types() -> dict[str, Any]:
    """``torch.cuda.<Name>Tensor`` for each legacy name, by attribute name."""
    types = {}
    for name in NAMES:
        host = getattr(torch, name)
        types[name] = _LegacyType(name, (), {"host": host, "dtype": host.dtype})
    return types


def type_name(dtype: Any) -> Any:
    """``x.type(torch.cuda.FloatTensor)``: the class as the string ``Tensor.type`` takes."""
    if isinstance(dtype, _LegacyType):
        return f"torch.cuda.{dtype.__name__}"
    if type(dtype) is type(torch.FloatTensor):  # torch.FloatTensor and the like: host types
        return f"torch.{dtype.__name__}"
    return dtype


def default_tensor_type(original: Any) -> Any:
    """``torch.set_default_tensor_type("torch.cuda.FloatTensor")`` (or the class): new tensors
    are CUDA tensors of that type, as ``set_default_dtype`` and ``set_default_device("cuda")``
    make them; a host type afterwards brings the default back to the CPU."""
    chosen_here = False

    def patched(kind: Any) -> None:
        nonlocal chosen_here
        name = type_name(kind)
        if isinstance(name, str) and name.startswith("torch.cuda."):
            original(getattr(torch, name.rsplit(".", 1)[-1]))  # its dtype, checked as on a GPU
            torch.set_default_device("cuda")
            chosen_here = True
            return
        original(kind)
        if chosen_here:
            torch.set_default_device(None)
            chosen_here = False

    return patched
