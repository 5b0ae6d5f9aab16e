"""GPD109: a layer with parameters constructed inside ``forward()``."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import BindingEvent, CallEvent, ClassEvent, Semantic
from gpudoc.lint.analysis.module_like import WEIGHTLESS_LAYERS, init_builds_weights
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.rule import Invalid, Rule

PARAMLESS_UNLESS_AFFINE = frozenset({"InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"})
CHAIN = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "type", "train"})


class ModuleCreatedInForward(Rule):
    """A layer with parameters (`nn.Linear`, `nn.BatchNorm2d`, ...) constructed inside `forward()`.

    ## What it does
    Finds `nn.Linear(...)`, `nn.Conv2d(...)`, `nn.BatchNorm2d(...)`, `nn.LayerNorm(...)` and the
    other torch.nn layers that own parameters or buffers, constructed in `forward()` (or in a
    helper that `forward()` calls) and either called at once (`nn.BatchNorm2d(c)(x)`) or bound
    to a local name. Also the file's own module classes whose `__init__` builds such layers
    (`MBConvBlock(args, params)(x)` in EfficientDet's `extract_features`), outside a decorated
    method (a cache such as `@singleton` keeps one instance).

    ## Why is this bad?
    The layer is created anew at every call, with fresh random weights on the CPU. Once the
    model is on a GPU the call fails with `Expected all tensors to be on the same device` (or
    `Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the
    same`); with `.to(x.device)` it runs, but its weights are not in `model.parameters()`: the
    optimizer never trains them, `state_dict()` never saves them, and every call draws new ones.

    ## Example
    ```python
    def forward(self, x):
        x = self.conv(x)
        return nn.BatchNorm2d(x.size(1))(x)
    ```

    ## Use instead
    ```python
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.bn = nn.BatchNorm2d(16)


    def forward(self, x):
        return self.bn(self.conv(x))
    ```

    ## Known problems
    Layers stored on `self` in `forward` under a test (lazy construction: `if self.fc is None:
    self.fc = nn.Linear(...)`) are registered submodules and are not reported (one stored
    outside any test is built anew at every call and is); neither are layers without
    parameters (`nn.ReLU()(x)`, `nn.Dropout(p)(x)`, `nn.InstanceNorm2d(c)(x)`, norms with
    `affine=False` / `elementwise_affine=False`) nor containers of existing modules
    (`nn.Sequential(self.a, self.b)(x)`).

    ## Fix safety
    No fix: the layer belongs in `__init__`, which changes the model's parameters.
    """

    CODE = "GPD109"
    NAME = "module-created-in-forward"
    SUMMARY = "a layer with parameters constructed in forward(): new CPU weights at every call"
    PLACEMENT = False  # untrained, unsaved weights are a bug on any device
    EVENTS = ("class", "call", "binding")
    VALID = (
        """\
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(16)
    def forward(self, x):
        x = nn.ReLU()(self.bn(x))
        return nn.Sequential(self.bn, nn.Dropout(0.1))(x)
""",
        """\
import torch.nn as nn
class Lazy(nn.Module):
    def forward(self, x):
        if self.head is None:
            self.head = nn.Linear(x.size(-1), 10).to(x.device)
        y = nn.LayerNorm(x.size(-1), elementwise_affine=False)(x)
        return self.head(nn.InstanceNorm1d(8)(y))
""",
    )
    INVALID = (
        Invalid(
            """\
import torch.nn as nn
class Net(nn.Module):
    def forward(self, x):
        return nn.BatchNorm2d(x.size(1))(x)
""",
            line=4,
            col=16,
        ),
        Invalid(
            """\
import torch
class Head(torch.nn.Module):
    def forward(self, x):
        fc = torch.nn.Linear(x.size(-1), 10).to(x.device)
        return fc(x)
""",
            line=4,
            col=14,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.constructed: dict[cst.Call, str] = {}
        """Layer constructors met in forward, not yet seen called or bound."""
        self.containers: set[cst.Call] = set()
        """Containers of new layers (``nn.Sequential(nn.Linear(...), nn.ReLU())``)."""
        self.methods: set[int] = set()
        """ids of the functions defined in a class body."""

    def on_class(self, event: ClassEvent, semantic: Semantic) -> None:
        body = event.node.body.body
        self.methods.update(id(s) for s in body if isinstance(s, cst.FunctionDef))

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        if semantic.context_function != "forward":
            return
        if semantic.context_module_class is None and _static(semantic.function_node):
            return  # `class RefConv(object)`'s static `forward`: a reference helper, no module
        function = semantic.function_node
        if function is not None and id(function) not in self.methods and _plain(function):
            return  # a notebook's `def forward(x):`, no method of a module: nothing it trains
        inner = _constructor_called(event.node)
        if inner is not None and inner in self.constructed:
            self.flag(inner, self.constructed.pop(inner), "called at once")
            return
        layer = _weighted_layer(event, semantic) or self._container_of_new_layers(event)
        if layer is not None:
            self.constructed[event.node] = layer

    def _container_of_new_layers(self, event: CallEvent) -> str | None:
        """``nn.Sequential(nn.Linear(...), nn.Tanh())``: a container of layers built here is
        built here too (one of existing modules, ``nn.Sequential(self.a, self.b)``, is not)."""
        if event.qualified not in CONTAINERS:
            return None
        inner = [
            node
            for arg in event.node.args
            for node in (
                [element.value for element in arg.value.elements]
                if isinstance(arg.value, cst.List | cst.Tuple)
                else [arg.value]
            )
            if isinstance(node, cst.Call) and node in self.constructed
        ]
        if not inner:
            return None
        layers = [self.constructed.pop(node) for node in inner]
        self.containers.add(event.node)
        return f"{event.qualified.replace('torch.nn.', 'nn.')}({layers[0]}, ...)"

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        origin = event.value.origin
        if not isinstance(origin, cst.Call) or origin not in self.constructed:
            return
        layer = self.constructed.pop(origin)
        if "." in event.name:  # self.head = nn.Linear(...): a registered submodule
            if event.name.startswith("self.") and _built_at_every_call(semantic):
                self.flag(origin, layer, f"stored as `{event.name}` anew at every call")
            return
        if origin in self.containers and not _built_at_every_call(semantic):
            # `mlp = nn.Sequential(...)` in a helper `forward` calls under a test, then
            # `setattr(self, name, mlp)`: CUT's lazily built heads
            return
        self.flag(origin, layer, f"bound to `{event.name}`")

    def flag(self, node: cst.Call, layer: str, how: str) -> None:
        message = (
            f"`{layer}` is constructed in `forward()` ({how}): every call creates new random "
            "weights on the CPU, which fail against GPU inputs and are never trained or saved; "
            "create it once in `__init__` as `self.<name>`"
        )
        self.report(node, message)


def _weighted_layer(event: CallEvent, semantic: Semantic) -> str | None:
    qualified = event.qualified
    func = event.node.func
    if qualified is None and isinstance(func, cst.Name):
        # the file's own module class that builds layers with weights (`MBConvBlock(args,
        # params)(x)`), in a method that caches nothing (no decorator: `@singleton` keeps one)
        # (not a local of that name: `for code, GBlock in zip(codes, self.GBlock)`)
        cls = semantic.module_class_named(func) if not semantic.lookup_local(func.value) else None
        outer = semantic.context_module_class
        own = cls is not None and (outer is None or cls.node is not outer.node)
        function = semantic.function_node
        plain = function is not None and not function.decorators
        if own and plain and cls is not None and init_builds_weights(cls.node, semantic.qualify):
            return func.value
        return None
    if qualified is None or not qualified.startswith("torch.nn."):
        return None
    layer = qualified.rsplit(".", 1)[-1]
    if layer not in api.WEIGHTED_LAYERS or layer in WEIGHTLESS_LAYERS:
        return None
    affine = {
        arg.keyword.value: arg.value
        for arg in event.node.args
        if arg.keyword is not None and arg.keyword.value in ("affine", "elementwise_affine")
    }
    if any(_is_false(value) for value in affine.values()):
        return None
    if layer in PARAMLESS_UNLESS_AFFINE and not any(_is_true(v) for v in affine.values()):
        return None
    return f"nn.{layer}"


CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList"})


def _built_at_every_call(semantic: Semantic) -> bool:
    """In ``forward``'s own body, outside any test: ``self.head = nn.Linear(...)`` there is not
    a lazy construction (``if self.head is None:``) but a new layer at every call, which
    replaces the one the optimizer holds."""
    function = semantic.function_node
    in_forward = function is not None and function.name.value == "forward"
    return in_forward and not semantic.in_branch


def _constructor_called(node: cst.Call) -> cst.Call | None:
    """``Layer(...)(x)`` or ``Layer(...).to(d)(x)``: the constructor call being called."""
    func = node.func
    while isinstance(func, cst.Call):
        inner = func.func
        if isinstance(inner, cst.Attribute) and inner.attr.value in CHAIN:
            func = inner.value
            continue
        return func
    return None


def _is_false(node: cst.BaseExpression) -> bool:
    return dotted(node) == "False"


def _is_true(node: cst.BaseExpression) -> bool:
    return dotted(node) == "True"


def _plain(function: cst.FunctionDef) -> bool:
    """``def forward(x):`` outside any class, whose first parameter is no ``self`` (d2l's
    ``@add_to_class`` methods, written at the top level, take ``self``)."""
    if function.name.value != "forward":
        return False
    params = function.params.params
    return not params or params[0].name.value != "self"


def _static(function: cst.FunctionDef | None) -> bool:
    """A ``@staticmethod``: no module's ``forward``, which takes ``self``."""
    return function is not None and any(
        dotted(decorator.decorator) == "staticmethod" for decorator in function.decorators
    )
