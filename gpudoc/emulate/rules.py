"""Which bug pattern a device error shows, and the ``gpudoc lint`` rule that finds it statically.

Each pattern carries the code the lint catalogue gives it (GPD1xx placement mismatches, GPD2xx
host/device boundary, GPD4xx multi-GPU). A code is cited only when ``gpudoc lint`` has that rule
(its name is read from gpudoc/lint/rule_names.py, generated from the rule classes: stdlib only,
so an emulated run never imports the lint engine); otherwise the pattern is named alone.
"""

from __future__ import annotations

import ast
import linecache
from dataclasses import dataclass
from typing import Any

import torch

from gpudoc.emulate.tracking import is_user_file
from gpudoc.lint.rule_names import RULE_NAMES


@dataclass
class Found:
    """What the user's frames say about one tensor (diagnose.py finds it)."""

    names: list[str]
    owner: torch.nn.Module | None = None
    owner_name: str | None = None
    plain_attribute: bool = False
    plain_container: str | None = None  # "model.layers" when the owner sits in a plain list
    root: torch.nn.Module | None = None  # the user's variable that holds the owner


Pattern = tuple[str, str | None]  # what the bug is, and the lint code that finds it
Classification = tuple[str, str | None, str | None]  # with the rule's name

NUMPY = ("a device tensor converted to NumPy without .cpu()", "GPD202")
DISCARDED = ("the result of .to() was discarded", "GPD103")
PLAIN_ATTRIBUTE = (
    "a tensor kept as a plain module attribute instead of a buffer",
    "GPD105",
)
FACTORY_IN_FORWARD = (
    "a tensor created in forward() without device=",
    "GPD106",
)
PLAIN_CONTAINER = (
    "submodules kept in a plain list or dict, which module.to() does not reach",
    "GPD104",
)
LOSS_WEIGHT = ("a loss weight left on the host", "GPD107")
MODULE_ON_HOST = (
    "a model created or reloaded on the host, never moved, used with data on the device",
    "GPD102",
)
INPUT_ON_HOST = (
    "a batch left on the host, fed to a model on the device",
    "GPD101",
)
TWO_DEVICES = ("tensors on two different GPUs meet in one operation", None)
ORDINAL = (
    "a device index beyond the visible GPUs",
    "GPD405",
)
INDEXING = ("a host tensor indexed with device indices", "GPD108")
DATA_PARALLEL = (
    "nn.DataParallel with its module not on device_ids[0]",
    "GPD402",
)
FORKED_WORKER = (
    "CUDA used inside a DataLoader worker process (in a Dataset or collate function)",
    "GPD204",
)
OPTIMIZER_STATE = (
    "optimizer state loaded while the model was on the host, then the model moved",
    "GPD302",
)
GENERATOR = ("a random generator on another device than the tensors it draws", "GPD110")
SHUFFLE_ON_DEFAULT_CUDA = (
    "DataLoader(shuffle=True) under a CUDA default device: its sampler draws with a CPU generator",
    "GPD502",
)
UNKNOWN = ("tensors on different devices meet in one operation", None)
HOST_FACTORY = ("a tensor created on the host (no device=), used with tensors on the device", None)
ASSIGNED_AFTER_MOVE = ("a submodule assigned after model.to(), which it does not reach", None)


def _assigned_after_move(facts: Found) -> bool:
    """``model.fc = nn.Linear(...)`` after ``model.to(device)``: the root moved, this part not."""
    moved = getattr(facts.root, "_gpudoc_moved_at", None) is not None
    return moved and getattr(facts.owner, "_gpudoc_moved_at", None) is None


def classify(
    error: BaseException, operands: list[tuple[str, torch.Tensor]], found: list[Found]
) -> Classification:
    pattern, code = _classify(error, operands, found)
    name = RULE_NAMES.get(code) if code is not None else None
    return (pattern, code, name) if name is not None else (pattern, None, None)


