"""GPD303: raw tensor parameters moved (rebound) after an optimizer was built over them."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import BindingEvent, CallEvent, Semantic
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.values import Place
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.visit import walk

PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
MOVES = frozenset({"to", "cuda"})

Key = tuple[str | None, str]


class TensorMovedAfterOptimizer(Rule):
    """A raw tensor parameter moved to the device after the optimizer was built over it.

    ## What it does
    Follows tensors created as trainable parameters by hand (`torch.randn(...,
    requires_grad=True)`, `.requires_grad_()`, `nn.Parameter(...)`) into the parameter list of a
    `torch.optim` optimizer, and finds a later `w = w.to(device)` / `w = w.cuda()` in the same
    scope.

    ## Why is this bad?
    `Tensor.to()` returns a new tensor. The optimizer keeps the old one, on the CPU: the loss is
    computed with the new `w`, its gradient lands on the new `w`, and `optimizer.step()` updates
    the old copy, which has no gradient. Nothing fails; the parameters simply never change and
    the loss stays flat.

    ## Example
    ```python
    w = torch.randn(784, 10, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=0.1)
    w = w.to(device)
    ```

    ## Use instead
    ```python
    w = torch.randn(784, 10, device=device, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=0.1)
    ```

    Also a hand-made parameter moved before the optimizer is built (`w = w.cuda()`, then
    `Adam([w])`): the moved copy is no leaf, and the optimizer refuses it with `can't optimize a
    non-leaf Tensor` wherever the move runs (on a GPU only, when the move is guarded).

    ## Known problems
    Only parameters listed by name in the optimizer call (directly, in `{"params": [...]}` groups
    or through a list bound just before) and moved in the same function are followed;
    `nn.Module` parameters move in place and are GPD301's concern.

    ## Fix safety
    No fix: the tensor must be created on the device, or the optimizer built after the move.
    """

    CODE = "GPD303"
    NAME = "tensor-moved-after-optimizer"
    SUMMARY = "a raw tensor parameter moved after the optimizer was built: it trains a stale copy"
    EVENTS = ("binding", "call")
    VALID = (
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
w = torch.randn(784, 10, requires_grad=True)
w = w.to(device).detach().requires_grad_()
optimizer = torch.optim.SGD([w], lr=0.1)
""",
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
w = torch.randn(784, 10, device=device, requires_grad=True)
b = torch.zeros(10, requires_grad=True)
optimizer = torch.optim.SGD([w], lr=0.1)
w = w.to(device)
x = b.to(device)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
device = torch.device("cuda")
w = torch.randn(784, 10, requires_grad=True)
b = torch.zeros(10, requires_grad=True)
optimizer = torch.optim.SGD([w, b], lr=0.1)
w = w.to(device)
""",
            line=6,
            col=1,
        ),
        Invalid(
            """\
import torch
import torch.nn as nn
def train(device):
    weight = nn.Parameter(torch.randn(10, 3))
    params = [weight]
    opt = torch.optim.Adam(params)
    weight = weight.cuda()
