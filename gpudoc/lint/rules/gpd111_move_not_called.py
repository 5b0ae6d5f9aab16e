"""GPD111: ``model.cuda`` / ``x.to`` / ``model.cpu`` named but never called."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis.events import (
    BindingEvent,
    CallEvent,
    MemberEvent,
    ReturnEvent,
    Semantic,
    StatementEvent,
)
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.values import Kind, Value
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report, Rule
from gpudoc.lint.rules._helpers import Conditions
from gpudoc.lint.visit import walk

MOVES = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16"})
CALLABLE_KINDS = (Kind.MODULE, Kind.TENSOR, Kind.BATCH)
AVAILABILITY = frozenset(
    {"torch.cuda.is_available", "torch.backends.mps.is_available", "torch.xpu.is_available"}
)
"""Functions whose uncalled name, a function object, is always true."""


class MoveNotCalled(Rule):
    """A move method named without parentheses: `model.cuda`, `x.to`, `model.cpu`.

    ## What it does
    Finds `model.cuda`, `images.to`, `x.cpu` or `model.half` written without `()`: as a statement
    of its own, as the value of an assignment (`x = x.cuda`), or as the argument of a model, a
    loss or a torch function (`model(x.cuda)`).

    ## Why is this bad?
    Naming a method does not call it. `model.cuda` on its own line does nothing: the model stays
    on the CPU and the first device batch fails with `Expected all tensors to be on the same
    device` (or, with no device batch at all, the script trains on the CPU without a word).
    `x = x.cuda` binds `x` to a bound method, and the next use fails with `TypeError:
    conv2d() received an invalid combination of arguments`, far from the line at fault.

    ## Example
    ```python
    model = Net()
    model.cuda
    ```

    ## Use instead
    ```python
    model = Net()
    model.cuda()
    ```

    ## Known problems
    An assignment or an argument is reported only when the receiver is known to hold a tensor
    or a module (or the assignment rebinds the receiver itself, `x = x.cuda`): a bound method
    passed on purpose (`map(x.to, ...)`, a callback) is not a finding. A bare name used as a
    condition (`if torch.cuda.is_available:`) is another bug and not checked here.

    ## Fix safety
    `.cuda` / `.cpu` / `.half` (and the other conversions without arguments) get `()` appended;
    the fix is unsafe because the call now moves or converts what it did not before. `.to` has
    no fix: its target device is not known.
    """

    CODE = "GPD111"
    NAME = "move-not-called"
    SUMMARY = "`model.cuda` without `()` moves nothing; `is_available` without `()` is always true"
    PLACEMENT = False  # the move that was never called is what left the file without placement
    EVENTS = ("statement", "binding", "call", "return", "member")
    VALID = (
        """\
import torch
model = torch.nn.Linear(4, 2)
model.cuda()
x = torch.randn(3, 4).to("cuda")
""",
        """\
import torch
batch = [torch.randn(2), torch.randn(2)]
moved = list(map(lambda t: t.to("cuda"), batch))
mover = torch.Tensor.cuda
use_cuda = args.cuda
torch.float
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
model = torch.nn.Linear(4, 2)
model.cuda
""",
            line=3,
            col=1,
            expected_replacement="""\
import torch
model = torch.nn.Linear(4, 2)
model.cuda()
""",
        ),
        Invalid(
            """\
import torch
def step(model, images, device):
    images = images.to
    return model(images)
""",
            line=3,
            col=14,
        ),
        Invalid(
            """\
import torch
net = torch.nn.Linear(4, 2).cuda()
x = torch.randn(3, 4)
out = net(x.cuda)
""",
            line=4,
            col=11,
            expected_replacement="""\
import torch
net = torch.nn.Linear(4, 2).cuda()
x = torch.randn(3, 4)
out = net(x.cuda())
""",
        ),
        Invalid(
            """\