def _classify(
    error: BaseException, operands: list[tuple[str, torch.Tensor]], found: list[Found]
) -> Pattern:
    kind = getattr(error, "kind", "")
    if kind == "numpy-on-device":
        return NUMPY
    if kind == "invalid-device-ordinal":
        return ORDINAL
    if kind == "cuda-in-forked-worker":
        return FORKED_WORKER
    if kind == "generator-device":
        own_cpu_generator = str(error).endswith("found 'cpu'") and _in_sampler(error)
        return SHUFFLE_ON_DEFAULT_CUDA if own_cpu_generator else GENERATOR
    if str(error).startswith("indices should be"):
        return INDEXING
    if str(error).startswith("module must have its parameters and buffers on device"):
        return DATA_PARALLEL
    hosts = [
        (tensor, facts)
        for (_, tensor), facts in zip(operands, found, strict=True)
        if tensor.device.type == "cpu" and tensor.dim() > 0
    ]
    if not hosts:
        indices = {tensor.device for _, tensor in operands}
        return TWO_DEVICES if len(indices) > 1 else UNKNOWN
    if _in_optimizer_step(error):  # params on the device, their state (momentum...) is not
        return OPTIMIZER_STATE
    return _host_pattern(*hosts[0])


def _in_sampler(error: BaseException) -> bool:
    """Raised while a DataLoader sampler draws its permutation."""
    trace = error.__traceback__
    while trace is not None:
        filename = trace.tb_frame.f_code.co_filename.replace("\\", "/")
        if filename.endswith("/torch/utils/data/sampler.py"):
            return True
        trace = trace.tb_next
    return False


def _in_optimizer_step(error: BaseException) -> bool:
    """Raised by ``torch.optim`` itself: the step's own update, not the model that a closure
    (LBFGS's ``step(closure)``) runs from inside it."""
    in_optimizer = False
    trace = error.__traceback__
    while trace is not None:
        filename = trace.tb_frame.f_code.co_filename
        if "/torch/optim/" in filename.replace("\\", "/"):
            in_optimizer = True
        elif is_user_file(filename):
            in_optimizer = False  # the user's code (a closure) ran after the optimizer called it
        trace = trace.tb_next
    return in_optimizer


def _host_pattern(tensor: torch.Tensor, facts: Found) -> Pattern:
    """Why a tensor is on the host when its partners are on a device."""
    base = tensor._base if tensor._base is not None else tensor
    if copy_discarded(base):
        return DISCARDED
    if facts.plain_container is not None:
        return PLAIN_CONTAINER
    if facts.plain_attribute:
        return PLAIN_ATTRIBUTE
    if facts.owner is not None:
        if isinstance(facts.owner, torch.nn.modules.loss._Loss):
            return LOSS_WEIGHT
        if _assigned_after_move(facts):
            return ASSIGNED_AFTER_MOVE
        return MODULE_ON_HOST
    origin: Any = getattr(base, "_gpudoc_origin", None)
    if origin is not None and origin[3] == "forward":
        return FACTORY_IN_FORWARD
    if origin is not None and origin[0] == "created on the host":
        return HOST_FACTORY
    return INPUT_ON_HOST


def copy_discarded(tensor: torch.Tensor) -> bool:
    """The tensor's device copy was made by a statement of its own (``x.to(device)``), whose
    result nothing kept. A copy made inside a call (``loss(out, y.to(device))``) was used there:
    a later use of ``y`` is an input left on the host (GPD101), not a discarded move."""
    copied: Any = getattr(tensor, "_gpudoc_copied_at", None)
    if copied is None:
        return False
    filename, line = copied[0], copied[1]
    try:
        statement = ast.parse(linecache.getline(filename, line).strip()).body
    except SyntaxError:
        return True  # a statement over several lines: the copy is named as before
    moved = statement[0] if len(statement) == 1 else None
    return isinstance(moved, ast.Expr) and isinstance(moved.value, ast.Call)
