"""GPD501: comparing a tensor's device with a string or an index-less torch.device."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CompareEvent, Semantic
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import dotted
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

    EVENTS = ("compare",)

    def __init__(self) -> None:
        super().__init__()
        self.compares: list[DeviceCompare] = []

    def on_compare(self, event: CompareEvent, semantic: Semantic) -> None:
        node = event.node
        if len(node.comparisons) != 1:
            return
        target = node.comparisons[0]
        if not isinstance(target.operator, cst.Equal | cst.NotEqual):
            return
        for device_side, other in ((node.left, target.comparator), (target.comparator, node.left)):
            if isinstance(device_side, cst.Attribute) and device_side.attr.value == "device":
                # only a tensor's .device is a torch.device; `args.device` is often a string
                owner = semantic.lookup(dotted(device_side.value) or "")
                if owner is not None and owner.is_tensorish:
                    compare = _device_compare(node, device_side, other, semantic)
                    if compare is not None:
                        self.compares.append(compare)
                return

    def finish(self, context: Context) -> Iterator[Report]:
        for compare in self.compares:
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


@dataclass(frozen=True)
class DeviceCompare:
    """``x.device == "cuda"`` / ``x.device == torch.device("cuda")``: never true as intended."""

    node: cst.Comparison
    device_side: cst.Attribute
    text: str
    """The compared device text, ``cuda``."""
    is_string: bool


def _device_compare(
    node: cst.Comparison,
    device_side: cst.Attribute,
    other: cst.BaseExpression,
    semantic: Semantic,
) -> DeviceCompare | None:
    text = string_value(other)
    if text is not None:
        known = api.DEVICE_LITERAL.match(text) or api.CPU_LITERAL.match(text)
        return DeviceCompare(node, device_side, text, True) if known else None
    if not isinstance(other, cst.Call) or len(other.args) != 1:
        return None
    if semantic.qualify(other.func) != "torch.device":
        return None
    inner = string_value(other.args[0].value)
    if inner in ("cuda", "xpu"):
        return DeviceCompare(node, device_side, inner, False)
    return None
