"""``torch.cuda`` and ``torch.accelerator`` as a script sees them on a machine with N GPUs.

The figures are those of an NVIDIA A100-SXM4-80GB, so that code which branches on names,
capability or memory takes its GPU path. Streams, events and synchronisation are no-ops; memory
figures count the bytes of live emulated tensors.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from typing import Any

import torch

from gpudoc.emulate import errors
from gpudoc.emulate.state import STATE

DEVICE_NAME = "NVIDIA A100-SXM4-80GB"
TOTAL_MEMORY_BYTES = 85_094_825_984
CAPABILITY = (8, 0)
_peak_bytes = 0


@dataclass(frozen=True)
class EmulatedDeviceProperties:
    name: str = DEVICE_NAME
    major: int = CAPABILITY[0]
    minor: int = CAPABILITY[1]
    total_memory: int = TOTAL_MEMORY_BYTES
    multi_processor_count: int = 108
    is_integrated: int = 0
    is_multi_gpu_board: int = 0
    L2_cache_size: int = 41_943_040
    uuid: str = "00000000-0000-0000-0000-000000000000"

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // 2**20}MB, "
            f"multi_processor_count={self.multi_processor_count})"
        )


def index_of(device: Any = None) -> int:
    """A device argument (None, int, str, torch.device) as an emulated index, checked."""
    if device is None:
        return STATE.current_index
    if isinstance(device, int):
        index = device
    else:
        parsed = torch.device(device)
        if parsed.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {parsed}")
        index = STATE.current_index if parsed.index is None else parsed.index
    if not 0 <= index < STATE.device_count:
        raise errors.invalid_ordinal()
    return index


def device_properties(device: Any = None) -> EmulatedDeviceProperties:
    """Identical GPUs, each with its own UUID; torch's has no ``GPU-`` prefix (NVML's has)."""
    physical = STATE.physical[index_of(device)]  # a child narrowed by CUDA_VISIBLE_DEVICES
    return EmulatedDeviceProperties(uuid=f"00000000-0000-0000-0000-{physical:012d}")


def set_device(device: Any) -> None:
    STATE.current_index = index_of(device)


def memory_allocated(device: Any = None) -> int:
    """Bytes held by live emulated tensors on that device (each storage counted once)."""
    global _peak_bytes
    index = index_of(device)
    storages: dict[int, int] = {}
    for obj in gc.get_objects():  # emulated tensors (tensor.py) are those with an _inner
        # type(), not isinstance(): isinstance reads __class__, which deprecated proxies such
        # as torch.distributed.reduce_op answer with a FutureWarning in the user's output
        if issubclass(type(obj), torch.Tensor) and hasattr(obj, "_inner") and obj._index == index:
            storage = obj._inner.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
    total = sum(storages.values())
    _peak_bytes = max(_peak_bytes, total)
    return total


def max_memory_allocated(device: Any = None) -> int:
    memory_allocated(device)
    return _peak_bytes


def mem_get_info(device: Any = None) -> tuple[int, int]:
    return TOTAL_MEMORY_BYTES - memory_allocated(device), TOTAL_MEMORY_BYTES


class Stream:
    """A CUDA stream that runs nothing out of order: the CPU executes eagerly."""

    def __init__(self, device: Any = None, priority: int = 0, **_: Any) -> None:
        self.device = torch.device("cuda", index_of(device))
        self.priority = priority

    def synchronize(self) -> None:
        return None

    def wait_stream(self, stream: Any) -> None:
        return None

    def wait_event(self, event: Any) -> None:
        return None

    def record_event(self, event: Any = None) -> Event:
        event = event if event is not None else Event()
        event.record(self)
        return event  # type: ignore[no-any-return]

    def query(self) -> bool:
        return True

    def is_capturing(self) -> bool:
        return False

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class Event:
    """Events record wall-clock time, so ``elapsed_time`` gives real (CPU) milliseconds."""

    def __init__(self, enable_timing: bool = False, **_: Any) -> None:
        self.enable_timing = enable_timing
        self._time_s: float | None = None

    def record(self, stream: Any = None) -> None:
        self._time_s = time.perf_counter()

    def elapsed_time(self, end_event: Event) -> float:
        if self._time_s is None or end_event._time_s is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time_s - self._time_s) * 1000.0

    def synchronize(self) -> None:
        return None

    def wait(self, stream: Any = None) -> None:
        return None

    def query(self) -> bool:
        return True


class DeviceContext:
    """``with torch.cuda.device(1):`` switches the current device for the block."""

    def __init__(self, device: Any) -> None:
        self.index = index_of(device) if device is not None and device != -1 else None
        self.previous = STATE.current_index

    def __enter__(self) -> None:
        self.previous = STATE.current_index
        if self.index is not None:
            STATE.current_index = self.index

    def __exit__(self, *exc: object) -> None:
        STATE.current_index = self.previous


def _no_op(*args: Any, **kwargs: Any) -> None:
    return None


def _named_no_op(name: str) -> Any:
    # A distinct function per name: torch._dynamo indexes torch.cuda's functions by identity.
    def no_op(*args: Any, **kwargs: Any) -> None:
        return None

    no_op.__name__ = no_op.__qualname__ = name
    return no_op


DEFAULT_STREAM = Stream.__new__(Stream)
# torch.cuda functions with nothing to do on an emulated device (the CPU runs eagerly).
NO_OP_NAMES = (
    "init",
    "_lazy_init",
    "synchronize",
    "empty_cache",
    "ipc_collect",
    "reset_peak_memory_stats",
    "reset_max_memory_allocated",
    "set_stream",
)


def cuda_functions() -> dict[str, Any]:
    """The ``torch.cuda`` attributes to replace, by name."""
    default_stream = DEFAULT_STREAM
    default_stream.device, default_stream.priority = torch.device("cuda", 0), 0
    return {
        "is_available": lambda: STATE.device_count > 0,
        "is_initialized": lambda: True,
        "device_count": lambda: STATE.device_count,
        "current_device": lambda: STATE.current_index,
        "set_device": set_device,
        "get_device_name": lambda device=None: (index_of(device), DEVICE_NAME)[1],
        "get_device_capability": lambda device=None: (index_of(device), CAPABILITY)[1],
        "get_device_properties": device_properties,
        "get_arch_list": lambda: ["sm_80", "sm_86", "sm_90"],
        "is_bf16_supported": lambda including_emulation=True: True,
        "memory_allocated": memory_allocated,
        "max_memory_allocated": max_memory_allocated,
        "memory_reserved": memory_allocated,
        "max_memory_reserved": max_memory_allocated,
        "mem_get_info": mem_get_info,
        "Stream": Stream,
        "Event": Event,
        "device": DeviceContext,
        "stream": lambda stream=None: stream if stream is not None else default_stream,
        "current_stream": lambda device=None: default_stream,
        "is_current_stream_capturing": lambda: False,
        "default_stream": lambda device=None: default_stream,
        **{name: _named_no_op(name) for name in NO_OP_NAMES},
    }


def accelerator_functions() -> dict[str, Any]:
    """The ``torch.accelerator`` attributes to replace (DataLoader pinning asks these)."""
    return {
        "is_available": lambda: STATE.device_count > 0,
        "device_count": lambda: STATE.device_count,
        "current_accelerator": lambda check_available=False: torch.device("cuda"),
        "current_device_index": lambda: STATE.current_index,
        "set_device_index": set_device,
        "current_stream": lambda device=None: DEFAULT_STREAM,
        "device_index": DeviceContext,
        "synchronize": _named_no_op("synchronize"),
    }
