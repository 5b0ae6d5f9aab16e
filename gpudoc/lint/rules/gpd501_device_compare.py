"""GPD501: comparing a tensor's device with a string or an index-less torch.device."""

from __future__ import annotations

from collections.abc import Iterator

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report, Rule


class DeviceCompareWithoutIndex(Rule):
    """`x.device == "cuda"` or `x.device == torch.device("cuda")`: false on every GPU.

    ## What it does
    Finds `==` / `!=` between a tensor's `.device` and a string, or a `torch.device("cuda")`
    without an index.

    ## Why is this bad?
    A `torch.device` never equals a string, and `torch.device("cuda")` (index None) is not equal
    to `torch.device("cuda:0")`, the device every CUDA tensor reports (pytorch/pytorch#115405).
    The comparison is silently False and the CPU code path runs on the GPU machine.

    ## Example
    ```python
    if x.device == "cuda":
        torch.cuda.synchronize()
    ```

    ## Use instead
    ```python
    if x.device.type == "cuda":
        torch.cuda.synchronize()
    ```

    ## Known problems
    Only tensors the analysis knows are checked (`args.device` is often a plain string, where the
    comparison is right).

    ## Fix safety
    Safe: `x.device == "cuda"` is always False (a `torch.device` never equals a string), so
    comparing `x.device.type == "cuda"` only turns on the branch the author meant. Offered only
    when the string has no index; `"cuda:0"` is left to the user (`x.device.index` is needed).
    """

    CODE = "GPD501"
    NAME = "device-compare-without-index"
    SUMMARY = 'x.device == "cuda" (or torch.device("cuda")) is always False; compare .device.type'
    PLACEMENT = False
    VALID = (
        """\
import torch
x = torch.randn(3)
on_gpu = x.device.type == "cuda"
same = x.device == torch.device("cuda:0")
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
x = torch.randn(3)
if x.device == "cuda":
    print("on the GPU")
""",
            line=3,
            col=4,
            expected_replacement="""\
import torch
x = torch.randn(3)
if x.device.type == "cuda":
    print("on the GPU")
""",
        ),
        Invalid(
            """\
import torch
x = torch.randn(3)
on_gpu = x.device != torch.device("cuda")
""",
            line=3,
            col=10,
        ),
    )

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        for compare in facts.device_compares:
            shown = context.code(compare.device_side)
            if compare.is_string:
                why = "a torch.device never equals a string"
            else:
                why = f'torch.device("{compare.text}") has no index, unlike every tensor\'s device'
            message = f"`{context.code(compare.node)}` is always the same answer: {why}; compare "
            message += f'`{shown}.type == "{compare.text.split(":")[0]}"`'
            fix = None
            if compare.is_string and ":" not in compare.text:
                edit = NodeEdit(compare.device_side, ".type", "after")
                fix = FixSpec((edit,), safe=True, description="compare .device.type")
            yield Report(compare.node, message, fix)
