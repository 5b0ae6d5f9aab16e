"""What one walk over a file found: the facts every rule reads. Plain mutable records."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from gpudoc.lint.analysis.values import Value


@dataclass
class Argument:
    node: cst.BaseExpression
    name: str | None
    """The plain name passed (``images``), when the argument is one."""
    value: Value


@dataclass
class ModuleCall:
    call: cst.Call
    module_name: str
    module: Value
    args: list[Argument]
    device_name: str | None
    """A name that holds the script's device in this scope, for fixes."""


@dataclass
class MixedCall:
    """A loss module or torch function called on tensors: all must share one device."""

    call: cst.Call
    function: str
    args: list[Argument]
    device_name: str | None


@dataclass
class ConditionalMove:
    """A module moved only inside an unrelated ``if``, then used with device data after it."""

    statement: cst.CSTNode
    name: str
    test: cst.BaseExpression


@dataclass
class HostThenTransfer:
    """``torch.zeros(...).to(device)``: built on the host, then copied."""

    move: cst.Call
    factory: cst.Call
    function: str


@dataclass
class DatasetMove:
    """A device move inside a Dataset subclass's method."""

    node: cst.Call
    dataset: str


@dataclass
class Rebinding:
    """``name = Module()`` where ``name`` held a module placed on the device before."""

    statement: cst.CSTNode
    name: str
    device_name: str | None
    first_use: cst.Call | None = None


@dataclass
class DiscardedMove:
    statement: cst.Expr
    call: cst.Call
    receiver: cst.BaseExpression
    receiver_value: Value
    method: str


@dataclass
class LoadCall:
    call: cst.Call
    device_name: str | None


@dataclass
class NumpyUse:
    node: cst.Call
    receiver: cst.BaseExpression
    value: Value
    function: str | None
    """None for ``t.numpy()``; the qualified function for ``np.mean(t)``."""
    from_call: bool = False
    """Seen while walking a function for one of its calls: other calls may pass other values."""
    site: cst.Call | None = None
    """The call (in the linted file) that hands the converting helper the device tensor through
    one of its parameters, when the helper is also called elsewhere or lives in another file:
    the finding belongs there (``imshow(images[i])``, not ``np.transpose(img)`` in imshow)."""
    site_argument: cst.Arg | None = None


@dataclass
class CudaMention:
    node: cst.CSTNode
    text: str
    guarded: bool
    device_name: str | None


@dataclass
class FactoryCall:
    call: cst.Call
    function: str
    """The torch factory, ``zeros``."""
    method: str
    """The enclosing method or function name."""
    in_module_class: bool
    has_device: bool
    moved_after: bool
    """Chained with .to()/.cuda()/.type_as()."""
    zero_dim: bool
    first_param: str | None
    """The enclosing function's first tensor parameter (``x`` in ``forward(self, x)``)."""
    callers: tuple[str, ...] = ()
    """The functions whose calls led here, outermost first (``forward`` for its helper)."""
    first_param_is_tensor: bool = False


@dataclass
class LossWeight:
    call: cst.Call
    weight: cst.BaseExpression
    weight_value: Value
    target: str | None
    """The name the criterion was bound to."""
    device_name: str | None
    chained_move: bool
    """``nn.CrossEntropyLoss(weight=w).to(device)``: the weight buffer moves with it."""


@dataclass
class StaleOptimizer:
    use: cst.Call
    optimizer: str
    module: str
    rebinding: cst.CSTNode


@dataclass
class EarlyStateLoad:
    load: cst.Call
    """``optimizer.load_state_dict(...)``."""
    optimizer: str
    module: str
    move: cst.CSTNode
    """The later statement that moved ``module`` to the device."""


@dataclass
class DDPWrap:
    call: cst.Call
    module_name: str | None
    module: Value
    has_device_ids: bool


@dataclass
class ProcessGroupInit:
    call: cst.Call
    backend: str | None
    has_device_id: bool


@dataclass
class EnvAssign:
    node: cst.CSTNode
    after_cuda_init: bool


@dataclass
class ClassAttr:
    attr: str
    statement: cst.CSTNode
    value: cst.BaseExpression
    shape: str
    """``tensor``, ``module-list``, ``module-dict``, ``empty-list``, ``empty-dict``."""


@dataclass
class ModuleClass:
    name: str
    node: cst.ClassDef
    lightning: bool
    init_attrs: list[ClassAttr] = field(default_factory=list)
    appended_modules: dict[str, cst.Call] = field(default_factory=dict)
    """attr -> a module constructor appended to ``self.attr`` (a plain list) in ``__init__``."""
    used_elsewhere: set[str] = field(default_factory=set)
    """Attributes read in methods other than ``__init__``."""
    moved_on_use: set[str] = field(default_factory=set)
    """Attributes moved by .to()/.cuda()/.type_as() where they are used."""
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
    module_calls: list[ModuleCall] = field(default_factory=list)
    mixed_calls: list[MixedCall] = field(default_factory=list)
    conditional_moves: list[ConditionalMove] = field(default_factory=list)
    host_then_transfer: list[HostThenTransfer] = field(default_factory=list)
    dataset_moves: list[DatasetMove] = field(default_factory=list)
    worker_datasets: set[str] = field(default_factory=set)
    """Dataset classes a DataLoader with num_workers > 0 reads."""
    rebindings: list[Rebinding] = field(default_factory=list)
    discarded_moves: list[DiscardedMove] = field(default_factory=list)
    loads: list[LoadCall] = field(default_factory=list)
    numpy_uses: list[NumpyUse] = field(default_factory=list)
    cuda_mentions: list[CudaMention] = field(default_factory=list)
    factories: list[FactoryCall] = field(default_factory=list)
    loss_weights: list[LossWeight] = field(default_factory=list)
    moved_names: set[str] = field(default_factory=set)
    """Names (any scope) that received .to()/.cuda() at some point."""
    stale_optimizers: list[StaleOptimizer] = field(default_factory=list)
    early_state_loads: list[EarlyStateLoad] = field(default_factory=list)
    ddp_wraps: list[DDPWrap] = field(default_factory=list)
    process_groups: list[ProcessGroupInit] = field(default_factory=list)
    env_assigns: list[EnvAssign] = field(default_factory=list)
    classes: list[ModuleClass] = field(default_factory=list)
