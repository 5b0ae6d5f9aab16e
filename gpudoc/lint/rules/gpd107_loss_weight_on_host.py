"""GPD107: a loss weight tensor left on the host."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from gpudoc.lint.analysis.events import BindingEvent, CallEvent, Semantic, StatementEvent
from gpudoc.lint.analysis.values import Place, Value
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.rules._helpers import moved_by_statement

WEIGHTS = ("weight", "pos_weight")


@dataclass
class LossWeight:
    call: cst.Call
    weight: cst.BaseExpression
    weight_value: Value
    device_name: str | None
    chained_move: bool
    """``nn.CrossEntropyLoss(weight=w).to(device)``: the weight buffer moves with it."""
    target: str | None = None
    """The name the criterion was bound to."""
    in_module: bool = False
    """Built in a module class's method: bound to ``self.loss`` it is a submodule, whose
    weight buffer moves with the parent."""


class LossWeightOnHost(Rule):
    """A loss built with a `weight=` / `pos_weight=` tensor on the host, never moved.

    ## What it does
    Finds `nn.CrossEntropyLoss(weight=w)` (any `*Loss` with `weight=` or `pos_weight=`) where `w`
    is created without `device=` and neither `w` nor the criterion is moved to the device, in a
    script that places its model on a device.

    ## Why is this bad?
    The loss runs on the device's outputs with a weight on the CPU: `Expected all tensors to be on
    the same device, but found at least two devices, cuda:0 and cpu! (when checking argument for
    argument weight in method wrapper_nll_loss_forward)` — pytorch/pytorch#122757, "someone forgets
    to put the weights on cuda".

    ## Example
    ```python
    weights = torch.tensor([1.0, 5.0])
    criterion = nn.CrossEntropyLoss(weight=weights)
    ```

    ## Use instead
    ```python
    weights = torch.tensor([1.0, 5.0], device=device)
    criterion = nn.CrossEntropyLoss(weight=weights)  # or: criterion.to(device)
    ```

    ## Known problems
    Weights built by an unknown helper are of unknown placement and not reported.
    """

    CODE = "GPD107"
    NAME = "loss-weight-on-host"
    SUMMARY = "a loss weight= / pos_weight= tensor stays on the CPU while the model is placed"
    VALID = (
        """\
import torch
import torch.nn as nn
model = nn.Linear(4, 2).cuda()
criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 5.0])).cuda()
other = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 5.0], device="cuda"))
third = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([3.0]))
third.to("cuda")
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
import torch.nn as nn
model = nn.Linear(4, 2).cuda()
weights = torch.tensor([1.0, 5.0])
criterion = nn.CrossEntropyLoss(weight=weights)
""",
            line=5,
            col=40,
        ),
    )

    EVENTS = ("call", "binding", "statement")

    def __init__(self) -> None:
        super().__init__()
        self.weights: list[LossWeight] = []
        self.moved_names: set[str] = set()
        """Names (any scope) whose module a statement moved to the device."""
        self.host_only: dict[str, bool] = {}
        """Criterion name (any scope) -> whether every call of it had only host tensors."""

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        """``nn.CrossEntropyLoss(weight=w)``"""
        if event.module_name is not None:
            tensors = [value for value in event.args if value.is_tensorish]
            host = bool(tensors) and all(value.place is Place.HOST for value in tensors)
            known = self.host_only.get(event.module_name, True)
            self.host_only[event.module_name] = known and host
        qualified = event.qualified or ""
        last = qualified.rsplit(".", 1)[-1]
        if not qualified.startswith("torch.nn.") or qualified.startswith("torch.nn.functional."):
            return
        if not (last[:1].isupper() and last.endswith("Loss")):
            return
        node = event.node
        for name in WEIGHTS:
            for arg, value in zip(node.args, event.args, strict=True):
                if arg.keyword is not None and arg.keyword.value == name:
                    moved = semantic.result_moved(node)
                    weight = LossWeight(node, arg.value, value, semantic.device_name(), moved)
                    weight.in_module = semantic.module_class is not None
                    self.weights.append(weight)
                    break

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        for weight in self.weights:
            if weight.call is event.value.origin:
                weight.target = event.name

    def on_statement(self, event: StatementEvent, semantic: Semantic) -> None:
        """``criterion.to(device)`` as a statement: a module moves in place."""
        name = moved_by_statement(event)
        if name is not None:
            self.moved_names.add(name)

    def finish(self, context: Context) -> Iterator[Report]:
        for weight in self.weights:
            value = weight.weight_value
            if weight.chained_move or value.place is not Place.HOST or not value.is_tensorish:
                continue
            if weight.target is not None and weight.target in self.moved_names:
                continue
            if weight.in_module and (weight.target or "").startswith("self."):
                continue  # `self.loss = nn.CrossEntropyLoss(weight=w)`: moves with the module
            if weight.target is not None and self.host_only.get(weight.target, False):
                continue  # a demo of the weight on host tensors: it meets no device tensor
            shown = context.code(weight.weight)
            device = weight.device_name or "device"
            message = (
                f"the loss weight `{shown}` is on the CPU while the model is on the device: "
                f"create it with `device={device}` or move the criterion"
            )
            yield Report(weight.weight, message)
