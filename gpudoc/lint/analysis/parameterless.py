"""nn.Module subclasses that hold no parameters, buffers or submodules: a loss written as a
module (``class DiceLoss(nn.Module)`` with only a ``forward``) runs wherever its inputs are, so
it never needs moving. Read from the class's text alone, and only when that text is certain:
any attribute the class stores that could be a module or a tensor makes it count as weighted,
unless it is a constructor parameter (``self.scale = scale``, ``self.net = net``): then what
an instance's call passes decides (instance_weights.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.names import (
    ImportTable,
    bound_names_of,
    calls_in,
    dotted,
    iter_statements,
)
from gpudoc.lint.visit import descendants, walk

PLAIN_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
REGISTERS = frozenset({"register_buffer", "register_parameter", "add_module", "register_module"})
SETATTR = frozenset({"setattr", "self.__setattr__", "object.__setattr__"})


def holds_nothing(
    node: cst.ClassDef, imports: ImportTable, empty_classes: frozenset[str] = frozenset()
) -> bool:
    """``node`` derives from ``nn.Module`` alone, defines ``forward``, and none of its methods
    stores anything but literals (``self.reduction = "mean"``, or a parameter whose default is
    one)."""
    return weight_sources(node, imports, empty_classes) == frozenset()


def weight_sources(
    node: cst.ClassDef, imports: ImportTable, empty_classes: frozenset[str] = frozenset()
) -> frozenset[str] | None:
    """The ``__init__`` parameters whose arguments are the only weights ``node`` can hold
    (``self.scale = scale``, ``self.net = net``, ``self.n = centers.size(0)``): what the call
    passes decides. An empty set: it holds nothing. None: it may make weights of its own."""
    if not node.bases or any(
        not _plain_base(imports.qualify(base.value) or "")
        and dotted(base.value) not in empty_classes  # `class ADPM2Sampler(Sampler)`, empty
        for base in node.bases
    ):
        return None
    return _body_sources(node, empty_classes)


def _plain_base(qualified: str) -> bool:
    """``nn.Module``, or a torch.nn module without weights (``class MaskedCELoss(
    nn.CrossEntropyLoss)``, whose ``forward`` calls ``super().forward``)."""
    prefix, _, last = qualified.rpartition(".")
    weightless = prefix == "torch.nn" and bool(WEIGHTLESS.fullmatch(last))
    # `class Embedding(nn.Module, ABC)`: the abstract-class marker holds nothing
    return qualified in (*PLAIN_BASES, "abc.ABC") or (weightless and last not in WITH_WEIGHTS)


@lru_cache(maxsize=256)
def _body_sources(node: cst.ClassDef, empty_classes: frozenset[str]) -> frozenset[str] | None:
    """Its own ``forward`` (or ``__call__``; any method of a class that keeps what it is
    given, ``Wrapper(net).generate(x)``) and nothing else stored: a stub (``class Net(
    nn.Module): pass``) stands for a real model and counts as weighted."""
    sources: set[str] = set()
    # `self.mask = self.mask_correlated_samples(n)`: a method of its own that builds a tensor
    tensor_methods = frozenset(
        f"self.{statement.name.value}"
        for statement in node.body.body
        if isinstance(statement, cst.FunctionDef) and returns_tensor(statement)
    )
    for statement in node.body.body:
        if isinstance(statement, cst.FunctionDef):
            stored = _method_sources(statement, empty_classes, tensor_methods)
            if stored is None:
                return None
            sources |= stored
        elif not _harmless_class_statement(statement):
            return None
    methods = [s.name.value for s in node.body.body if isinstance(s, cst.FunctionDef)]
    called = any(name in ("forward", "__call__") for name in methods)
    if not called and not sources and _abstract(node):
        return frozenset()  # an abstract base: its subclasses' bodies say what they hold
    if not called and not (sources and any(name != "__init__" for name in methods)):
        return None
    return frozenset(sources)


def _abstract(node: cst.ClassDef) -> bool:
    """A method of the class is an ``@abstractmethod``: a base for subclasses, never a
    stand-in for a real model."""
    return any(
        isinstance(statement, cst.FunctionDef)
        and any(
            (dotted(d.decorator) or "").rsplit(".", 1)[-1] == "abstractmethod"
            for d in statement.decorators
        )
        for statement in node.body.body
    )


def _harmless_class_statement(statement: cst.BaseStatement | cst.BaseSmallStatement) -> bool:
    """A docstring, ``pass`` or a constant at class level (a literal, an annotation, a list of
    the classes it works with)."""
    if isinstance(statement, cst.BaseSmallStatement):
        smalls: Sequence[cst.BaseSmallStatement] = [statement]  # `class L(nn.Module): pass`
    elif isinstance(statement, cst.SimpleStatementLine):
        smalls = statement.body
    else:
        return False
    for small in smalls:
        if isinstance(small, cst.Pass):
            continue
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.BaseString):
            continue
        if isinstance(small, cst.Assign) and _class_constant(small.value):
            continue
        if isinstance(small, cst.AnnAssign) and (
            small.value is None or _class_constant(small.value)
        ):
            continue  # `diffusion_types: List[Type[Diffusion]] = []`
        return False
    return True


def _class_constant(node: cst.BaseExpression) -> bool:
    """A literal, an empty container, or a list of names (``diffusion_types = [KDiffusion,
    VKDiffusion]``, the classes it works with): class data, never a parameter."""
    if _literal(node):
        return True
    if isinstance(node, cst.List | cst.Tuple | cst.Dict | cst.Set) and not node.elements:
        return True
    if isinstance(node, cst.List | cst.Tuple):
        return all(isinstance(e.value, cst.Name | cst.Attribute) for e in node.elements)
    return False


def _method_sources(
    method: cst.FunctionDef, empty_classes: frozenset[str], tensor_methods: frozenset[str]
) -> set[str] | None:
    """The parameters of ``__init__`` it stores (None: it stores what may be weights)."""
    params = [*method.params.posonly_params, *method.params.params, *method.params.kwonly_params]
    literal_params = {
        param.name.value
        for param in params
        if param.default is not None and (_literal(param.default) or _tensor_type(param.default))
    }
    given = set()
    if method.name.value == "__init__":
        given = {param.name.value for param in params[1:]} - literal_params - _rebound(method)
    helpers = _tensor_helpers(method) | tensor_methods
    visitor = _Stores(literal_params, given, empty_classes, helpers, _tensor_locals(method))
    walk(method.body, visitor)
    return None if visitor.stores else visitor.sources


def _rebound(method: cst.FunctionDef) -> set[str]:
    """Names the body assigns (``net = nn.Sequential(net, head)``): a parameter rebound is no
    longer what the caller gave."""
    names: set[str] = set()
    for statement in iter_statements(method.body.body):
        if isinstance(statement, cst.Assign):
            for target in statement.targets:
                names |= bound_names_of(target.target)
        elif isinstance(statement, cst.AnnAssign | cst.AugAssign | cst.For):
            names |= bound_names_of(statement.target)
    return names


def _literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.BaseString | cst.Integer | cst.Float):
        return True
    if isinstance(node, cst.UnaryOperation):
        return _literal(node.expression)
    if isinstance(node, cst.List | cst.Tuple):  # `self.variance = [0.1, 0.2]`
        return bool(node.elements) and all(_literal(e.value) for e in node.elements)
    return isinstance(node, cst.Name) and node.value in ("True", "False", "None")


class _Stores(cst.CSTVisitor):
    """Finds what could give the module a parameter, buffer or submodule."""

    def __init__(
        self,
        literal_params: set[str],
        given: set[str],
        empty_classes: frozenset[str],
        tensor_helpers: frozenset[str] = frozenset(),
        tensor_locals: frozenset[str] = frozenset(),
    ) -> None:
        self.literal_params = literal_params
        self.tensor_helpers = tensor_helpers
        """Functions defined in the method that return tensors (``second_derivative(x)``)."""
        self.tensor_locals = tensor_locals
        """Locals of the method bound only to tensors it made (``kernel = torch.ones(n)``)."""
        self.given = given
        """``__init__``'s other parameters: storing one makes the argument decide."""
        self.empty_classes = empty_classes
        """The file's own module classes already known to hold nothing (``FocalLoss``)."""
        self.stores = False
        self.sources: set[str] = set()

    def _stored(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if not _on_self(target):
            return
        while isinstance(value, cst.UnaryOperation):  # `-torch.log(t).cuda()`: what it negates
            value = value.expression
        harmless = value is not None and (
            _literal(value)
            or _plain_tensor(value)
            or _computed(value)
            or _tensor_result(value)
            or (isinstance(value, cst.Call) and dotted(value.func) in self.tensor_helpers)
            or (dotted(_chain_root(value)) in self.tensor_locals and not _builds_a_class(value))
            or _plain_call(value)
            or (isinstance(value, cst.Name) and value.value in self.literal_params)
            or weightless_layer(value)
            or (isinstance(value, cst.Call) and dotted(value.func) in self.empty_classes)
            or _bound_method(value)
            or _numbers_comprehension(value)
        )
        given = _given_root(value, self.given) if value is not None and not harmless else None
        if given is None and not harmless and value is not None:
            given = _parameter_of_given(value, self.given)
        if given is not None:
            self.sources.add(given)  # `self.net = net`, `self.max_len = net.max_len`
        else:
            self.stores |= not harmless

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._stored(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._stored(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._stored(node.target, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        registers = isinstance(func, cst.Attribute) and func.attr.value in REGISTERS
        self.stores |= registers or dotted(func) in SETATTR


def _numbers_comprehension(value: cst.BaseExpression) -> bool:
    """``[2.0 ** i for i in range(n)]``: arithmetic with a number written out, no call or
    attribute in it, so numbers, never modules."""
    if not isinstance(value, cst.ListComp | cst.GeneratorExp):
        return False
    elt = value.elt
    if not isinstance(elt, cst.BinaryOperation | cst.UnaryOperation | cst.Integer | cst.Float):
        return False
    kinds = {type(node) for node in descendants(elt)}
    return bool(kinds & {cst.Integer, cst.Float}) and not kinds & {cst.Call, cst.Attribute}


def _bound_method(value: cst.BaseExpression) -> bool:
    """``OneHot(n).forward``: a method of a fresh object, kept as a function; assigning it
    registers nothing."""
    return isinstance(value, cst.Attribute) and isinstance(value.value, cst.Call)


def _parameter_of_given(value: cst.BaseExpression, given: set[str]) -> str | None:
    """``nn.Parameter(weight.detach().clone())``: a parameter made of the tensor the caller
    gives, on that tensor's device (consistency_models' ``SoftmaxModel(backbone.weight)``)."""
    if not isinstance(value, cst.Call) or not value.args:
        return None
    if (dotted(value.func) or "").rsplit(".", 1)[-1] != "Parameter":
        return None
    copied = value.args[0].value
    while isinstance(copied, cst.Call) and isinstance(copied.func, cst.Attribute):
        if copied.func.attr.value not in SAME_PLACE_COPIES:
            return None  # `weight.cpu().clone()`: a copy somewhere else
        copied = copied.func.value
    while isinstance(copied, cst.Attribute) and copied.attr.value == "data":
        copied = copied.value
    return copied.value if isinstance(copied, cst.Name) and copied.value in given else None


SAME_PLACE_COPIES = frozenset({"detach", "clone", "float", "double", "half", "contiguous"})
"""Methods whose result stays on their tensor's device."""


def _given_root(value: cst.BaseExpression, given: set[str]) -> str | None:
    """The parameter ``value`` is, or an attribute of (``net``, ``net.max_seq_len``): the
    same object as the argument, or a part of it."""
    while isinstance(value, cst.Attribute):
        value = value.value
    return value.value if isinstance(value, cst.Name) and value.value in given else None


def _computed(value: cst.BaseExpression) -> bool:
    """Arithmetic (``centers / centers.norm()``) or a size (``centers.size(0)``): a new plain
    tensor or a number, never a parameter or a submodule (a class called inside it may build
    one: ``[Block()] * n``)."""
    if isinstance(value, cst.BinaryOperation):
        return not _builds_a_class(value)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        if value.func.attr.value in api.SCALAR_METHODS:
            return True
        # `(target - pred)[valid].abs().mean()`, `F.l1_loss(pred, target)`: a tensor computed
        # from tensors (a loss that keeps its result for logging), no class built on the way
        root = _chain_root(value)
        computed = isinstance(root, cst.BinaryOperation | cst.Subscript) or (
            isinstance(root, cst.Name) and root.value in ("torch", "F")
        )
        return computed and not _builds_a_class(value)
    return False


TENSOR_ONLY_METHODS = frozenset(
    [
        *("mean", "sum", "prod", "std", "var", "norm", "abs", "pow", "sqrt", "exp", "log"),
        *("clamp", "clamp_min", "clamp_max", "sigmoid", "tanh", "softmax", "log_softmax"),
        *("mul", "add", "sub", "div", "neg", "square", "max", "min", "argmax", "argmin"),
        *("view", "view_as", "reshape", "squeeze", "unsqueeze", "flatten", "detach"),
        *("permute", "transpose", "contiguous", "clone", "expand", "repeat", "gather"),
    ]
)
"""Tensor methods that an ``nn.Module`` lacks (unlike ``float``, ``to`` or ``cuda``, which a
module has too): what they return is a tensor, never a parameter or a submodule."""


def _tensor_result(value: cst.BaseExpression) -> bool:
    """``diff.mean()``, ``(a - b).abs().sum()``: the last call is a tensor-only method, so a
    loss that keeps its result (``self.loss = diff.mean()``) stores a plain tensor."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    return value.func.attr.value in TENSOR_ONLY_METHODS and not _builds_a_class(value)


def _tensor_helpers(method: cst.FunctionDef) -> frozenset[str]:
    """Functions defined in ``method`` that return tensors (``def second_derivative(x): ...;
    return der.mean()``)."""
    return frozenset(
        statement.name.value
        for statement in method.body.body
        if isinstance(statement, cst.FunctionDef) and returns_tensor(statement)
    )


def _tensor_locals(method: cst.FunctionDef) -> frozenset[str]:
    """Names ``method`` binds only to tensors it makes (``kernel = torch.ones(3, 1, k, k) /
    k**2``) or to numbers written out (``n_iter = 0``, ``n_iter += 1``): what is computed from
    them (``kernel.to(DEVICE)``) is a plain tensor or a number."""
    found = _Returns()
    walk(method.body, found)
    return found.tensor_names(numbers=True)


def returns_tensor(function: cst.FunctionDef) -> bool:
    """Every ``return`` gives a tensor computed here: a factory, arithmetic, a tensor-only
    method, or a local bound only to those (``mask = torch.ones(n, n); mask.fill_diagonal_(0);
    return mask``)."""
    returns = _Returns()
    walk(function.body, returns)
    if not returns.values:
        return False
    tensors = returns.tensor_names()
    for value in returns.values:
        if isinstance(value, cst.Name) and value.value != "None":
            if value.value not in tensors:
                return False
        elif not _tensor_value(value):
            return False
    return True


def _tensor_value(value: cst.BaseExpression) -> bool:
    if _in_place_on_name(value):
        return True  # `mask.fill_diagonal_(0)`: the same tensor, changed in place
    return _plain_tensor(value) or _computed(value) or _tensor_result(value)


def _in_place_on_name(value: cst.BaseExpression) -> bool:
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return False
    return value.func.attr.value.endswith("_") and isinstance(value.func.value, cst.Name)


class _Returns(cst.CSTVisitor):
    def __init__(self) -> None:
        self.values: list[cst.BaseExpression] = []
        self.bindings: dict[str, list[cst.BaseExpression]] = {}
        """Each plain name the function assigns -> the values it is given."""

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self.bindings.setdefault(target.target.value, []).append(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested function's returns are its own

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.values.append(node.value)

    def tensor_names(self, numbers: bool = False) -> frozenset[str]:
        """The names bound only to tensors the function makes (or to numbers too)."""
        return frozenset(
            name
            for name, values in self.bindings.items()
            if all(_tensor_value(value) or (numbers and _literal(value)) for value in values)
        )


def _builds_a_class(value: cst.BaseExpression) -> bool:
    """A call in ``value`` of a capitalised name (``Block()``): it may build a submodule."""
    names = [(dotted(call.func) or "x").rsplit(".", 1)[-1] for call in calls_in(value)]
    return any(name[:1].isupper() for name in names)


def _chain_root(value: cst.BaseExpression) -> cst.BaseExpression:
    """``x - y`` of ``(x - y)[m].abs().mean()``: what a chain of calls, attributes and
    subscripts starts from (a subscript of a plain name stays: ``self.bank[i]``)."""
    while True:
        if isinstance(value, cst.Call):
            value = value.func
        elif isinstance(value, cst.Attribute | cst.Subscript) and not _named_subscript(value):
            value = value.value
        else:
            return value


def _plain_call(value: cst.BaseExpression) -> bool:
    """``max(self.lamb_min, ...)``, ``math.cos(m)``, ``np.log(k)``: a builtin or a NumPy or
    math function, which returns a number or an array, never a parameter or a submodule."""
    # `np.eye(n).reshape(...)`: a NumPy array's methods return arrays
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        if dotted(value.func) is not None:
            break
        value = value.func.value
    if not isinstance(value, cst.Call):
        return False
    name = dotted(value.func) or ""
    return name in PLAIN_BUILTINS or name.split(".", 1)[0] in ("math", "np", "numpy")


PLAIN_BUILTINS = frozenset(
    ["max", "min", "abs", "round", "int", "float", "bool", "len", "pow", "str", "sum"]
)


def _named_subscript(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name)


def _tensor_type(node: cst.BaseExpression) -> bool:
    """``torch.FloatTensor``, ``torch.cuda.FloatTensor``: a tensor type, which ``.to()``
    leaves alone (``GANLoss(tensor=torch.FloatTensor)``)."""
    name = dotted(node) or ""
    return name.startswith("torch.") and name.rsplit(".", 1)[-1] in api.LEGACY_TENSOR_TYPES


def _plain_tensor(value: cst.BaseExpression) -> bool:
    """``None``, ``Variable(t)``, ``torch.zeros(n)``: an attribute that is no parameter, buffer
    or submodule, so ``.to()`` never moves it (GPD105 is about such tensors)."""
    if isinstance(value, cst.Name):
        return value.value == "None"
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        if dotted(value.func) is not None:  # `torch.zeros(n)`, not `t.fill_(1)`
            break
        value = value.func.value
    if not isinstance(value, cst.Call):
        return False
    name = dotted(value.func) or ""
    last = name.rsplit(".", 1)[-1]
    return name in ("Variable", "torch.autograd.Variable") or (
        name.startswith("torch.") and last in api.TENSOR_FACTORIES
    )


def _on_self(target: cst.BaseExpression) -> bool:
    """``self.x`` (also ``self.x[i]``, and inside tuple targets)."""
    if isinstance(target, cst.Tuple | cst.List):
        return any(_on_self(element.value) for element in target.elements)
    if isinstance(target, cst.Subscript):
        return _on_self(target.value)
    if isinstance(target, cst.Attribute):
        root: cst.BaseExpression = target
        while isinstance(root, cst.Attribute):
            root = root.value
        return isinstance(root, cst.Name) and root.value == "self"
    return False


def weightless_layer(value: cst.BaseExpression) -> bool:
    """``nn.CrossEntropyLoss(reduction="none")``, ``nn.ReLU()``: a torch.nn module with no
    parameters or buffers (not a weighted layer nor a container, and no ``weight=``)."""
    if not isinstance(value, cst.Call):
        return False
    name = dotted(value.func) or ""
    prefix, _, last = name.rpartition(".")
    if prefix not in ("nn", "torch.nn") or not last[:1].isupper():
        return False
    if not WEIGHTLESS.fullmatch(last) or last in WITH_WEIGHTS:
        return False
    return not any(
        arg.keyword is not None and arg.keyword.value in ("weight", "pos_weight")
        for arg in value.args
    )


WEIGHTLESS = re.compile(
    r".*Loss$|.*(Pool|Pad)\d?d$|Dropout\w*|Identity|Flatten|Unflatten|Upsample\w*|Pixel\w*|"
    r"ReLU6?|LeakyReLU|RReLU|ELU|SELU|CELU|GELU|SiLU|Mish|Sigmoid|Tanh|Hardtanh|Hardswish|"
    r"Hardsigmoid|Softplus|Softsign|Tanhshrink|Softshrink|Hardshrink|Threshold|GLU|LogSigmoid|"
    r"Softmax2?d?|Softmin|LogSoftmax|ChannelShuffle|Fold|Unfold|CosineSimilarity|PairwiseDistance"
)
"""torch.nn modules with no parameters or buffers (PReLU, norms and attention have some)."""
WITH_WEIGHTS = frozenset({"AdaptiveLogSoftmaxWithLoss", "LinearCrossEntropyLoss"})
