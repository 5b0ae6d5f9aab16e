"""The emulated machine: how many devices, the current one, and what the script did with them."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class EmulationState:
    """Mutable on purpose: one per process, updated on the hot path with plain attribute writes."""

    device_count: int = 1
    current_index: int = 0
    batch_limit: int | None = None
    devices: list[torch.device] = field(default_factory=lambda: [torch.device("cuda", 0)])
    physical: list[int] = field(default_factory=lambda: [0])  # the machine's GPU behind each
    cuda_initialized: bool = False  # a tensor reached a device (forked workers inherit this)
    host_requested: bool = False  # the user's code asked for device="cpu" (see tensor.dispatch)
    ops_on_device: int = 0
    tensors_moved: int = 0
    modules_moved: int = 0
    batches_seen: int = 0
    loops_capped: int = 0
    phases: dict[str, int] = field(default_factory=dict)
    phase_lines: dict[str, str] = field(default_factory=dict)
    phase_devices: dict[str, set[str]] = field(default_factory=dict)

    def configure(self, device_count: int, batch_limit: int | None) -> None:
        """Start afresh: the machine as asked, every counter at zero."""
        fresh = EmulationState(device_count=device_count, batch_limit=batch_limit)
        fresh.devices = [torch.device("cuda", index) for index in range(device_count)]
        fresh.physical = list(range(device_count))
        self.__dict__.update(fresh.__dict__)

    def reached(self, phase: str, where: str | None = None) -> None:
        """Count a phase (train step, save, load, ...) and remember where it first happened."""
        self.phases[phase] = self.phases.get(phase, 0) + 1
        if where is not None:
            self.phase_lines.setdefault(phase, where)


STATE = EmulationState()
