"""GPD203: CUDA hard-coded with no fallback for machines without it."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.rule import Context, Invalid, Report, Rule


class CudaWithoutFallback(Rule):
    """`.cuda()` or a `"cuda"` device with no `torch.cuda.is_available()` fallback.

    ## What it does
    Finds `.cuda()`, `torch.device("cuda")`, `.to("cuda")`, `device="cuda"` and `device = "cuda"`
    in a file that never checks `torch.cuda.is_available()` and is not under an `if` about
    CUDA, GPUs or devices.

    ## Why is this bad?
    On a machine without a usable GPU the script dies with `AssertionError: Torch not compiled
    with CUDA enabled` or `RuntimeError: No CUDA GPUs are available` instead of running on the
    CPU (karpathy/nanoGPT#281, pytorch/pytorch#28111).

    ## Example
    ```python
    model = Net().cuda()
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    ```

    ## Known problems
    Files written for GPUs only (NCCL process groups, per-rank `set_device`,
    `torch.set_default_device("cuda")`) are not reported.
    A guard in a caller (a helper only called under `if use_cuda:`) is not seen.
    """

    CODE = "GPD203"
    NAME = "cuda-without-fallback"
    SUMMARY = "CUDA hard-coded with no torch.cuda.is_available() fallback"
    PLACEMENT = False
    VALID = (
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
""",
        """\
import torch
model = torch.nn.Linear(4, 2)
if args.cuda:
    model.cuda()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
model = torch.nn.Linear(4, 2).cuda()
""",
            line=2,
            col=9,
        ),
        Invalid(
            """\
import torch
device = "cuda"
model = torch.nn.Linear(4, 2).to(device)
""",
            line=2,
            col=10,
        ),
    )

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        flags = facts.flags
        if flags.availability_check or flags.cuda_only or flags.per_rank_device:
            return
        if flags.default_device:  # torch.set_default_device("cuda"): the device is chosen once
            return
        for mention in facts.cuda_mentions:
            if mention.guarded:
                continue
            message = (
                f"`{mention.text}` hard-codes CUDA with no fallback: on a machine without a GPU "
                'this fails; use `torch.device("cuda" if torch.cuda.is_available() else "cpu")`'
            )
            yield Report(mention.node, message)
