"""GPD501: comparing a tensor's device with a string or an index-less torch.device."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CompareEvent, FunctionEvent, ReturnEvent, Semantic
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import assigned_value, dotted
from gpudoc.lint.analysis.values import Kind
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report, Rule
from gpudoc.lint.visit import walk


class DeviceCompareWithoutIndex(Rule):
    """`x.device == "cuda"` or `x.device == torch.device("cuda")`: false on every GPU.

    ## What it does
    Finds `==` / `!=` between a tensor's `.device` and a string, or a `torch.device("cuda")`
    without an index; and a name that holds a `torch.device` (bound from `torch.device(...)`, or
    a parameter annotated `torch.device` or `Union[str, torch.device]`) compared with a string.

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
    comparison is right), and only names whose binding or annotation says `torch.device`, or
    that hold what one of the file's functions returns when its every return is a
    `torch.device` (`device = get_device()`).

    ## Fix safety
    Safe: `x.device == "cuda"` is always False (a `torch.device` never equals a string), so
    comparing `x.device.type == "cuda"` only turns on the branch the author meant. Offered only
    when the string has no index; `"cuda:0"` is left to the user (`x.device.index` is needed),
    and not for a parameter that may also be a string (`Union[str, torch.device]`), whose `.type`
    a string lacks.
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
        """\
import torch
def load(name, device="cuda" if torch.cuda.is_available() else "cpu"):
    if device == "cpu":
        return torch.load(name, map_location="cpu")
    return torch.load(name)
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
        Invalid(
            """\
import torch
from typing import Union
def load(path: str, device: Union[str, torch.device] = "cpu"):
    model = torch.jit.load(path, map_location=device)
    if device == "cpu":
        model.float()
    return model
""",
            line=5,
            col=8,
        ),
    )

    EVENTS = ("compare", "function", "return")

    def __init__(self) -> None:
        super().__init__()
        self.compares: list[DeviceCompare] = []
        self.device_params: dict[str, dict[str, bool]] = {}
        """Function -> its parameters annotated with torch.device -> whether only with it."""
        self.device_returns: dict[str, bool] = {}
        """Function -> whether each of its walked returns hands back a torch.device."""

    def on_return(self, event: ReturnEvent, semantic: Semantic) -> None:
        """``return torch.device("cuda")``, ``return device`` (bound to one): a helper whose
        result is a torch.device (``device = gpu_setup()``)."""
        function, value = semantic.function_node, event.node.value
        if function is None or semantic.module_class is not None:
            return
        device = isinstance(value, cst.Call) and semantic.qualify(value.func) == "torch.device"
        if isinstance(value, cst.Name):
            device = self.holds_torch_device(value.value, semantic) is True
        name = function.name.value
        self.device_returns[name] = self.device_returns.get(name, True) and device

    def on_function(self, event: FunctionEvent, semantic: Semantic) -> None:
        params = event.node.params
        annotated: dict[str, bool] = {}
        for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
            if param.annotation is None:
                continue
            names = _Qualified(semantic)
            walk(param.annotation.annotation, names)
            if names.device:
                annotated[param.name.value] = names.exact
        self.device_params[event.node.name.value] = annotated

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
            if isinstance(device_side, cst.Name):
                exact = self.holds_torch_device(device_side.value, semantic)
                text = string_value(other)
                if exact is None or text is None:
                    continue
                if api.DEVICE_LITERAL.match(text) or api.CPU_LITERAL.match(text):
                    self.compares.append(DeviceCompare(node, device_side, text, True, exact))
                return

    def holds_torch_device(self, name: str, semantic: Semantic) -> bool | None:
        """Whether ``name`` holds a torch.device here (True), may hold one or a string (False),
        or is not known to hold one (None)."""
        held = semantic.lookup(name)
        if held is None or held.kind is not Kind.DEVICE:
            return None
        if held.binding is None:  # a parameter, not rebound since
            return self.device_params.get(semantic.function or "", {}).get(name)
        value = assigned_value(held.binding, name)
        if not isinstance(value, cst.Call):
            return None
        if isinstance(value.func, cst.Name) and self.device_returns.get(value.func.value):
            return True  # `device = gpu_setup()`, which returns torch.device(...)
        return True if semantic.qualify(value.func) == "torch.device" else None

    def finish(self, context: Context) -> Iterator[Report]:
        for compare in self.compares:
            shown = context.code(compare.device_side)
            if compare.is_string:
                why = "a torch.device never equals a string"
            else:
                why = f'torch.device("{compare.text}") has no index, unlike every tensor\'s device'
            kind = compare.text.split(":")[0]
            not_equal = isinstance(compare.node.comparisons[0].operator, cst.NotEqual)
            operator = "!=" if not_equal else "=="
            if not compare.fixable:  # a parameter that may be a string or a torch.device
                message = (
                    f"`{context.code(compare.node)}` is always the same answer when `{shown}` is "
                    f"a torch.device (its annotation allows one): {why}; compare "
                    f'`torch.device({shown}).type {operator} "{kind}"`'
                )
                yield Report(compare.node, message)
                continue
            message = f"`{context.code(compare.node)}` is always the same answer: {why}; compare "
            message += f'`{shown}.type {operator} "{kind}"`'
            fix = None
            if compare.is_string and ":" not in compare.text and compare.fixable:
                edit = NodeEdit(compare.device_side, ".type", "after")
                fix = FixSpec((edit,), safe=True, description="compare .device.type")
            yield Report(compare.node, message, fix)


@dataclass(frozen=True)
class DeviceCompare:
    """``x.device == "cuda"`` / ``x.device == torch.device("cuda")``: never true as intended."""

    node: cst.Comparison
    device_side: cst.BaseExpression
    text: str
    """The compared device text, ``cuda``."""
    is_string: bool
    fixable: bool = True
    """``.type`` works on it: a torch.device, never a string."""


class _Qualified(cst.CSTVisitor):
    """Whether an annotation names torch.device, and whether it is only that."""

    def __init__(self, semantic: Semantic) -> None:
        self.semantic = semantic
        self.device = self.exact = False
        self.root: cst.CSTNode | None = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.root is None:
            self.root = node
        qualified = (
            self.semantic.qualify(node) if isinstance(node, cst.Name | cst.Attribute) else None
        )
        if qualified == "torch.device":
            self.device = True
            self.exact |= node is self.root
            return False
        return True


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
