"""What the walk knows about a file as a whole: its flags, and the nn.Module subclasses it
defines. Rules read them through ``Semantic`` (during the walk) and ``Context`` (after it)."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst


@dataclass
class ModuleClass:
    """An nn.Module (or LightningModule) subclass of the file or of the project's modules."""

    name: str
    node: cst.ClassDef
    lightning: bool
    custom_apply: bool = False
    """It defines its own ``_apply`` / ``to`` / ``cuda``."""
    places_itself: bool = False
    """``self.to(...)`` / ``self.cuda()`` in ``__init__``."""
    placing_parameters: frozenset[str] = frozenset()
    """Device parameters of ``__init__`` it moves what it builds to (self_placing.py)."""
    weighted: bool = True
    """It may hold parameters, buffers or submodules (parameterless.py: a loss written as a
    module that stores nothing does not, and runs wherever its inputs are)."""
    follows_inputs: set[str] = field(default_factory=set)
    """Attributes its methods bring to their inputs' device where they use them
    (follows_inputs.py: ``self.w.to(x.device)``, ``to_device(self.w, tensor=x)``)."""
    weights_from: frozenset[str] | None = None
    """The ``__init__`` parameters whose arguments are all it can hold (a loss keeping
    ``scale``, a wrapper keeping ``net``): an instance's call decides. None: it may build
    weights of its own."""


@dataclass
class FileFlags:
    """Whole-file observations, complete once the walk is over."""

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
    constant_set_device: bool = False
    """``torch.cuda.set_device(0)``: a GPU job, but one binding shared by every rank."""
    loads_checkpoints: bool = False
    """``torch.load`` is called somewhere (GPD201 reads the whole file only then)."""