import torch
device = "cuda" if torch.cuda.is_available else "cpu"
""",
            line=2,
            col=20,
            expected_replacement="""\
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
""",
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.availability: dict[cst.Attribute, str] = {}
        """Reads of ``torch.cuda.is_available`` (called or not), with the name they have."""

    def on_member(self, event: MemberEvent, semantic: Semantic) -> None:
        if event.name.endswith("is_available") and semantic.qualify(event.node) in AVAILABILITY:
            self.availability[event.node] = event.name

    def finish(self, context: Context) -> Iterator[Report]:
        """``if torch.cuda.is_available:``: the function object as a condition."""
        if not self.availability:
            return
        tests = Conditions()
        walk(context.module, tests)
        for node, name in self.availability.items():
            if node in tests.found:
                message = (
                    f"`{name}` is not called: a function is always true, so this condition "
                    f"holds on a machine without a GPU too; write `{name}()`"
                )
                edit = NodeEdit(node, "()", "after")
                yield Report(node, message, FixSpec((edit,), safe=True, description="call it"))

    def on_statement(self, event: StatementEvent, semantic: Semantic) -> None:
        node = event.node.value
        if not isinstance(node, cst.Attribute) or node.attr.value not in MOVES:
            return
        if semantic.qualify(node) is None:  # `torch.float` shown in a notebook is no move
            self.flag(node, "on its own line does nothing")

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        value = event.assigned
        if not isinstance(value, cst.Attribute) or value.attr.value not in MOVES:
            return
        receiver = dotted(value.value)
        if receiver == event.name or _holds_tensor_or_module(value.value, semantic):
            self.flag(value, f"binds `{event.name}` to the method itself")

    def on_return(self, event: ReturnEvent, semantic: Semantic) -> None:
        """``return net.cuda``: the caller gets the bound method, not a moved module."""
        value = event.node.value
        if not isinstance(value, cst.Attribute) or value.attr.value not in MOVES:
            return
        if _holds_tensor_or_module(value.value, semantic):
            self.flag(value, "returns the method itself")

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        if not any(isinstance(arg.value, cst.Attribute) for arg in event.node.args):
            return  # the common case, checked first: no argument is an attribute
        if not _takes_tensors(event, semantic):
            return
        for arg in event.node.args:
            value = arg.value
            if not isinstance(value, cst.Attribute) or value.attr.value not in MOVES:
                continue
            if _holds_tensor_or_module(value.value, semantic):
                self.flag(value, "passes the method, not a moved tensor")

    def flag(self, node: cst.Attribute, what: str) -> None:
        method = node.attr.value
        shown = dotted(node) or cst.Module([]).code_for_node(node)
        if len(shown) > 50 or "\n" in shown:
            shown = f"….{method}"
        message = (
            f"`{shown}` names the method without calling it: it {what}, and nothing is "
            f"moved to the device; write `{shown}(...)`"
        )
        fix = None
        if method != "to":
            edit = NodeEdit(node, "()", "after")
            fix = FixSpec((edit,), safe=False, description=f"call .{method}()")
        self.report(node, message, fix)


def _holds_tensor_or_module(node: cst.BaseExpression, semantic: Semantic) -> bool:
    if isinstance(node, cst.Call):
        # `DataParallel(net, device_ids).cuda`, `torch.zeros(n).cuda`: what torch built
        return (semantic.qualify(node.func) or "").startswith("torch.")
    name = dotted(node)
    value: Value | None = semantic.lookup(name) if name is not None else None
    return value is not None and value.kind in CALLABLE_KINDS


def _takes_tensors(event: CallEvent, semantic: Semantic) -> bool:
    """A model or loss call, a tensor method, or a torch function: callees that want tensors."""
    if event.qualified is not None:
        return event.qualified.startswith("torch.") and event.qualified[6:7].islower()
    if event.receiver is not None and event.receiver.kind in CALLABLE_KINDS:
        return True
    callee = dotted(event.node.func)
    held = semantic.lookup(callee) if callee is not None else None
    return held is not None and held.kind is Kind.MODULE
