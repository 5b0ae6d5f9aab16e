"""GPD302: an optimizer's state loaded before its model is moved to the device."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.rule import Context, Invalid, Report, Rule


class OptimizerStateBeforePlacement(Rule):
    """`optimizer.load_state_dict(...)` before `model.to(device)`: the state stays on the CPU.

    ## What it does
    Finds `optimizer.load_state_dict(...)` for an optimizer built on `model.parameters()` while
    `model` is still on the host, followed later in the same scope by moving `model` to the
    device (`model.to(device)`, `model = model.cuda()`).

    ## Why is this bad?
    `load_state_dict` casts the loaded state (SGD's momentum, Adam's `exp_avg` and
    `exp_avg_sq`) to the device the parameters are on *at that moment*: the CPU. Moving the model
    afterwards moves the parameters but not the optimizer's state, and the first
    `optimizer.step()` on the GPU fails with `Expected all tensors to be on the same device`.
    Resuming from a checkpoint is where this appears, and only on the GPU machine.

    ## Example
    ```python
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.load_state_dict(checkpoint["optimizer"])
    model.to(device)
    ```

    ## Use instead
    ```python
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.load_state_dict(checkpoint["optimizer"])
    ```

    ## Known problems
    A model placed inside a helper function (`place(model, device)`) is not followed, and
    neither is an optimizer passed between functions.
    """

    CODE = "GPD302"
    NAME = "optimizer-state-before-placement"
    SUMMARY = "optimizer.load_state_dict before the model is moved leaves its state on the CPU"
    PLACEMENT = False
    VALID = (
        """\
import torch
import torch.nn as nn
model = nn.Linear(4, 2).to("cuda")
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(torch.load("opt.pt", map_location="cpu"))
""",
        """\
import torch
import torch.nn as nn
model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(torch.load("opt.pt"))
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(torch.load("opt.pt", map_location="cpu"))
model.to(device)
""",
            line=6,
            col=1,
        ),
        Invalid(
            """\
import torch
import torch.nn as nn
def resume(path):
    net = nn.Linear(4, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    opt.load_state_dict(torch.load(path, map_location="cpu"))
    net = net.cuda()
    return net, opt
""",
            line=6,
            col=5,
        ),
    )

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        for early in facts.early_state_loads:
            message = (
                f"`{early.optimizer}.load_state_dict` runs while `{early.module}` is still on "
                f"the host, and `{context.code(early.move).strip()}` moves it only later: the "
                "loaded state stays on the CPU and the first step on the GPU fails ('Expected "
                "all tensors to be on the same device'); move the model first"
            )
            yield Report(early.load, message)