""",
            line=7,
            col=5,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.raw: dict[Key, Place] = {}
        """Hand-made parameters -> their place when created."""
        self.lists: dict[Key, list[str]] = {}
        self.optimized: dict[Key, cst.Call] = {}
        """Hand-made parameters an optimizer holds -> that optimizer's construction."""
        self.copies: dict[Key, cst.CSTNode] = {}
        """Hand-made parameters rebound to a moved copy (a non-leaf tensor) -> that statement."""
        self.optimized_copies: list[tuple[cst.CSTNode, str]] = []
        """(the move, the name) of such copies an optimizer was then built over."""

    def finish(self, context: Context) -> Iterator[Report]:
        untracked = _without_grad(context.module) if self.optimized_copies else set()
        for copy, name in self.optimized_copies:
            if id(copy) in untracked:
                continue  # moved under `torch.no_grad()`: a leaf (one that no longer requires grad)
            message = (
                f"`{name}` is a moved copy of a tensor made with `requires_grad=True`: not a "
                f"leaf, so the optimizer refuses it where the move runs (`can't optimize a "
                f"non-leaf Tensor`); create `{name}` with `device=` (or call "
                f"`.detach().requires_grad_()` after the move)"
            )
            yield Report(copy, message)

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        key = (semantic.function, event.name)
        value = event.assigned
        held = self.optimized.pop(key, None)
        made = self.raw.pop(key, None)
        self.lists.pop(key, None)
        self.copies.pop(key, None)
        if value is None:
            return
        moved = _moves_itself(value, event.name) and _moved_off_host(event)
        if held is not None and moved:
            self.flag(event, held)
        elif made is not None and moved and not _makes_parameter(value, semantic):
            self.copies[key] = event.statement  # `w = w.cuda()` of `w` made requiring grad
        elif _makes_parameter(value, semantic):
            self.raw[key] = event.value.place
        elif isinstance(value, cst.List | cst.Tuple):
            self.lists[key] = _names(value)

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        qualified = event.qualified
        if qualified is None or not qualified.startswith("torch.optim."):
            return
        if "lr_scheduler" in qualified or not qualified.rsplit(".", 1)[-1][:1].isupper():
            return
        params = _params_argument(event.node)
        if params is None:
            return
        function = semantic.function
        names = _names(params)
        listed = dotted(params)
        if listed is not None:
            names = self.lists.get((function, listed), [])
        for name in names:
            if (function, name) in self.raw:
                self.optimized[(function, name)] = event.node
            copy = self.copies.pop((function, name), None)
            if copy is not None:
                self.optimized_copies.append((copy, name))

    def flag(self, event: BindingEvent, optimizer: cst.Call) -> None:
        name = event.name
        message = (
            f"`{name}` is rebound to a moved copy after the optimizer was built over it: the "
            f"optimizer keeps updating the old CPU tensor, and `{name}` never trains; create "
            f"`{name}` with `device=` (or build the optimizer after the move)"
        )
        self.report(event.statement, message)


def _without_grad(module: cst.Module) -> set[int]:
    """The ids of the statements inside ``with torch.no_grad():`` blocks."""
    blocks = _NoGradBlocks()
    walk(module, blocks)
    return blocks.inside


class _NoGradBlocks(cst.CSTVisitor):
    def __init__(self) -> None:
        self.inside: set[int] = set()
        self.depth = 0

    def visit_With(self, node: cst.With) -> None:
        self.depth += _no_grad(node)

    def leave_With(self, original_node: cst.With) -> None:
        self.depth -= _no_grad(original_node)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if self.depth:
            self.inside.add(id(node))


def _no_grad(node: cst.With) -> bool:
    calls = [item.item for item in node.items if isinstance(item.item, cst.Call)]
    return any((dotted(call.func) or "").endswith("no_grad") for call in calls)


def _makes_parameter(node: cst.BaseExpression, semantic: Semantic) -> bool:
    """``torch.randn(..., requires_grad=True)``, ``....requires_grad_()``, ``nn.Parameter(...)``."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_":
        return not node.args or dotted(node.args[0].value) == "True"
    qualified = semantic.qualify(func) or ""
    if qualified in PARAMETER:
        return True
    if qualified in VARIABLE or (
        qualified.startswith("torch.") and qualified[6:] in api.TENSOR_FACTORIES
    ):
        return any(
            arg.keyword is not None
            and arg.keyword.value == "requires_grad"
            and dotted(arg.value) == "True"
            for arg in node.args
        )
    return False


def _moves_itself(node: cst.BaseExpression, name: str) -> bool:
    """``name.to(...)`` / ``name.cuda()``, possibly inside a longer method chain."""
    moved = False
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        moved |= node.func.attr.value in MOVES
        node = node.func.value
    return moved and dotted(node) == name


def _moved_off_host(event: BindingEvent) -> bool:
    before = event.previous
    return (
        event.value.place is Place.DEVICE
        and before is not None
        and before.place is Place.HOST
        and not before.by_name
    )


def _params_argument(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "params":
            return arg.value
    first = call.args[0] if call.args else None
    return first.value if first is not None and first.keyword is None else None


def _names(node: cst.BaseExpression) -> list[str]:
    """Plain names in ``[w, b]`` or ``[{"params": [w]}, ...]``."""
    names: list[str] = []
    if isinstance(node, cst.List | cst.Tuple):
        for element in node.elements:
            names += _names(element.value)
    elif isinstance(node, cst.Dict):
        for item in node.elements:
            if isinstance(item, cst.DictElement) and string_value(item.key) == "params":
                names += _names(item.value)
    elif isinstance(node, cst.Name):
        names.append(node.value)
    return names
