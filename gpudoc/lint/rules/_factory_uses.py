"""Where GPD106's factory tensors go inside their function: read from the function's text."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import libcst as cst

from gpudoc.lint.analysis.names import dotted, is_number_expression
from gpudoc.lint.rules._helpers import chain_root, parameter_names
from gpudoc.lint.visit import walk

METADATA = frozenset({"device", "shape", "dtype", "ndim", "is_cuda"})
"""Attributes that describe a tensor without reading it."""
METADATA_METHODS = frozenset({"size", "dim", "numel", "get_device"})
"""Methods that do the same (``domain.size(0)``)."""
BOOL_COMPARISONS = frozenset({"torch.equal", "torch.allclose"})
"""torch functions that compare tensors into a Python bool."""

Host = Callable[[cst.BaseExpression], bool]
"""Whether an operand of arithmetic is known to be on the host (a number, a host factory)."""


class Uses(cst.CSTVisitor):
    """Where a function binds and reads ``name`` (a plain name, or an attribute such as
    ``self.mask``), and which reads (or the ``call`` itself) are indices of a subscript
    (``x[batch, idx]``, ``x[torch.arange(b)[:, None]]``). With ``host``, a read (or the call)
    that is an operand of arithmetic on the host only (``pos = offs[:, None] + torch.arange(k)``)
    hands its tensor to the name it is bound to, like a plain copy."""

    def __init__(self, name: str | None, call: cst.Call | None, host: Host | None = None) -> None:
        self.name = name
        self.call = call
        self.host = host
        self.bindings = 0
        self.targets: set[cst.CSTNode] = set()
        self.loads: list[cst.Name | cst.Attribute] = []
        self.index_loads: set[cst.CSTNode] = set()
        self.call_in_index = False
        self.loops: list[tuple[cst.CSTNode, str]] = []
        """``for t in name``: the iterated name and the loop's target."""
        self.aliases: dict[cst.CSTNode, str] = {}
        """``other = name`` (or host arithmetic of it): the read and the name it goes to."""
        self.call_copies: list[str] = []
        """The names the call's tensor goes to through host arithmetic."""
        self.numbers: set[str] = set()
        """Names bound to Python numbers above the point of the walk."""

    def reads(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Name | cst.Attribute) and dotted(node) == self.name

    def only_indices(self, function: cst.FunctionDef, depth: int) -> bool:
        """Every read of the name is an index, or hands its elements or itself to a name
        that is read only as an index (``depth`` levels of such hand-overs); and it is read."""
        loops = dict(self.loops)
        for load in self.loads:
            if load in self.index_loads:
                continue
            handed = loops.get(load) or self.aliases.get(load)
            if handed is None or depth == 0:
                return False
            if handed == self.name or not _read_as_index(handed, function, depth - 1, self.host):
                return False
        return bool(self.loads)

    def call_only_indexes(self, function: cst.FunctionDef, depth: int = 2) -> bool:
        """The call is an index itself, or goes by host arithmetic only to names read only as
        indices."""
        if self.call_in_index:
            return True
        return bool(self.call_copies) and all(
            _read_as_index(name, function, depth - 1, self.host) for name in self.call_copies
        )

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if self.reads(node.target):
            self.targets.add(node.target)
            self.bindings += 1
            return
        for target in _names(node.target):
            self.targets.add(target)
            self.bindings += target.value == self.name

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name and node not in self.targets:
            self.loads.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if "." in (self.name or "") and self.reads(node) and node not in self.targets:
            self.loads.append(node)
        if node.attr.value in METADATA and self.reads(node.value):
            self.index_loads.add(node.value)  # `var.device`, `x.shape`: no data is read

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        metadata = isinstance(func, cst.Attribute) and func.attr.value in METADATA_METHODS
        if metadata and isinstance(func, cst.Attribute) and self.reads(func.value):
            self.index_loads.add(func.value)  # `x.size(0)`: no data is read
        if dotted(node.func) in BOOL_COMPARISONS:
            # `torch.equal(var, one)`: a Python bool, like a comparison in a test
            for arg in node.args:
                self.note_index(arg.value)

    def visit_SubscriptElement(self, node: cst.SubscriptElement) -> None:
        part = node.slice
        if isinstance(part, cst.Index):
            # `x[:, torch.arange(n) != pos]`: a boolean mask made by a comparison is an index
            mask = part.value
            if isinstance(mask, cst.Comparison):
                for operand in (mask.left, *(c.comparator for c in mask.comparisons)):
                    self.note_index(operand)
            elif isinstance(mask, cst.BinaryOperation):
                # `logits[:, B + i - 1]`: an index shifted by numbers is an index still
                operands = _operands(mask)
                mine = [op for op in operands if self.is_mine(chain_root(op, self.call))]
                if all(op in mine or self.is_number(op) for op in operands):
                    for operand in mine:
                        self.note_index(operand)
            else:
                self.note_index(mask)
        elif isinstance(part, cst.Slice):  # `x[:, y:y + size]`: a bound is read as an int
            for bound in (part.lower, part.upper, part.step):
                for operand in _operands(bound):
                    self.note_index(operand)

    def note_index(self, expr: cst.BaseExpression) -> None:
        root = chain_root(expr, self.call)
        if root is self.call:
            self.call_in_index = True
        elif self.reads(root):
            self.index_loads.add(root)

    def visit_If(self, node: cst.If) -> None:
        self.note_test(node.test)

    def visit_While(self, node: cst.While) -> None:
        self.note_test(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.note_test(node.test)

    def note_test(self, test: cst.BaseExpression) -> None:
        """``if torch.rand(1) <= self.p:``, ``if start == 0:``: a comparison with a number (or
        a plain name, a probability in real code) that a test reads as a Python bool, which
        needs no device, like an index."""
        if isinstance(test, cst.BooleanOperation):
            self.note_test(test.left)
            self.note_test(test.right)
        elif isinstance(test, cst.UnaryOperation):
            self.note_test(test.expression)
        elif isinstance(test, cst.Comparison):
            operands = [test.left, *(part.comparator for part in test.comparisons)]
            roots = [chain_root(operand, self.call) for operand in operands]
            mine = [op for op, root in zip(operands, roots, strict=True) if self.is_mine(root)]
            others = [op for op in operands if op not in mine]
            if mine and all(_plain_operand(op, self.host) for op in others):
                for operand in mine:
                    self.note_index(operand)

    def is_mine(self, root: cst.BaseExpression | None) -> bool:
        return root is not None and (root is self.call or self.reads(root))

    def visit_For(self, node: cst.For) -> None:
        self.targets.update(_names(node.target))
        if isinstance(node.iter, cst.Name) and isinstance(node.target, cst.Name):
            self.loops.append((node.iter, node.target.value))

    def is_number(self, operand: cst.BaseExpression) -> bool:
        """A number written out, or a name this function bound to one (``B = x.size(0)``)."""
        if isinstance(operand, cst.Name):
            return operand.value in self.numbers
        return is_number_expression(operand)

    def note_numbers(self, node: cst.Assign) -> None:
        """``n = x.size(0)``, ``B, T = z.size(0), z.size(1)``: names of Python numbers."""
        for target in node.targets:
            pairs: list[tuple[cst.BaseExpression, cst.BaseExpression]] = [
                (target.target, node.value)
            ]
            names, values = target.target, node.value
            if (
                isinstance(names, cst.Tuple)
                and isinstance(values, cst.Tuple)
                and len(names.elements) == len(values.elements)
            ):
                pairs = [
                    (t.value, v.value) for t, v in zip(names.elements, values.elements, strict=True)
                ]
            for name, value in pairs:
                if isinstance(name, cst.Name) and is_number_expression(
                    value, self.numbers.__contains__
                ):
                    self.numbers.add(name.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.note_numbers(node)
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        target = node.targets[0].target.value
        if target == self.name and _no_tensor(node.value):
            self.bindings -= 1  # `seq_slice = slice(None)` on the other arm: no tensor to place
        if isinstance(node.value, cst.Name | cst.Attribute):
            self.aliases[node.value] = target
        elif self.host is not None:
            self.note_arithmetic(node.value, target)

    def note_arithmetic(self, value: cst.BaseExpression, target: str) -> None:
        """``pos = offs[:, None] + torch.arange(k)``: the tensor goes to ``pos`` when every
        other operand is on the host too (with a device operand the sum is no host index: it
        fails where it is computed)."""
        operands = _operands(value)
        roots = [chain_root(operand, self.call) for operand in operands]
        mine = [root for root in roots if root is self.call or self.reads(root)]
        host = self.host
        if not mine or host is None:
            return
        if not all(root in mine or host(op) for op, root in zip(operands, roots, strict=True)):
            return
        for root in mine:
            if root is self.call:
                self.call_copies.append(target)
            else:
                self.aliases[root] = target


def meets_tensor_operand(
    value: cst.BaseExpression, holds: Callable[[cst.BaseExpression], bool], host: Host
) -> bool:
    """``value`` combines a factory's tensor (an operand that ``holds`` it) with an operand
    made by another call or read from a subscript that is not on the host (``(torch.rand(n) +
    g.values()).bool()``, ``torch.sum(-target * F.log_softmax(logits))``): what it makes is
    neither a host index nor a host number, since the arithmetic itself meets the device. A
    plain name (``keep_prob``) is read as a number, as a test reads it."""
    finder = _Operands(holds, host)
    walk(value, finder)
    return finder.met


class _Operands(cst.CSTVisitor):
    def __init__(self, holds: Callable[[cst.BaseExpression], bool], host: Host) -> None:
        self.holds = holds
        self.host = host
        self.met = False

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self.note([node.left, node.right])

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self.note([node.left, *(part.comparator for part in node.comparisons)])

    def note(self, operands: list[cst.BaseExpression]) -> None:
        mine = [op for op in operands if self.holds(op)]
        others = [op for op in operands if op not in mine]
        if mine and any(_made_operand(op) and not self.host(op) for op in others):
            self.met = True


def _made_operand(operand: cst.BaseExpression) -> bool:
    """A call's result or a subscript (``g.values()``, ``x[:, 0]``), not a plain name or a
    literal."""
    return isinstance(operand, cst.Call | cst.Subscript)


def _no_tensor(value: cst.BaseExpression) -> bool:
    """``slice(None, None)``, ``None``, a number: a binding that holds no tensor."""
    if isinstance(value, cst.Call):
        return dotted(value.func) == "slice"
    return dotted(value) == "None" or isinstance(value, cst.Integer | cst.Float)


def _plain_operand(operand: cst.BaseExpression, host: Host | None) -> bool:
    """A number, a host operand, or a plain name or attribute (``self.p``): not a tensor made
    by a call here."""
    if isinstance(operand, cst.Integer | cst.Float | cst.Name | cst.Attribute):
        return True
    return host is not None and host(operand)


def _operands(expr: cst.BaseExpression | None) -> list[cst.BaseExpression]:
    """The operands of arithmetic (``y`` and ``size`` of ``y + size``)."""
    if expr is None:
        return []
    if isinstance(expr, cst.BinaryOperation):
        return _operands(expr.left) + _operands(expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return _operands(expr.expression)
    return [expr]


def only_indexes(
    name: str, call: cst.Call, function: cst.FunctionDef, depth: int = 2, host: Host | None = None
) -> bool:
    """``name`` (bound once, to ``call``'s tensor) is only read as an index or a slice bound,
    directly, through the elements of a loop over it (``for end in bounds: x[start:end]``),
    through a plain copy (``start = end``) or, with ``host``, host arithmetic
    (``pos = offs[:, None] + torch.arange(k)``)."""
    uses = Uses(name, call, host)
    walk(function.body, uses)
    return uses.bindings == 1 and uses.only_indices(function, depth)


def read_only_as_index(attribute: str, functions: list[cst.FunctionDef]) -> bool:
    """``self.mask`` is read in ``functions`` (a module's methods besides ``__init__``), and
    only as an index or a slice bound, directly or through a plain copy or a loop."""
    read = False
    for function in functions:
        uses = Uses(attribute, None)
        walk(function.body, uses)
        if uses.loads and not uses.only_indices(function, 2):
            return False
        read = read or bool(uses.loads)
    return read


def _read_as_index(name: str, function: cst.FunctionDef, depth: int, host: Host | None) -> bool:
    """``name`` (a loop target or a copy, bound anywhere) is only read as an index."""
    uses = Uses(name, None, host)
    walk(function.body, uses)
    return uses.only_indices(function, depth)


def _names(target: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, cst.Tuple | cst.List):
        return [n for element in target.elements for n in _names(element.value)]
    return []


Held = Callable[[str], cst.Call | None]
"""The factory call whose tensor a plain name holds here, if any."""


def factory_inside(
    value: cst.BaseExpression | None, factories: set[cst.Call], held: Held | None = None
) -> cst.Call | None:
    """The factory call ``value`` is, or wraps as a first argument, a method chain's receiver or
    a subscript's base, or an operand of arithmetic (``Variable(torch.zeros(n))``,
    ``torch.randn(s).argsort()[..., :k]``, ``torch.ones(s) * alpha``); with ``held``, also
    through a name that holds a factory's tensor (``xx.float() / (n - 1)``)."""
    return next(factories_inside(value, factories, held), None)


RECEIVER_EXPRESSIONS = (
    cst.Call,
    cst.Subscript,
    cst.BinaryOperation,
    cst.Comparison,
    cst.UnaryOperation,
)


def factories_inside(
    value: cst.BaseExpression | None, factories: set[cst.Call], held: Held | None = None
) -> Iterator[cst.Call]:
    """Every factory call ``value`` holds as ``factory_inside`` finds one, the first first:
    both operands of arithmetic, each element of a tuple or list (``torch.stack((xv, yv))``)."""
    while isinstance(value, RECEIVER_EXPRESSIONS):
        if isinstance(value, cst.Comparison):
            value = value.left  # `torch.rand(n) < p`: a mask where the factory's tensor is
            continue
        if isinstance(value, cst.UnaryOperation):
            if isinstance(value.operator, cst.Not):
                return  # `not torch.any(m)`: a Python bool
            value = value.expression  # `~torch.eye(n).bool()`, `-torch.ones(n)`
            continue
        if isinstance(value, cst.BinaryOperation):
            # `torch.ones(shape) * -1`: arithmetic makes a new tensor where the factory's is
            yield from factories_inside(value.left, factories, held)
            yield from factories_inside(value.right, factories, held)
            return
        if isinstance(value, cst.Subscript):
            value = value.value
        elif value in factories:
            yield value
            return
        elif isinstance(value.func, cst.Attribute) and isinstance(
            value.func.value, RECEIVER_EXPRESSIONS
        ):
            # `(torch.arange(n) % k == i).to(dtype).to(device)`: a method of a mask made
            # from the factory's tensor
            value = value.func.value
        elif _held_receiver(value.func, held) is not None:
            yield from _optional(_held_receiver(value.func, held))
            return
        elif value.args and value.args[0].keyword is None:
            value = value.args[0].value
        else:
            return
    if isinstance(value, cst.Tuple | cst.List):
        # `torch.stack((xv, yv))`, `torch.meshgrid([torch.arange(h), torch.arange(w)])`
        for element in value.elements:
            yield from factories_inside(element.value, factories, held)
    elif isinstance(value, cst.ListComp | cst.GeneratorExp):
        # `torch.cat([plane + i for i in range(d)])`: each element is made from the factory's
        yield from factories_inside(value.elt, factories, held)
    elif isinstance(value, cst.Name) and held is not None:
        yield from _optional(held(value.value))
    elif value is not None and _self_attribute(value) and held is not None:
        yield from _optional(held(dotted(value) or ""))  # `self.table`, bound in this method


def _optional(call: cst.Call | None) -> Iterator[cst.Call]:
    if call is not None:
        yield call


def _held_receiver(func: cst.BaseExpression, held: Held | None) -> cst.Call | None:
    """``h`` of ``h.float()`` (also ``self.h``) when it holds a factory's tensor."""
    if held is None or not isinstance(func, cst.Attribute):
        return None
    if isinstance(func.value, cst.Name):
        return held(func.value.value)
    return held(dotted(func.value) or "") if _self_attribute(func.value) else None


def _self_attribute(value: cst.BaseExpression) -> bool:
    """``self.table``: one attribute of ``self``."""
    return isinstance(value, cst.Attribute) and dotted(value.value) == "self"


FILLS = ("append", "extend", "insert")


def only_filled_in(call: cst.Call, function: cst.FunctionDef) -> bool:
    """``call``'s tensor goes into a local list that the function only ever fills, never reads
    (``results[1].extend(torch.tensor(...))``, ``results`` not returned): it meets nothing."""
    fills = _Fills(call)
    walk(function.body, fills)
    name = fills.container
    if name is None:
        return False
    return all(load in fills.fill_receivers for load in fills.loads if load.value == name)


class _Fills(cst.CSTVisitor):
    def __init__(self, call: cst.Call) -> None:
        self.call = call
        self.container: str | None = None
        """The list the call's tensor is put into."""
        self.targets: set[cst.Name] = set()
        self.loads: list[cst.Name] = []
        self.fill_receivers: set[cst.Name] = set()
        """Names that start the receiver of a fill (``results`` in ``results[0].append``)."""

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.targets.update(_names(node.target))

    def visit_Name(self, node: cst.Name) -> None:
        if node not in self.targets:
            self.loads.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in FILLS:
            return
        root = chain_root(func.value, self.call)
        if not isinstance(root, cst.Name):
            return
        self.fill_receivers.add(root)
        if any(factory_inside(arg.value, {self.call}) is self.call for arg in node.args):
            self.container = root.value


def record_values(function: cst.FunctionDef) -> frozenset[cst.BaseExpression]:
    """The values of the function's string-keyed dict displays (``log = {"train/g_loss":
    g_loss.detach(), "train/disc_factor": torch.tensor(factor)}``): a record for a logger, read
    by whoever logs it, not combined with the inputs here."""
    finder = _Records()
    walk(function.body, finder)
    return frozenset(finder.values)


class _Records(cst.CSTVisitor):
    def __init__(self) -> None:
        self.values: list[cst.BaseExpression] = []

    def visit_Dict(self, node: cst.Dict) -> None:
        elements = [e for e in node.elements if isinstance(e, cst.DictElement)]
        if (
            elements
            and len(elements) == len(node.elements)
            and all(_text_key(e.key) for e in elements)
        ):
            self.values += [e.value for e in elements]


def _text_key(key: cst.BaseExpression) -> bool:
    """``"loss"``, ``f"{split}/loss"``, ``"{}/loss".format(split)``."""
    if isinstance(key, cst.BaseString):
        return True
    func = key.func if isinstance(key, cst.Call) else None
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.BaseString)


TENSOR_ATTRIBUTES = frozenset(
    {
        "shape", "size", "device", "dtype", "dim", "ndim", "numel", "is_cuda", "view",
        "reshape", "unsqueeze", "squeeze", "transpose", "permute", "contiguous", "flatten",
        "expand", "float", "long", "half", "double", "type_as", "masked_fill", "new_zeros",
        "new_ones", "new_empty", "new_full", "new_tensor",
    }
)  # fmt: skip
"""Attributes only a tensor has: a parameter read through one is a tensor."""
NOT_TENSOR_NAME = re.compile(
    r"(^list_|_list$|(^|_)(texts?|str|strings?|sentences?|captions?|prompts?|words|paths?"
    r"|files?|filenames?|names?)$)",
    re.I,
)
"""Parameter names that say what they hold is no tensor (``list_of_text``, ``prompts``)."""


class _TensorReads(cst.CSTVisitor):
    """The names read through an attribute only a tensor has (``x.size(0)``, ``src.device``)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.attr.value in TENSOR_ATTRIBUTES:
            self.names.add(node.value.value)


def tensor_parameters(function: cst.FunctionDef, walked: Callable[[str], bool]) -> list[str]:
    """The function's parameters known to hold tensors: by the walk's value (``walked``: the
    caller's argument, an annotation, a conventional name such as ``x``), or by a read only a
    tensor allows (``src.size(0)``), never by the name alone when it says otherwise."""
    reads = _TensorReads()
    walk(function.body, reads)
    return [
        name
        for name in parameter_names(function)
        if not NOT_TENSOR_NAME.search(name) and (walked(name) or name in reads.names)
    ]


def no_tensor_parameter(function: cst.FunctionDef, not_tensor: Callable[[str], bool]) -> bool:
    """Every parameter of the function is known to hold something else than a tensor (a list
    of strings, a path): its tensors meet no input's device there."""
    return all(
        NOT_TENSOR_NAME.search(name) or not_tensor(name) for name in parameter_names(function)
    )
