"""GPD401: DistributedDataParallel around a module still on the CPU."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.analysis.values import Kind, Place
from gpudoc.lint.rule import Context, Invalid, Report, Rule


class DdpOnUnplacedModule(Rule):
    """`DistributedDataParallel(model, device_ids=[...])` while `model` is still on the CPU.

    ## What it does
    Finds a `DistributedDataParallel` wrapper whose module was constructed in the same scope and
    never moved, when `device_ids` is given or the process group uses NCCL.

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

    ## Known problems
    A module moved inside a helper function is of unknown placement and not reported.
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
            col=9,
        ),
    )

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        for wrap in facts.ddp_wraps:
            module = wrap.module
            if module.kind is not Kind.MODULE or module.place is not Place.HOST:
                continue
            if not (wrap.has_device_ids or facts.flags.cuda_only):
                continue
            name = wrap.module_name or "the module"
            message = (
                f"`{name}` is still on the CPU when DistributedDataParallel wraps it for a GPU: "
                f"move it first (`{name}.to(local_rank)`)"
            )
            yield Report(wrap.call, message)
