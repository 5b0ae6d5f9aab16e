"""GPD107: a loss weight tensor left on the host."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.analysis.values import Place
from gpudoc.lint.rule import Context, Invalid, Report, Rule


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

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        for weight in facts.loss_weights:
            value = weight.weight_value
            if weight.chained_move or value.place is not Place.HOST or not value.is_tensorish:
                continue
            if weight.target is not None and weight.target in facts.moved_names:
                continue
            shown = context.code(weight.weight)
            device = weight.device_name or "device"
            message = (
                f"the loss weight `{shown}` is on the CPU while the model is on the device: "
                f"create it with `device={device}` or move the criterion"
            )
            yield Report(weight.weight, message)
