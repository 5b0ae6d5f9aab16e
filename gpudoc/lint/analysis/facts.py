"""What one walk over a file found: the facts every rule reads. Plain mutable records."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst


@dataclass
class ModuleClass:
    name: str
    node: cst.ClassDef
    lightning: bool
    custom_apply: bool = False
    places_itself: bool = False
    """``self.to(...)`` / ``self.cuda()`` in ``__init__``."""


@dataclass
class FileFlags:
    places: bool = False
    """Something is placed on a non-CPU device: the gate for placement rules."""
    device_notion: bool = False
    """The file mentions CUDA or a device at all."""
    default_device: bool = False
    """torch.set_default_device / set_default_tensor_type to a device."""
    frameworks: set[str] = field(default_factory=set)
    """lightning, accelerate, ... (they move batches themselves)."""
    availability_check: bool = False
    cuda_only: bool = False
    """NCCL or per-rank set_device: code meant for GPUs only."""
    per_rank_device: bool = False
    loads_checkpoints: bool = False
    """``torch.load`` is called somewhere (GPD201 reads the whole file only then)."""


@dataclass
class Facts:
    flags: FileFlags = field(default_factory=FileFlags)
    classes: list[ModuleClass] = field(default_factory=list)
