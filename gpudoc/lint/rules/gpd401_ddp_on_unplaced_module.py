"""GPD401: DistributedDataParallel around a module still on the CPU."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CallEvent, ClassEvent, Semantic, StatementEvent
from gpudoc.lint.analysis.names import class_method, dotted, keyword
from gpudoc.lint.analysis.values import UNKNOWN, Kind, Place, Value
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.rules._helpers import moved_by_statement


class DdpOnUnplacedModule(Rule):
    """`DistributedDataParallel(model, device_ids=[...])` while `model` is still on the CPU.

    ## What it does
    Finds a `DistributedDataParallel` wrapper whose module was constructed in the same scope and
    never moved, when `device_ids` is given or the process group uses NCCL; and one wrapped on
    the CPU and moved to the device only afterwards (`net = DDP(net)` then `net.to(device)`).

    ## Why is this bad?
    It fails with `ValueError: DistributedDataParallel device_ids and output_device arguments only
    work with single-device/multiple-device GPU modules or CPU modules, but got device_ids [0],
    output_device 0, and module parameters {device(type='cpu')}` (pytorch/pytorch#100243).

    ## Example
    ```python
    model = Net()
    model = DDP(model, device_ids=[local_rank])
    ```

    ## Use instead
    ```python
    model = Net().to(local_rank)
    model = DDP(model, device_ids=[local_rank])
    ```

    A wrapper whose children were placed elsewhere counts as placed: one built from modules
    already moved (`Wrapper(encoder)` after `encoder.to(rank)`), or whose `__init__` places its
    children (`self.encoder.to(device)`, `self.head = Head().cuda()`).

    ## Known problems
    A module moved inside a helper function is of unknown placement and not reported. A wrapper
    that places only some of its children counts as placed.
    """

    CODE = "GPD401"
    NAME = "ddp-on-unplaced-module"
    SUMMARY = "DistributedDataParallel wraps a module that was never moved to its GPU"
    VALID = (
        """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
model = torch.nn.Linear(4, 2).to(local_rank)
model = DDP(model, device_ids=[local_rank])
""",
        # the wrapper places its children itself
        """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
class TwoTower(torch.nn.Module):
    def __init__(self, device):
        super().__init__()
        self.encoder = torch.nn.Linear(4, 4)
        self.encoder.to(device)
        self.head = torch.nn.Linear(4, 2).to(device)
torch.cuda.set_device(local_rank)
model = TwoTower(local_rank)
model = DDP(model, device_ids=[local_rank])
""",
        # built from modules already on the device
        """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
class Wrapper(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
torch.cuda.set_device(local_rank)
encoder = torch.nn.Linear(4, 2)
encoder.to(local_rank)
model = Wrapper(encoder)
model = DDP(model, device_ids=[local_rank])
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
torch.cuda.set_device(local_rank)
model = torch.nn.Linear(4, 2)
model = DDP(model, device_ids=[local_rank])
""",
            line=5,
            col=13,
        ),
        Invalid(
            """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
class Wrapper(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
torch.cuda.set_device(local_rank)
model = Wrapper(torch.nn.Linear(4, 2))
model = DDP(model, device_ids=[local_rank])
""",
            line=9,
            col=13,
        ),
    )

    EVENTS = ("call", "statement", "class")

    def __init__(self) -> None:
        super().__init__()
        self.wraps: list[tuple[cst.Call, Value]] = []
        """``DistributedDataParallel(module, ...)`` calls, with the module's value."""
        self.moved_names: set[str] = set()
        """Names (any scope) whose module a statement moved to the device."""
        self.classes: dict[str, cst.ClassDef] = {}
        """The file's nn.Module subclasses, by name."""
        self.moved_after: set[cst.Call] = set()
        """Wraps whose result a later statement moves (``net = DDP(net)`` then ``net.to(dev)``)."""

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        if event.qualified in api.DISTRIBUTED_DP:
            self.wraps.append((event.node, event.args[0] if event.args else UNKNOWN))

    def on_statement(self, event: StatementEvent, semantic: Semantic) -> None:
        """``model.to(device)`` as a statement: a module moves in place."""
        name = moved_by_statement(event)
        if name is not None:
            self.moved_names.add(name)
            wrap = _wrap_bound_by(event.receiver.binding if event.receiver else None)
            if wrap is not None:
                self.moved_after.add(wrap)

    def on_class(self, event: ClassEvent, semantic: Semantic) -> None:
        if event.module_class is not None:
            self.classes.setdefault(event.node.name.value, event.node)

    def finish(self, context: Context) -> Iterator[Report]:
        for call, module in self.wraps:
            if module.kind is not Kind.MODULE or module.place is not Place.HOST:
                continue
            has_device_ids = keyword(call, "device_ids") is not None
            moved_after = call in self.moved_after
            if not (has_device_ids or context.flags.cuda_only or moved_after):
                continue
            if self._children_placed(module.origin, context):
                continue
            name = (dotted(call.args[0].value) if call.args else None) or "the module"
            message = (
                f"`{name}` is still on the CPU when DistributedDataParallel wraps it for a GPU: "
                f"move it first (`{name}.to(local_rank)`)"
            )
            if moved_after and not has_device_ids:
                message = (
                    f"`{name}` is wrapped by DistributedDataParallel on the CPU and moved only "
                    f"afterwards: DDP sets up its gradient buckets for the devices it wraps; "
                    f"move `{name}` before wrapping it"
                )
            # at the wrapped module: the argument to move first, in a call over several lines
            yield Report(call.args[0] if call.args else call, message)

    def _children_placed(self, origin: cst.CSTNode | None, context: Context) -> bool:
        """A wrapper built from modules already on the device (`Wrapper(encoder)` after
        `encoder.to(rank)`), or whose ``__init__`` places its children (`self.encoder.to(dev)`)."""
        if not isinstance(origin, cst.Call):
            return False
        for arg in origin.args:
            name = dotted(arg.value)
            if name is not None and name in self.moved_names:
                return True
            if MOVE.search(context.code(arg.value)):
                return True
        node = self.classes.get(dotted(origin.func) or "")
        if node is None:
            return False
        return any(_places_child(statement, context) for statement in _init_body(node))


def _wrap_bound_by(binding: cst.CSTNode | None) -> cst.Call | None:
    """The call of ``net = DDP(net)``, the statement that bound a moved module's name."""
    if isinstance(binding, cst.SimpleStatementLine) and isinstance(binding.body[0], cst.Assign):
        value = binding.body[0].value
        return value if isinstance(value, cst.Call) else None
    return None


MOVE = re.compile(r"\.(to|cuda)\((?!\s*(\"cpu\"|'cpu'|\)\s*$))")
"""``.to(x)`` / ``.cuda(...)`` not to the CPU (``.cuda()`` included)."""


def _init_body(node: cst.ClassDef) -> list[cst.CSTNode]:
    init = class_method(node, "__init__")
    return list(init.body.body) if init is not None else []


def _places_child(statement: cst.CSTNode, context: Context) -> bool:
    """``self.encoder.to(dev)`` or ``self.encoder = Encoder().cuda()`` in ``__init__``."""
    text = context.code(statement)
    return "self." in text and MOVE.search(text) is not None
