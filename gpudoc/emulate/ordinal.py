"""Which device a ``device=`` argument asks for, and which emulated device ``cuda`` / ``cuda:N``
means: its own module, so that whatever builds device objects (tensors, generators) can ask
without importing the dispatcher."""

from __future__ import annotations

from typing import Any

import torch

from gpudoc.emulate import errors
from gpudoc.emulate.state import STATE


def requested_device(device: Any) -> torch.device:
    """A ``device=`` argument as torch reads it: an index means that CUDA device."""
    return torch.device("cuda", device) if isinstance(device, int) else torch.device(device)


def target_index(device: torch.device) -> int:
    """The emulated index for ``cuda`` / ``cuda:N``, checked against the device count."""
    index = STATE.current_index if device.index is None else device.index
    if not 0 <= index < STATE.device_count:
        raise errors.invalid_ordinal()
    return index
