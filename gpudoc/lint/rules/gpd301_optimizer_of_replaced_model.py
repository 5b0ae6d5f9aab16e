"""GPD301: an optimizer still bound to the parameters of a model that was replaced."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.rule import Context, Invalid, Report, Rule


class OptimizerOfReplacedModel(Rule):
    """The model is re-created after its optimizer was built, and the old optimizer steps on.

    ## What it does
    Finds `optimizer = optim.X(model.parameters())` followed by a new `model = ...` and then
    `optimizer.step()` with no new optimizer in between.

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

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        seen: set[int] = set()
        for stale in facts.stale_optimizers:
            if id(stale.rebinding) in seen:
                continue
            seen.add(id(stale.rebinding))
            message = (
                f"`{stale.module}` is replaced here, but `{stale.optimizer}` was built for the old "
                f"`{stale.module}.parameters()`: it keeps stepping the old model; rebuild it"
            )
            yield Report(stale.rebinding, message)
