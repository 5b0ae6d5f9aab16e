"""GPD108: a host tensor indexed by device indices (and index ops mixing devices)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import (
    BindingEvent,
    CallEvent,
    ClassEvent,
    FunctionEvent,
    Semantic,
    SubscriptEvent,
)
from gpudoc.lint.analysis.functions import bind_arguments
from gpudoc.lint.analysis.names import built_class, dotted
from gpudoc.lint.analysis.semantic import ModuleClass
from gpudoc.lint.analysis.values import Kind, Place, Value
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.rules._helpers import every_parameter

HOST_SELF_INDEX = frozenset(
    {
        "index_select", "gather", "scatter", "scatter_", "scatter_add", "scatter_add_",
        "index_add", "index_add_", "index_copy", "index_copy_", "index_fill", "index_fill_",
        "index_put", "index_put_", "take", "put_", "take_along_dim",
    }
)  # fmt: skip
"""Tensor methods that refuse device indices on a host tensor."""
SAME_DEVICE_INDEX = frozenset({"index_select", "gather", "take_along_dim"})
"""...and that refuse host indices on a device tensor too."""
PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


@dataclass(frozen=True)
class Pending:
    """A finding on ``self.<attr>``: reported at the end unless the attribute moves somewhere."""

    report: Report
    owner: str | None
    attr: str


@dataclass(frozen=True)
class Deferred:
    """A host tensor indexed in a module's ``forward`` by one of its inputs, whose place only
    the module's calls tell (``bank(feats, index)`` with ``index`` on the device)."""

    finding: Pending | Report
    """What is reported when a call passes a device tensor: held back as ``self.*`` ones are."""
    forward: cst.FunctionDef
    inputs: frozenset[str]
    """The parameters of ``forward`` used as the index."""


