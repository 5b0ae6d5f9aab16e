"""``torch.cuda``'s random-number API on emulated devices: each device's default generator and
its state.

torch's own functions ask the driver (``current_device``) and read
``torch.cuda.default_generators``, which only a CUDA build's initialisation fills. On a GPU
machine under emulation that tuple stayed empty, so Lightning's ``isolate_rng`` and every
checkpoint that saves ``torch.cuda.get_rng_state_all()`` failed with "tuple index out of range"
(seen on an H200); on a CPU build they failed asking the driver. Here each emulated device has a
default generator, and its state is what a GPU's is: a CPU ByteTensor of 16 bytes, the seed and
the Philox offset. A state that is not a CPU ByteTensor, or has another size, is refused with the
GPU's words. Emulated draws still come from the CPU's stream (generators.py), so seeds and states
round-trip but do not steer them.
"""

from __future__ import annotations

import struct
from typing import Any

import torch

from gpudoc.emulate.generators import EmulatedGenerator
from gpudoc.emulate.state import STATE

SEED_AND_OFFSET = struct.Struct("<Qq")  # CUDAGeneratorImpl::get_state: uint64 seed, int64 offset
SEED_ONLY = struct.Struct("<Q")  # a state of 8 bytes sets the seed alone


class DeviceGenerators:
    """One default generator per emulated device, with the Philox offset a state carried."""

    def __init__(self, device_count: int) -> None:
        self.generators = tuple(EmulatedGenerator(device=index) for index in range(device_count))
        self.offsets = [0] * device_count

    def index(self, device: Any) -> int:
        """torch's reading of the ``device`` argument: an int, a string, a device; no index is
        the current device."""
        if isinstance(device, str):
            device = torch.device(device)
        index = device if isinstance(device, int) else device.index
        return STATE.current_index if index is None else index

    def get_rng_state(self, device: Any = "cuda") -> torch.Tensor:
        index = self.index(device)
        seed = self.generators[index].initial_seed()
        packed = SEED_AND_OFFSET.pack(seed, self.offsets[index])
        return torch.tensor(list(packed), dtype=torch.uint8)

    def get_rng_state_all(self) -> list[torch.Tensor]:
        return [self.get_rng_state(index) for index in range(len(self.generators))]

    def set_rng_state(self, new_state: torch.Tensor, device: Any = "cuda") -> None:
        index = self.index(device)
        generator = self.generators[index]  # IndexError for a device that is not there, as torch
        if not (
            isinstance(new_state, torch.Tensor)
            and new_state.layout == torch.strided
            and new_state.device.type == "cpu"
            and new_state.dtype == torch.uint8
        ):
            raise TypeError("RNG state must be a torch.ByteTensor")
        data = bytes(new_state.contiguous().tolist())
        if len(data) == SEED_ONLY.size:
            (seed,), offset = SEED_ONLY.unpack(data), 0
        elif len(data) == SEED_AND_OFFSET.size:
            seed, offset = SEED_AND_OFFSET.unpack(data)
        else:
            raise RuntimeError("RNG state is wrong size")
        generator.manual_seed(seed)
        self.offsets[index] = offset

    def set_rng_state_all(self, new_states: Any) -> None:
        for index, state in enumerate(new_states):
            self.set_rng_state(state, index)

    def manual_seed(self, seed: Any) -> None:
        self._seed(STATE.current_index, int(seed))

    def manual_seed_all(self, seed: Any) -> None:
        for index in range(len(self.generators)):
            self._seed(index, int(seed))

    def seed(self) -> None:
        index = STATE.current_index
        self.generators[index].seed()
        self.offsets[index] = 0

    def seed_all(self) -> None:
        self.seed()
        self.manual_seed_all(self.initial_seed())

    def initial_seed(self) -> int:
        return int(self.generators[STATE.current_index].initial_seed())

    def _seed(self, index: int, seed: int) -> None:
        self.generators[index].manual_seed(seed)
        self.offsets[index] = 0


FUNCTION_NAMES = (
    "get_rng_state",
    "get_rng_state_all",
    "set_rng_state",
    "set_rng_state_all",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "initial_seed",
)


def rng_attributes(device_count: int) -> dict[str, Any]:
    """The ``torch.cuda`` (and ``torch.cuda.random``) attributes to replace, by name."""
    generators = DeviceGenerators(device_count)
    attributes: dict[str, Any] = {name: getattr(generators, name) for name in FUNCTION_NAMES}
    attributes["default_generators"] = generators.generators
    return attributes
