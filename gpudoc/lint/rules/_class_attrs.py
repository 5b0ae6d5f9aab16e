"""What an nn.Module's ``__init__`` assigns to ``self``: the attributes GPD104 (plain containers
of submodules) and GPD105 (plain tensors) look at, by the shape of the assigned expression."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import BindingEvent, Semantic
from gpudoc.lint.analysis.instance_weights import holds_only_settings
from gpudoc.lint.analysis.names import dotted, return_values
from gpudoc.lint.analysis.parameterless import weightless_layer
from gpudoc.lint.analysis.semantic import ModuleClass
from gpudoc.lint.analysis.values import Kind, Place, Value
from gpudoc.lint.visit import walk


@dataclass(frozen=True)
class ClassAttr:
    attr: str
    statement: cst.CSTNode
    value: cst.BaseExpression
    shape: str
    """``tensor``, ``module-list``, ``module-dict``, ``empty-list``, ``empty-dict``."""
    placed: bool = False
    """The walk found the value on the device (``torch.sqrt(b)``, ``b = ....to(device)``)."""


class InitAttributes:
    """The shaped ``self.<attr> = ...`` assignments of each module class's ``__init__`` (and
    the helper methods it calls), in order; a rule feeds it its binding events."""

    def __init__(self) -> None:
        self.classes: list[ModuleClass] = []
        self.attrs: dict[int, list[ClassAttr]] = {}
        """id of a ModuleClass -> its attributes."""

    def add_class(self, module_class: ModuleClass) -> None:
        self.classes.append(module_class)
        self.attrs.setdefault(id(module_class), [])

    def of(self, module_class: ModuleClass) -> list[ClassAttr]:
        return self.attrs.get(id(module_class), [])

    def note(self, event: BindingEvent, semantic: Semantic) -> None:
        cls, name = semantic.module_class, event.name
        if cls is None or not semantic.in_init or not name.startswith("self."):
            return
        if not isinstance(event.target, cst.Attribute):
            return
        attrs = self.attrs.setdefault(id(cls), [])
        shape = attribute_shape(event.statement, event.value, semantic)
        if shape is None:
            # `self.layers = nn.ModuleList(self.layers)`: the plain list was wrapped after all
            attrs[:] = [a for a in attrs if a.attr != name[5:]]
            return
        if isinstance(event.statement, cst.SimpleStatementLine):
            small = event.statement.body[0]
            if isinstance(small, cst.Assign):
                placed = event.value.place is Place.DEVICE
                if _rebinds_itself(small.value, name):
                    # `self.k = self.k.unsqueeze(0).to(device)`: the other methods read this one
                    attrs[:] = [a for a in attrs if a.attr != name[5:]]
                attrs.append(ClassAttr(name[5:], event.statement, small.value, shape, placed))


def _rebinds_itself(value: cst.BaseExpression, name: str) -> bool:
    """``self.k = self.k.unsqueeze(0).to(device)``: a chain of methods on the attribute itself."""
    root = value
    while isinstance(root, cst.Call) and isinstance(root.func, cst.Attribute):
        root = root.func.value
    return root is not value and dotted(root) == name


def attribute_shape(statement: cst.CSTNode, value: Value, semantic: Semantic) -> str | None:
    if not isinstance(statement, cst.SimpleStatementLine):
        return None
    small = statement.body[0]
    if not isinstance(small, cst.Assign):
        return None
    expr = small.value
    if isinstance(expr, cst.List) and not expr.elements:
        return "empty-list"
    if isinstance(expr, cst.Dict) and not expr.elements:
        return "empty-dict"
    if isinstance(expr, cst.List | cst.ListComp) and _holds_modules(expr, semantic):
        return "module-list"
    cls = semantic.module_class
    attr = (dotted(small.targets[0].target) or "").removeprefix("self.")
    if cls is not None and _moved_items(expr) and attr in called_items(cls.node):
        # `[ph.to(device) for ph in heads]`, whose items `forward` calls: modules, moved once
        return "module-list"
    if isinstance(expr, cst.Dict | cst.DictComp) and _holds_modules(expr, semantic):
        return "module-dict"
    if isinstance(expr, cst.Call) and _returns_parameters(semantic.local_function(expr.func)):
        return None  # `self.W_pos = positional_encoding(n, d)`, which builds an nn.Parameter
    if value.kind is Kind.TENSOR and _is_new_tensor(expr, semantic):
        return "tensor"
    placed = value.kind is Kind.TENSOR and value.place is Place.DEVICE
    if placed and _made_by_methods(expr, semantic):
        return "tensor"  # `torch.tensor(c).float().cuda()`, `self.c.repeat(n, 1)`: on one GPU
    if (
        isinstance(expr, cst.IfExp)
        and value.kind is not Kind.DEVICE
        and _is_new_tensor(expr, semantic)
    ):
        return "tensor"  # `mean if mean is not None else torch.zeros(1)`: a tensor either way
    if value.kind is Kind.TENSOR and value.place is Place.HOST and _is_own_call(expr, semantic):
        return "tensor"  # `self.create_positional_encoding()`, walked: a host tensor
    return None


NOT_TENSORS = frozenset(
    {"device", "Size", "Generator", "finfo", "iinfo", "dtype", "Stream", "get_default_dtype",
     "initial_seed", "seed", "is_tensor", "numel", "get_num_threads", "is_grad_enabled"}
)  # fmt: skip
"""Calls of ``torch`` that make no tensor."""


def _moved_items(expr: cst.BaseExpression) -> bool:
    """``[ph.to(device) for ph in heads]``: each item of what it was given, moved."""
    if not isinstance(expr, cst.ListComp) or not isinstance(expr.for_in.target, cst.Name):
        return False
    elt = expr.elt
    func = elt.func if isinstance(elt, cst.Call) else None
    if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "cuda"):
        return False
    return isinstance(func.value, cst.Name) and func.value.value == expr.for_in.target.value


@lru_cache(maxsize=128)
def called_items(node: cst.ClassDef) -> frozenset[str]:
    """Attributes whose items the class calls: ``for head in self.heads: head(x)``, also
    through ``zip(self.heads, ...)`` and ``enumerate(self.heads)``."""
    finder = _CalledItems()
    walk(node, finder)
    return frozenset(finder.found)


class _CalledItems(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_For(self, node: cst.For) -> None:
        self._note(node.iter, node.target, node.body)

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._note(node.for_in.iter, node.for_in.target, node.elt)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._note(node.for_in.iter, node.for_in.target, node.elt)

    def _note(
        self, iterable: cst.BaseExpression, target: cst.BaseExpression, body: cst.CSTNode
    ) -> None:
        for attr, item in _iterated(iterable, target):
            calls = _NameCalls(item)
            walk(body, calls)
            if calls.called:
                self.found.add(attr)


def _iterated(iterable: cst.BaseExpression, target: cst.BaseExpression) -> list[tuple[str, str]]:
    """(attribute, the loop name its items are bound to) for ``for h in self.heads``,
    ``for h, x in zip(self.heads, xs)`` and ``for i, h in enumerate(self.heads)``."""
    name = dotted(iterable) or ""
    if name.startswith("self.") and isinstance(target, cst.Name):
        return [(name[5:], target.value)]
    if not isinstance(iterable, cst.Call) or not isinstance(target, cst.Tuple):
        return []
    called = dotted(iterable.func)
    names = [e.value.value if isinstance(e.value, cst.Name) else "" for e in target.elements]
    sources = [dotted(arg.value) or "" for arg in iterable.args]
    if called == "enumerate" and len(sources) == 1 and len(names) == 2:
        sources = ["", sources[0]]
    elif called != "zip":
        return []
    return [
        (source[5:], item)
        for source, item in zip(sources, names, strict=False)
        if source.startswith("self.") and item
    ]


class _NameCalls(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.called = False

    def visit_Call(self, node: cst.Call) -> None:
        self.called |= isinstance(node.func, cst.Name) and node.func.value == self.name


def _returns_parameters(function: cst.FunctionDef | None) -> bool:
    """Every ``return`` of ``function`` hands back an ``nn.Parameter(...)``."""
    if function is None:
        return False
    values = return_values(function)
    return bool(values) and all(
        isinstance(value, cst.Call) and (dotted(value.func) or "").rpartition(".")[2] == "Parameter"
        for value in values
    )


def _is_own_call(expr: cst.BaseExpression, semantic: Semantic) -> bool:
    """A call of one of the file's functions or of the class's own methods."""
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if isinstance(func, cst.Name):
        return semantic.is_local_function(func)
    return isinstance(func, cst.Attribute) and dotted(func.value) == "self"


def _holds_modules(expr: cst.BaseExpression, semantic: Semantic) -> bool:
    """Module constructors, not all of them stateless (``nn.Upsample``, ``nn.ReLU``: nothing to
    move, train or save; a dropout still needs the parent's ``.eval()``)."""
    if isinstance(expr, cst.ListComp):
        items = [expr.elt]
    elif isinstance(expr, cst.DictComp):
        items = [expr.value]
    elif isinstance(expr, cst.List):
        items = [element.value for element in expr.elements]
    elif isinstance(expr, cst.Dict):
        if not all(isinstance(e, cst.DictElement) for e in expr.elements):
            return False
        items = [e.value for e in expr.elements if isinstance(e, cst.DictElement)]
    else:
        return False
    if not items or not all(is_module_constructor(item, semantic) for item in items):
        return False
    return not all(_stateless(item, semantic) for item in items)


def _stateless(item: cst.BaseExpression, semantic: Semantic) -> bool:
    """A layer without parameters or buffers (not a dropout, which needs the parent's
    ``.eval()``), or a class of the project that only keeps settings and such layers
    (``MovingAvg(kernel_size)`` around an ``nn.AvgPool1d``)."""
    if not isinstance(item, cst.Call):
        return False
    if weightless_layer(item):
        return "Dropout" not in (dotted(item.func) or "")
    cls = semantic.module_class_named(item.func)
    return cls is not None and holds_only_settings(cls)


def is_module_constructor(expr: cst.BaseExpression, semantic: Semantic) -> bool:
    """Syntactically a module constructor: `nn.Linear(...)`, a local Module subclass."""
    if not isinstance(expr, cst.Call):
        return False
    qualified = semantic.qualify(expr.func) or ""
    if qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[-1][:1].isupper():
        return True
    if qualified.startswith(api.METRIC_PREFIXES) and qualified.rsplit(".", 1)[-1][:1].isupper():
        return True  # `torchmetrics.Accuracy()`: its state tensors move with the module
    if semantic.is_module_class(expr.func) or semantic.returns_module(expr.func):
        return True
    return _wrapped_module(expr, qualified, semantic)


INITIALISER = re.compile(r"(^|_)init(_|$)|^init", re.I)


def _wrapped_module(call: cst.Call, qualified: str, semantic: Semantic) -> bool:
    """``init_(nn.Linear(h, 1))``, ``layer_init(nn.Linear(...), std=0.01)``,
    ``spectral_norm(nn.Conv2d(...))``: a module constructor handed to a weight initialiser or a
    wrapper that returns the module itself (the RL codebases' ``init_`` lambda)."""
    first = next((arg for arg in call.args if arg.keyword is None and not arg.star), None)
    if first is None or not is_module_constructor(first.value, semantic):
        return False
    if qualified.startswith("torch.nn.utils."):
        return True
    name = (dotted(call.func) or "").rsplit(".", 1)[-1]
    if INITIALISER.search(name):
        return True
    function = semantic.local_function(call.func)
    if function is None or not function.params.params:
        return False
    parameter = function.params.params[0].name.value
    values = [value for value in return_values(function) if value is not None]
    return bool(values) and all(dotted(value) == parameter for value in values)


def _made_by_methods(expr: cst.BaseExpression, semantic: Semantic) -> bool:
    """A new tensor moved with ``.cuda()`` (``torch.tensor(c).float().cuda()``), or a chain of
    tensor methods on an attribute of ``self`` (``self.c.repeat(n, 1)``): a tensor of the
    module's own, on a GPU, not one handed to it."""
    root, cuda = expr, False
    while isinstance(root, cst.Call) and isinstance(root.func, cst.Attribute):
        if _is_new_tensor(root, semantic):
            return cuda  # `torch.tensor(c)` of `torch.tensor(c).float().cuda()`
        cuda |= root.func.attr.value == "cuda"
        root = root.func.value
    if root is expr:
        return False
    return isinstance(root, cst.Attribute) and dotted(root.value) == "self"


def _is_new_tensor(expr: cst.BaseExpression, semantic: Semantic) -> bool:
    if isinstance(expr, cst.BinaryOperation):
        return _is_new_tensor(expr.left, semantic) or _is_new_tensor(expr.right, semantic)
    if isinstance(expr, cst.Subscript):
        return _is_new_tensor(expr.value, semantic)  # `torch.linspace(0, p, n)[..., None]`
    if isinstance(expr, cst.IfExp):
        return _is_new_tensor(expr.body, semantic) or _is_new_tensor(expr.orelse, semantic)
    if not isinstance(expr, cst.Call):
        return False
    qualified = semantic.qualify(expr.func) or ""
    if qualified.startswith("torch.nn.functional.") and expr.args:
        return _is_new_tensor(expr.args[0].value, semantic)  # `F.normalize(torch.randn(n, d))`
    if qualified in ("torch.autograd.Variable", "torch.autograd.variable.Variable") and expr.args:
        return _is_new_tensor(expr.args[0].value, semantic)  # `Variable(torch.zeros(1))`
    if qualified.startswith("torch.") and not qualified.startswith("torch.nn."):
        if qualified[6:] in NOT_TENSORS:
            return False  # `device if device is not None else torch.device("cpu")`
        return qualified[6:] in api.TENSOR_FACTORIES or "." not in qualified[6:]
    if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in (api.PLACE_KEEPING_METHODS):
        return _is_new_tensor(expr.func.value, semantic)
    return False
