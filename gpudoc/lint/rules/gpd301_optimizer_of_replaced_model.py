"""GPD301: an optimizer still bound to the parameters of a model that was replaced."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import BindingEvent, CallEvent, Semantic
from gpudoc.lint.analysis.names import assigned_value, dotted
from gpudoc.lint.analysis.values import Kind
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.rules._helpers import Optimizers


class OptimizerOfReplacedModel(Rule):
    """The model is re-created after its optimizer was built, and the old optimizer steps on.

    ## What it does
    Finds `optimizer = optim.X(model.parameters())` followed by a new `model = ...` and then
    `optimizer.step()` with no new optimizer in between; also a part of the model replaced by a
    new module with weights there (`model.fc = nn.Linear(...)` after the optimizer was built):
    the new part's weights are in no optimizer. Wrapping the model in `nn.DataParallel` or DDP,
    moved or not, keeps the same parameters and is no replacement.

    ## Why is this bad?
    The optimizer updates the parameters of the old model, which nothing uses any more; the new
    model never learns, silently (pytorch/tutorials#598: "CIFAR10 Net not working on GPU" after
    `net = Net(); net.to(device)` was pasted below the optimizer).

    ## Example
    ```python
    net = Net()
    optimizer = optim.SGD(net.parameters(), lr=0.01)
    net = Net().to(device)
    optimizer.step()
    ```

    ## Use instead
    ```python
    net = Net().to(device)
    optimizer = optim.SGD(net.parameters(), lr=0.01)
    optimizer.step()
    ```

    ## Known problems
    Only names in one scope are followed; an optimizer rebuilt inside a helper is not seen.
    """

    CODE = "GPD301"
    NAME = "optimizer-of-replaced-model"
    SUMMARY = (
        "the model was re-created after its optimizer was built: the optimizer trains the old one"
    )
    PLACEMENT = False
    VALID = (
        """\
import torch
net = torch.nn.Linear(4, 2)
net = torch.nn.Linear(4, 2).cuda()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
optimizer.step()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
net = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
net = torch.nn.Linear(4, 2).cuda()
optimizer.step()
""",
            line=4,
            col=1,
        ),
    )

    EVENTS = ("binding", "call")

    def __init__(self) -> None:
        super().__init__()
        self.optimizers = Optimizers()
        self.rebound: dict[tuple[int, str], tuple[int, cst.CSTNode]] = {}
        """(scope, module name) -> (walk step, statement) of its latest rebinding."""
        self.parts: dict[tuple[int, str], tuple[int, cst.CSTNode, str]] = {}
        """(scope, module name) -> (walk step, statement, part) of its latest part replaced by a
        new module (``model.fc = nn.Linear(...)``)."""
        self.stale: list[tuple[cst.CSTNode, str, str, str | None]] = []
        """(the rebinding, the optimizer, the module, the part replaced or None) for each step
        of a stale optimizer."""

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        previous = event.previous
        replaced = previous is not None and previous.kind is Kind.MODULE
        if replaced and not _still_the_module(event.name, event.statement, semantic):
            self.rebound[(semantic.scope_id, event.name)] = (semantic.step, event.statement)
        owner, dot, _ = event.name.rpartition(".")
        new_part = event.value.weighted and isinstance(event.assigned, cst.Call)
        if dot and new_part and not _still_the_module(event.name, event.statement, semantic):
            # a new head on a model whose optimizer was built: its weights are in no optimizer
            self.parts[(semantic.scope_id, owner)] = (semantic.step, event.statement, event.name)
        self.optimizers.note(event, semantic)

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        """``optimizer.step()`` / ``optimizer.zero_grad()``"""
        receiver, func = event.receiver, event.node.func
        if event.qualified is not None or receiver is None or receiver.kind is not Kind.OPTIMIZER:
            return
        if event.method not in ("step", "zero_grad") or not isinstance(func, cst.Attribute):
            return
        name = dotted(func.value)
        built = self.optimizers.get(semantic, name) if name is not None else None
        if name is None or built is None:
            return
        module, built_at = built
        rebound = self.rebound.get((semantic.scope_id, module))
        part = self.parts.get((semantic.scope_id, module))
        if rebound is not None and rebound[0] > built_at:
            self.stale.append((rebound[1], name, module, None))
            self.optimizers.forget(semantic, name)
        elif part is not None and part[0] > built_at:
            self.stale.append((part[1], name, module, part[2]))
            self.optimizers.forget(semantic, name)

    def finish(self, context: Context) -> Iterator[Report]:
        seen: set[int] = set()
        for rebinding, optimizer, module, part in self.stale:
            if id(rebinding) in seen:
                continue
            seen.add(id(rebinding))
            if part is not None:
                message = (
                    f"`{part}` is replaced here, after `{optimizer}` was built for "
                    f"`{module}.parameters()`: the new part's weights are never trained; build "
                    "the optimizer after it"
                )
            else:
                message = (
                    f"`{module}` is replaced here, but `{optimizer}` was built for the old "
                    f"`{module}.parameters()`: it keeps stepping the old model; rebuild it"
                )
            yield Report(rebinding, message)


SHARING_WRAPPERS = api.DATAPARALLEL | api.DISTRIBUTED_DP | {"torch.compile"}
"""Wrappers whose parameters are the wrapped module's own (FSDP's flattened ones are not)."""


def _still_the_module(name: str, statement: cst.CSTNode, semantic: Semantic) -> bool:
    """``model = model.cuda()``, ``net = net.to(device).eval()``: a module moves in place; and
    ``model = DDP(model, device_ids=[rank])`` (or ``nn.DataParallel(net).to(device)``) trains
    the same parameters. Either way the optimizer built before still steps the model."""
    # `nn.DataParallel(net).to(device)`: the wrapper moved, the same parameters inside it
    value = _in_place_receiver(assigned_value(statement, name))
    if isinstance(value, cst.Call) and semantic.qualify(value.func) in SHARING_WRAPPERS:
        first = value.args[0] if value.args else None
        value = first.value if first is not None and first.keyword is None else None
    receiver = _in_place_receiver(value)
    return receiver is not None and dotted(receiver) == name


def _in_place_receiver(value: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """What a chain of in-place module methods is called on: ``model`` of
    ``model.to(device).eval()``; the chain itself where another method ends it."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        if value.func.attr.value not in api.IN_PLACE_MODULE_METHODS:
            break
        value = value.func.value
    return value