class IndexAcrossDevices(Rule):
    """A host tensor indexed by device indices, or an index op given tensors on two devices.

    ## What it does
    Finds `table[idx]` where `table` is known to live on the CPU and `idx` on the device: a
    noise schedule or lookup table built on the CPU in `__init__` (a plain attribute, not a
    buffer) and indexed by a timestep tensor drawn on the GPU, `torch.eye(n)[labels]` one-hot
    encodings of device labels, memory banks, and stores (`cm[t, p] += 1`, `x[mask] = 0`) at
    device indices into a host tensor. Also `index_select`, `gather`, `scatter_`,
    `index_add_`, `index_put_` on a host tensor with device indices, and `index_select` /
    `gather` on a device tensor with host indices.

    ## Why is this bad?
    PyTorch refuses both: `RuntimeError: indices should be either on cpu or on the same device
    as the indexed tensor (cpu)`, and `Expected all tensors to be on the same device ... (when
    checking argument for argument index in method wrapper_CUDA_gather)`. The code runs on a
    CPU-only machine and fails on the first GPU run. (A device tensor indexed by host indices
    with `[]` is fine: PyTorch copies the indices.)

    ## Example
    ```python
    class Diffusion(nn.Module):
        def __init__(self):
            super().__init__()
            self.alphas = torch.cumprod(1 - torch.linspace(1e-4, 0.02, 1000), 0)

        def forward(self, x):
            t = torch.randint(0, 1000, (x.size(0),), device=x.device)
            a = self.alphas[t]
    ```

    ## Use instead
    ```python
            self.register_buffer("alphas", torch.cumprod(1 - torch.linspace(1e-4, 0.02, 1000), 0))
    ```
    (a buffer moves with the model), or index with `t.cpu()` and move the result.

    ## Known problems
    Only tensors whose place the analysis knows are checked: a table or an index that comes
    from a parameter, a helper of another file or a container is not; an index that is an
    input of `forward` is checked where this file calls the module (`bank(feats, index)` with
    `index` on the device), not where another file does. An attribute set
    anywhere but `__init__`, moved where it is used, or kept in a class with its own `_apply`
    is not reported.

    ## Fix safety
    No fix: whether the table should become a buffer or the index move to the host is a choice.
    """

    CODE = "GPD108"
    NAME = "index-across-devices"
    SUMMARY = "a host tensor indexed by device indices: PyTorch refuses it on the GPU"
    EVENTS = ("subscript", "call", "binding", "class", "function")
    VALID = (
        """\
import torch
import torch.nn as nn
class Diffusion(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("alphas", torch.linspace(0.9, 0.1, 1000))
        self.pos = nn.Parameter(torch.zeros(1000, 8))
    def forward(self, x):
        t = torch.randint(0, 1000, (x.size(0),), device=x.device)
        return x * self.alphas[t][:, None] + self.pos[t]
model = Diffusion().cuda()
""",
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
labels = torch.randint(0, 10, (8,)).to(device)
table = torch.randn(10, 4).to(device)
rows = table[labels]
host = torch.eye(10)[labels.cpu()]
picked = table.index_select(0, torch.arange(3, device=device))
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
device = torch.device("cuda")
labels = torch.randint(0, 10, (8,)).to(device)
one_hot = torch.eye(10)[labels]
""",
            line=4,
            col=11,
        ),
        Invalid(
            """\
import torch
import torch.nn as nn
class Diffusion(nn.Module):
    def __init__(self):
        super().__init__()
        self.alphas = torch.linspace(0.9, 0.1, 1000)
    def forward(self, x):
        t = torch.randint(0, 1000, (x.size(0),), device=x.device)
        return x * self.alphas[t][:, None]
model = Diffusion().cuda()
""",
            line=9,
            col=20,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[Pending] = []
        self.set_outside_init: set[tuple[str | None, str]] = set()
        self.classes: dict[str, ModuleClass] = {}
        self.moved_on_use: dict[int, set[str]] = {}
        """id of a module class -> attributes moved where they are used (``self.mean.to(x)``)."""
        self.entry: dict[cst.FunctionDef, dict[str, Value]] = {}
        """A module's ``forward`` -> its parameters' values on entry to the latest walk."""
        self.deferred: dict[str, list[Deferred]] = {}
        """Module class name -> host tensors its ``forward`` indexes by its inputs."""

    def on_function(self, event: FunctionEvent, semantic: Semantic) -> None:
        if event.node.name.value == "forward" and semantic.module_class is not None:
            self.entry[event.node] = event.params

    def on_class(self, event: ClassEvent, semantic: Semantic) -> None:
        if event.module_class is not None:
            self.classes[event.module_class.name] = event.module_class

    def on_subscript(self, event: SubscriptEvent, semantic: Semantic) -> None:
        # a row of an iterated vector is a 0-dim tensor: PyTorch indexes with its value
        indices = [index for index in event.indices if not index.row]
        if not _on_host(event.base):
            return
        shown = _shown(event.node.value)
        message = (
            f"`{shown}` is on the CPU and its index is on the device: on a GPU this fails with "
            f"`indices should be either on cpu or on the same device as the indexed tensor`; "
            f"{_advice(shown, event.node.value, semantic)}"
        )
        report = Report(event.node, message)
        if any(_on_device(index) or _moved_there(index) for index in indices):
            self.add(report, event.node.value, event.base, semantic)
            return
        nodes = [e.slice.value for e in event.node.slice if isinstance(e.slice, cst.Index)]
        self.defer(report, event.node.value, event.base, nodes, semantic)

    def defer(
        self,
        report: Report,
        base: cst.BaseExpression,
        value: Value,
        indices: list[cst.BaseExpression],
        semantic: Semantic,
    ) -> None:
        """``self.features[index]`` in ``forward(self, feats, index)``: the index is whatever
        the module's calls pass; they tell whether it is on the device."""
        cls, function = semantic.module_class, semantic.function_node
        entry = self.entry.get(function) if function is not None else None
        if cls is None or function is None or entry is None:
            return
        inputs = frozenset(
            index.value
            for index in indices
            if isinstance(index, cst.Name)
            and index.value in every_parameter(function)
            and semantic.lookup_local(index.value) is entry.get(index.value)  # not rebound
        )
        if not inputs or _is_parameter(value, semantic):
            return
        name = dotted(base) or ""
        finding: Pending | Report = report
        if name.startswith("self."):
            finding = Pending(report, cls.name, name[5:].split(".")[0])
        self.deferred.setdefault(cls.name, []).append(Deferred(finding, function, inputs))

    def note_module_call(self, event: CallEvent) -> None:
        """``bank(feats, index)``: a device tensor handed to the ``forward`` input that indexes
        a host tensor there."""
        module = event.module
        built = built_class(module.origin) if module is not None else None
        waiting = self.deferred.get(built or "", [])
        for deferred in list(waiting):
            bound = bind_arguments(deferred.forward.params, event.node, list(event.args), True)
            if any(_on_device(bound[name]) for name in deferred.inputs if name in bound):
                waiting.remove(deferred)
                if isinstance(deferred.finding, Pending):
                    self.pending.append(deferred.finding)
                else:
                    self.report(deferred.finding.node, deferred.finding.message)

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        self.note_moved_attribute(event, semantic)
        self.note_module_call(event)
        method = event.method
        if method not in HOST_SELF_INDEX or event.qualified is not None:
            return
        receiver = event.receiver
        if receiver is None or not isinstance(event.node.func, cst.Attribute):
            return
        tensors = [arg for arg in event.args if arg.is_tensorish]
        if _on_host(receiver) and any(_on_device(arg) for arg in tensors):
            where = "on the CPU and its index on the device"
        elif (
            method in SAME_DEVICE_INDEX
            and _on_device(receiver)
            and any(_on_host(arg) and arg.kind is Kind.TENSOR for arg in tensors)
        ):
            where = "on the device and its index on the CPU"
        else:
            return
        owner = event.node.func.value
        shown = _shown(owner)
        message = (
            f"`{shown}.{method}(...)`: `{shown}` is {where}; on a GPU this fails with "
            f"`Expected all tensors to be on the same device`; {_advice(shown, owner, semantic)}"
        )
        self.add(Report(event.node, message), owner, receiver, semantic)

    def note_moved_attribute(self, event: CallEvent, semantic: Semantic) -> None:
        """``self.mean.to(x.device)`` in forward: the attribute follows its input by hand."""
        func, cls = event.node.func, semantic.module_class
        if (
            cls is None
            or not isinstance(func, cst.Attribute)
            or func.attr.value not in api.MOVE_METHODS
        ):
            return
        name = dotted(func.value) or ""
        if name.startswith("self."):
            self.moved_on_use.setdefault(id(cls), set()).add(name[5:].split(".")[0])

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        if event.name.startswith("self.") and semantic.function != "__init__":
            owner = semantic.module_class.name if semantic.module_class else None
            self.set_outside_init.add((owner, event.name[5:].split(".")[0]))

    def add(
        self, report: Report, base: cst.BaseExpression, value: Value, semantic: Semantic
    ) -> None:
        name = dotted(base) or ""
        if not name.startswith("self."):
            self.report(report.node, report.message)
            return
        if _is_parameter(value, semantic):
            return  # nn.Parameter moves with its module
        owner = semantic.module_class.name if semantic.module_class else None
        self.pending.append(Pending(report, owner, name[5:].split(".")[0]))

    def finish(self, context: Context) -> Iterator[Report]:
        for item in self.pending:
            cls = self.classes.get(item.owner or "")
            if (item.owner, item.attr) in self.set_outside_init:
                continue
            moved = self.moved_on_use.get(id(cls), set())
            if cls is not None and (cls.custom_apply or item.attr in moved):
                continue
            yield item.report


def _on_host(value: Value) -> bool:
    return value.is_tensorish and value.place is Place.HOST


def _on_device(value: Value) -> bool:
    return value.is_tensorish and value.place is Place.DEVICE


def _moved_there(value: Value) -> bool:
    """``t = yt.cuda()`` of a parameter: moved to the device, and only a tensor indexes."""
    return value.kind is Kind.UNKNOWN and value.place is Place.DEVICE


def _shown(node: cst.BaseExpression) -> str:
    name = dotted(node)
    if name is not None:
        return name
    if isinstance(node, cst.Call):
        return f"{dotted(node.func) or '…'}(...)"
    return "the tensor"


def _advice(shown: str, node: cst.BaseExpression, semantic: Semantic) -> str:
    if shown.startswith("self.") and semantic.module_class is not None:
        buffer = f'self.register_buffer("{shown[5:]}", ...)'
        return f"register it with `{buffer}` so it moves with the model"
    if isinstance(node, cst.Call):
        return "create it with `device=` the index's device"
    return f"move `{shown}` to the index's device (or the index to the CPU)"


def _is_parameter(value: Value, semantic: Semantic) -> bool:
    statement = value.binding
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    small = statement.body[0]
    if not isinstance(small, cst.Assign) or not isinstance(small.value, cst.Call):
        return False
    return semantic.qualify(small.value.func) in PARAMETER
