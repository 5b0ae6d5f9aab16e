"""Whether a GPD106 factory's host tensor reaches an operation that needs it on the device.

Read from the function's text: the tensor flows through names, method chains, subscripts,
arithmetic, containers and loops, and it *reaches the device* when it meets an operand that
may be there (the forward's input, a module's output, anything the text cannot show is a
number or on the host), is handed to a module or a callable with such an operand, or leaves the
function (a return, an attribute of ``self``). A tensor that only becomes indices, slice
bounds, Python numbers, tests, log records or the source of a copy never needs the device:
creating it on the host is right, and reporting it would be a false alarm.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from gpudoc.lint.analysis.expressions import converts_only
from gpudoc.lint.analysis.functions import MOVES
from gpudoc.lint.analysis.instance_weights import SETTING
from gpudoc.lint.analysis.names import dotted, is_number_expression
from gpudoc.lint.rules._factory_uses import METADATA
from gpudoc.lint.visit import walk

LEAVES_TENSOR = frozenset(
    {"item", "tolist", "numpy", "size", "dim", "numel", "nelement", "data_ptr", "element_size",
     "copy_", "is_contiguous", "get_device"}
)  # fmt: skip
"""Methods whose result is no longer the factory's host tensor but a Python value (a moved
tensor, from MOVES, is not the host tensor either)."""
CARRYING_CALLS = frozenset(
    {"Variable", "autograd.Variable", "torch.autograd.Variable", "list", "tuple", "zip",
     "enumerate", "reversed", "sorted", "nn.Parameter", "torch.nn.Parameter", "Parameter"}
)  # fmt: skip
"""Calls that hand their argument's tensors on."""
HARMLESS_CALLS = frozenset(
    {"print", "len", "int", "float", "bool", "str", "repr", "format", "isinstance", "range",
     "type", "id", "hash", "round", "abs", "torch.equal", "torch.allclose", "torch.is_tensor",
     "torch.numel", "torch.save", "np.array", "np.asarray", "numpy.array", "numpy.asarray"}
)  # fmt: skip
"""Functions that read a tensor without an operation on its device."""
NUMBER_CASTS = frozenset({"int", "float", "bool", "round"})
HARMLESS_METHODS = frozenset(
    {"append", "extend", "insert", "add_scalar", "add_scalars", "add_histogram", "add_image",
     "add_images", "log", "log_dict", "register_buffer", "info", "debug", "warning", "write",
     "index_select", "gather", "copy_", "fill_", "set_", "update", "setdefault", "put",
     "save_for_backward", "format", "join"}
)  # fmt: skip
"""Methods that take a host tensor from any device (a logger, a container, an index, a copy;
``append`` fills a list the flow follows itself)."""
COMBINING_METHODS = frozenset(
    {
        "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "matmul", "mm", "bmm",
        "masked_fill", "masked_fill_", "where", "eq", "ne", "lt", "le", "gt", "ge",
        "maximum", "minimum",
    }
)  # fmt: skip
"""Tensor methods whose tensor argument must be on the receiver's device (``copy_`` and
``expand_as`` take any device; an index may be a CPU tensor)."""
REDUCTIONS = frozenset(
    {"sum", "mean", "prod", "max", "min", "norm", "std", "var", "amax", "amin", "all", "any"}
)
CONTAINER_METHODS = frozenset({"append", "extend", "insert"})
TORCH_PREFIXES = ("torch.", "F.", "nn.functional.", "torch.nn.functional.")


def reaches_device(
    call: cst.Call,
    function: cst.FunctionDef,
    host: Callable[[cst.BaseExpression], bool],
    numbers: frozenset[str],
    methods: frozenset[str] = frozenset(),
) -> bool:
    """Whether ``call``'s tensor (a factory without ``device=`` inside ``function``) meets a
    value that may be on the device, is handed to a module, or leaves the function. ``host``
    says which operands are known host tensors or numbers; ``numbers``, which names hold
    Python numbers; ``methods``, the file's functions and the enclosing class's methods, whose
    bodies the rule follows itself."""
    flow = _Flow(call, host, numbers, methods)
    flow.spread(function)
    return flow.reaches(function)


class _Flow:
    def __init__(
        self,
        call: cst.Call,
        host: Callable[[cst.BaseExpression], bool],
        numbers: frozenset[str],
        methods: frozenset[str],
    ) -> None:
        self.call = call
        self.host = host
        self.numbers = set(numbers)
        self.methods = methods
        self.names: set[str] = set()
        """Names that hold the tensor (or a host tensor computed from it)."""
        self.filled: set[str] = set()
        """Lists the tensor was appended to."""
        self.mixed: set[str] = set()
        """Of those, lists that also hold something that may be on the device."""
        self.moved: set[str] = set()
        """Names (``w``, ``self._offsets``) the function rebinds to a move of themselves."""

    # -- which expressions hold the tensor ----------------------------------------------------
    def carries(self, expr: cst.BaseExpression | None) -> bool:
        if expr is None:
            return False
        if expr is self.call:
            return True
        if isinstance(expr, cst.Name):
            return expr.value in self.names or expr.value in self.filled
        if isinstance(expr, cst.Subscript):
            return self.carries(expr.value)
        if isinstance(expr, cst.Attribute):
            return expr.attr.value not in METADATA and self.carries(expr.value)
        if isinstance(expr, cst.BinaryOperation):
            return self.carries(expr.left) or self.carries(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self.carries(expr.expression)
        if isinstance(expr, cst.Comparison):  # `torch.rand(n) < p`: a host mask
            return self.carries(expr.left) or any(
                self.carries(c.comparator) for c in expr.comparisons
            )
        if isinstance(expr, cst.IfExp):
            return self.carries(expr.body) or self.carries(expr.orelse)
        if isinstance(expr, cst.Tuple | cst.List | cst.Set):
            return any(self.carries(e.value) for e in expr.elements)
        if isinstance(expr, cst.StarredElement):
            return self.carries(expr.value)
        if isinstance(expr, cst.Call):
            return self.call_carries(expr)
        return False

    def call_carries(self, node: cst.Call) -> bool:
        func = node.func
        name = dotted(func) or ""
        if isinstance(func, cst.Attribute) and self.carries(func.value):
            method = func.attr.value
            if method in REDUCTIONS and not node.args:
                return False  # `counts.sum()`: 0-dim, combined with tensors on any device
            if method == "to" and converts_only(node):
                return True  # `mask.to(torch.bool)`: the same tensor, where it was
            return method not in LEAVES_TENSOR and method not in MOVES
        if name in CARRYING_CALLS or name.startswith(TORCH_PREFIXES):
            if name.endswith((".to", ".device")):
                return False
            if name.rpartition(".")[2] in REDUCTIONS and len(node.args) == 1:
                return False  # `torch.sum(counts)`: 0-dim
            return any(self.carries(arg.value) for arg in node.args)
        if self.own(func):  # the file's helper may hand it back (`return wrap(h)`)
            return any(self.carries(arg.value) for arg in node.args)
        return False

    def own(self, func: cst.BaseExpression) -> bool:
        """A function of the file or a method of the enclosing class."""
        if isinstance(func, cst.Name):
            return func.value in self.methods
        if isinstance(func, cst.Attribute) and dotted(func.value) == "self":
            return func.attr.value in self.methods
        return False

    def may_be_on_device(self, expr: cst.BaseExpression) -> bool:
        """An operand the text cannot show is a number, a string or a host tensor."""
        if self.carries(expr) or self.host(expr):
            return False
        if isinstance(expr, cst.SimpleString | cst.FormattedString | cst.ConcatenatedString):
            return False
        if dotted(expr) in ("None", "True", "False"):
            return False
        if is_number_expression(expr, self.numbers.__contains__):
            return False
        name = dotted(expr)
        if name is not None and SETTING.search(name.rpartition(".")[2]):
            return False  # `keep_prob`, `self.dropout_rate`: a setting, not a tensor
        if isinstance(expr, cst.Attribute) and expr.attr.value in METADATA:
            return False
        value = expr.value if isinstance(expr, cst.Subscript) else None
        if isinstance(value, cst.Attribute) and value.attr.value in METADATA:
            return False  # `x.shape[0]`
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in LEAVES_TENSOR:
                return False  # `.size(0)`, `.item()`: Python values
            if (dotted(func) or "") in HARMLESS_CALLS:
                return False
        if isinstance(expr, cst.BinaryOperation):
            return self.may_be_on_device(expr.left) or self.may_be_on_device(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self.may_be_on_device(expr.expression)
        if isinstance(expr, cst.Tuple | cst.List):
            return any(self.may_be_on_device(e.value) for e in expr.elements)
        return True

    # -- the flow through the function's bindings ---------------------------------------------
    def spread(self, function: cst.FunctionDef) -> None:
        """Names and lists that hold the tensor, to a fixed point (order does not matter: a loop
        carries a binding back to its top)."""
        bindings = _Bindings()
        walk(function.body, bindings)
        self.numbers.update(bindings.numbers)
        self.moved = bindings.moved
        while True:
            before = (len(self.names), len(self.filled), len(self.mixed))
            for targets, value in bindings.assigned:
                if value is self.call:
                    self.names.update(targets)
                elif self.carries(value):
                    # `window = window.to("cuda")` under `if x.is_cuda:`: the author places
                    # what the factory's tensor became (a move of the factory's own name is
                    # GPD106's `moved_after`, which knows which binding it moves)
                    self.names.update(set(targets) - bindings.moved)
            for target, iterated in bindings.loops:
                if self.carries(iterated):
                    self.names.update(target)
            for owner, item in bindings.filled:
                if self.carries(item):
                    self.filled.add(owner)
            for owner, item in bindings.filled:
                if owner in self.filled and not self.carries(item) and self.may_be_on_device(item):
                    self.mixed.add(owner)
            if (len(self.names), len(self.filled), len(self.mixed)) == before:
                return

    def reaches(self, function: cst.FunctionDef) -> bool:
        sinks = _Sinks(self)
        walk(function.body, sinks)
        return sinks.found


class _Bindings(cst.CSTVisitor):
    """A function's bindings: targets with their values, loops, list fills, number names."""

    def __init__(self) -> None:
        self.assigned: list[tuple[list[str], cst.BaseExpression]] = []
        self.loops: list[tuple[list[str], cst.BaseExpression]] = []
        self.filled: list[tuple[str, cst.BaseExpression]] = []
        self.numbers: set[str] = set()
        self.moved: set[str] = set()
        """Names the function rebinds to a move of themselves (``w = w.cuda()``)."""

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self.bind(target.target, node.value)
            name = dotted(target.target)
            if name and _moved_self(node.value, name):
                self.moved.add(name)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.bind(node.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.bind(node.target, node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.bind(node.target, node.value)

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        names = _names(target)
        if names:
            self.assigned.append((names, value))
        setting = dotted(value)
        if _sizes(value) or (setting is not None and SETTING.search(setting.rpartition(".")[2])):
            self.numbers.update(names)  # `n = x.size(0)`, `N = self.filt_dim`

    def visit_For(self, node: cst.For) -> None:
        self.loops.append((_names(node.target), node.iter))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.loops.append((_names(node.target), node.iter))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in CONTAINER_METHODS:
            owner = func.value
            while isinstance(owner, cst.Subscript):  # `results[1].extend(t)`
                owner = owner.value
            if isinstance(owner, cst.Name) and node.args:
                self.filled.append((owner.value, node.args[-1].value))


def _moved_self(value: cst.BaseExpression, name: str) -> bool:
    """``w.cuda()``, ``w.to(x.device)`` for ``name`` ``w``."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    method = value.func.attr.value
    moves = method in MOVES and not (method == "to" and converts_only(value))
    return moves and dotted(value.func.value) == name


def _sizes(value: cst.BaseExpression) -> bool:
    """``x.size()``, ``x.shape``, ``x.size(0)``, ``len(xs)``, ``t.item()``: Python numbers."""
    if isinstance(value, cst.Attribute):
        return value.attr.value == "shape"
    if isinstance(value, cst.Subscript):
        return _sizes(value.value)
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Attribute):
            return func.attr.value in ("size", "item", "dim", "numel", "tolist")
        return dotted(func) in ("len", "int", "float", "round")
    return False


def _names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, cst.Tuple | cst.List):
        return [n for element in target.elements for n in _names(element.value)]
    if isinstance(target, cst.StarredElement):
        return _names(target.value)
    return []


class _Sinks(cst.CSTVisitor):
    """Looks for an operation of the function where the tensor meets the device."""

    def __init__(self, flow: _Flow) -> None:
        self.flow = flow
        self.found = False
        self.tests: set[cst.BaseExpression] = set()

    def on_device(self) -> bool:
        self.found = True
        return False

    def visit_If(self, node: cst.If) -> None:
        self.tests.add(node.test)

    def visit_While(self, node: cst.While) -> None:
        self.tests.add(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.tests.add(node.test)

    def visit_Return(self, node: cst.Return) -> bool:
        if self.flow.carries(node.value):
            return self.on_device()  # the caller's operations decide
        return True

    def visit_Yield(self, node: cst.Yield) -> bool:
        value = node.value
        if isinstance(value, cst.BaseExpression) and self.flow.carries(value):
            return self.on_device()
        return True

    def visit_Assign(self, node: cst.Assign) -> bool:
        for target in node.targets:
            stored = isinstance(target.target, cst.Attribute)
            if stored and dotted(target.target) in self.flow.moved:
                continue  # `self._offsets = ...` then `if x.is_cuda: self._offsets = ....cuda()`
            if stored and self.flow.carries(node.value):
                return self.on_device()  # `self.h = h`: the module's other methods use it
        return True

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> bool:
        flow = self.flow
        left, right = flow.carries(node.left), flow.carries(node.right)
        if left and flow.may_be_on_device(node.right):
            return self.on_device()
        if right and flow.may_be_on_device(node.left):
            return self.on_device()
        return True

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        flow = self.flow
        if flow.carries(node.target) and flow.may_be_on_device(node.value):
            return self.on_device()
        if flow.carries(node.value) and flow.may_be_on_device(node.target):
            return self.on_device()  # `loss += torch.zeros(1)` on a device loss
        return True

    def visit_Comparison(self, node: cst.Comparison) -> bool:
        if node in self.tests:
            return True  # `if torch.rand(1) < p:`: read as a Python bool
        flow = self.flow
        operands = [node.left, *(c.comparator for c in node.comparisons)]
        if any(flow.carries(o) for o in operands) and any(
            flow.may_be_on_device(o) for o in operands
        ):
            return self.on_device()
        return True

    def visit_Call(self, node: cst.Call) -> bool:
        flow = self.flow
        if dotted(node.func) in NUMBER_CASTS:
            # `int(w * r[0])` of a random draw: a crop offset; what int() takes is one
            # element, which PyTorch combines with a tensor on any device as a 0-dim one
            return False
        args = [arg.value for arg in node.args]
        given = [a for a in args if flow.carries(a) or self.mixed_list(a)]
        func = node.func
        receiver = func.value if isinstance(func, cst.Attribute) else None
        method = func.attr.value if isinstance(func, cst.Attribute) else ""
        if receiver is not None and flow.carries(receiver):
            # `h.add_(x)`, `mask.masked_fill(...)`: the tensor's own method with a device operand
            if method in LEAVES_TENSOR or method in MOVES:
                return True
            if any(flow.may_be_on_device(a) for a in args if not flow.carries(a)):
                return self.on_device()
            return True
        if not given:
            return True
        name = dotted(func) or ""
        if name in HARMLESS_CALLS or name in CARRYING_CALLS:
            return True
        others = [a for a in args if a not in given]
        if any(self.mixed_list(a) for a in given):
            return self.on_device()  # `torch.cat(outs)` with outs holding device tensors too
        if name.startswith(TORCH_PREFIXES):
            if any(flow.may_be_on_device(a) for a in others):
                return self.on_device()
            return True
        if receiver is not None:
            if method in HARMLESS_METHODS:
                return True
            if dotted(receiver) == "self" and method not in flow.methods:
                return self.on_device()  # `self.lstm(x, (h, c))`: a submodule
            if flow.may_be_on_device(receiver) and method in COMBINING_METHODS:
                return self.on_device()  # `scores.masked_fill(mask, v)` on a device tensor
        # a module held in a name, a helper, a loss: it meets the tensor with the others; a
        # callable the file does not define may be a module the tensor is fed to
        if any(flow.may_be_on_device(a) for a in others):
            return self.on_device()
        if receiver is None and not flow.own(func):
            return self.on_device()
        return True

    def mixed_list(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and expr.value in self.flow.mixed


def other_arm(function: cst.FunctionDef | cst.Module, one: cst.CSTNode, other: cst.CSTNode) -> bool:
    """``one`` and ``other`` sit in the two arms of one ``if``/``else`` of ``function`` (or of a
    script's top level)."""
    arms = _Arms(one, other)
    walk(function.body if isinstance(function, cst.FunctionDef) else function, arms)
    return arms.found


class _Arms(cst.CSTVisitor):
    def __init__(self, one: cst.CSTNode, other: cst.CSTNode) -> None:
        self.targets = (one, other)
        self.found = False

    def visit_If(self, node: cst.If) -> bool:
        if self.found or node.orelse is None:
            return not self.found
        body, orelse = _Contains(self.targets), _Contains(self.targets)
        walk(node.body, body)
        walk(node.orelse, orelse)
        if body.seen and orelse.seen and body.seen != orelse.seen:
            self.found = True
        return not self.found


class _Contains(cst.CSTVisitor):
    def __init__(self, targets: tuple[cst.CSTNode, ...]) -> None:
        self.targets = targets
        self.seen: set[int] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        for index, target in enumerate(self.targets):
            if node is target:
                self.seen.add(index)
        return True
