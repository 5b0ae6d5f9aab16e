"""GPD113: a ``device`` parameter accepted, never used, while the function creates tensors."""

from __future__ import annotations

import re

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import FunctionEvent, Semantic
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.rule import Invalid, Rule
from gpudoc.lint.visit import walk

DEVICE_PARAM = re.compile(r"^(device|dev|[a-z_]*_device)$")
CREATORS = frozenset(name for name in api.TENSOR_FACTORIES if name not in api.LIKE_FACTORIES)
DYNAMIC = frozenset({"locals", "vars", "eval", "exec"})
MOVES = frozenset({"to", "cuda", "type_as", "new_tensor"})
PLAIN_DECORATORS = frozenset(
    {
        "staticmethod", "classmethod", "property", "torch.no_grad", "torch.inference_mode",
        "torch.enable_grad", "functools.wraps", "functools.cache", "functools.lru_cache",
        "torch.jit.script", "torch.compile",
    }
)  # fmt: skip


class UnusedDeviceParameter(Rule):
    """A function takes a `device` parameter, never uses it, and creates tensors or layers.

    ## What it does
    Finds functions with a parameter named `device` (or `dev`, `*_device`) that no line of the
    body mentions, while the body creates tensors (`torch.zeros(...)`, `torch.randn(...)`,
    `torch.tensor(...)`) or layers (`nn.Linear(...)`).

    ## Why is this bad?
    The caller passes the GPU and believes what it gets back lives there; the tensors are
    created on the CPU. The failure (`Expected all tensors to be on the same device`) comes
    later, in another function, where the helper no longer looks guilty: the classic
    `init_hidden(batch_size, device)` that returns CPU zeros.

    ## Example
    ```python
    def init_hidden(batch_size, device):
        return torch.zeros(1, batch_size, 256)
    ```

    ## Use instead
    ```python
    def init_hidden(batch_size, device):
        return torch.zeros(1, batch_size, 256, device=device)
    ```

    ## Known problems
    A function that hands `device` on through `**kwargs`, `locals()` or `vars()` is not
    reported, nor one registered by a decorator (its signature is imposed), nor one that only
    creates 0-dim constants (`torch.tensor(0.01)`) or tensors it moves later (`x.cuda(rank)`).
    Nor is one that builds a DataLoader: its batches are on the host by nature, and its callers
    move them. Nor is a module's own `__init__` that only builds layers: they move with the
    module wherever its callers put it (unless it takes `device` and `dtype` as torch.nn's
    layers do, which promises `Layer(..., device="cuda")` builds them there). Nor is a test
    (`test_*` in a file importing pytest or unittest): its parameters are fixtures that no caller
    passes. A function whose tensors are meant for the CPU (a collate function that ignores the
    device it is given) is reported: say so with `del device`.

    ## Fix safety
    No fix: which of the created tensors belong on the device is the author's call.
    """

    CODE = "GPD113"
    NAME = "unused-device-parameter"
    SUMMARY = "a device parameter is never used while the function creates tensors on the CPU"
    PLACEMENT = False  # the parameter is the device notion; callers may live in other files
    EVENTS = ("function",)
    VALID = (
        """\
import torch
def init_hidden(batch_size, device):
    return torch.zeros(1, batch_size, 256, device=device)
def make_mask(n, device=None):
    mask = torch.ones(n, n)
    return mask if device is None else mask.to(device)
""",
        """\
import torch
def summarize(model, device):
    return sum(p.numel() for p in model.parameters())
def build(n, device, **kwargs):
    return torch.nn.Linear(n, n, **kwargs)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
def init_hidden(batch_size, device):
    return torch.zeros(1, batch_size, 256)
""",
            line=2,
            col=29,
        ),
        Invalid(
            """\
import torch.nn as nn
class Net(nn.Module):
    def make_head(self, n, dev="cuda"):
        return nn.Linear(n, 10)
""",
            line=3,
            col=28,
        ),
    )

    def on_function(self, event: FunctionEvent, semantic: Semantic) -> None:
        node = event.node
        params = node.params
        candidates = [
            param
            for param in (*params.posonly_params, *params.params, *params.kwonly_params)
            if DEVICE_PARAM.match(param.name.value)
        ]
        if not candidates or isinstance(params.star_kwarg, cst.Param):
            return
        if node.name.value.startswith("test") and _imports_a_test_framework(semantic):
            return  # a test's parameters are fixtures: no caller passes it a device
        if any(not _plain_decorator(d.decorator, semantic) for d in node.decorators):
            return  # registered by a decorator (`@register("aten::zeros")`): an imposed signature
        scan = _Body(semantic, {param.name.value for param in candidates})
        # a module's own layers move with it: its callers' `.to(device)` places them, unless it
        # mirrors torch.nn's factory arguments (`device=None, dtype=None`), which promise that
        # `Layer(..., device="cuda")` is built there
        names = {param.name.value for param in (*params.params, *params.kwonly_params)}
        own_layers = node.name.value == "__init__" and semantic.module_class is not None
        scan.layers = not own_layers or "dtype" in names
        walk(node.body, scan)
        created = scan.left_on_host()
        if scan.dynamic or scan.makes_loader or created is None:
            return  # a loader's batches are on the host by nature: its callers move them
        for param in candidates:
            name = param.name.value
            if name not in scan.unused:
                continue
            message = (
                f"`{name}` is accepted but never used, while `{node.name.value}` creates "
                f"`{created}` on the CPU: callers that pass a GPU get CPU tensors back; "
                f"pass `device={name}` where the tensors are created"
            )
            self.report(param.name, message)


class _Body(cst.CSTVisitor):
    """Which device parameters a function body never mentions, and the first tensor or layer it
    creates; it stops descending once every parameter is seen (the common case, kept cheap)."""

    def __init__(self, semantic: Semantic, parameters: set[str]) -> None:
        self.semantic = semantic
        self.unused = set(parameters)
        self.created: dict[str, str] = {}
        """What a name bound to a new host tensor (``x = torch.randn(...)``) was made by; ``""``
        holds the first creation not bound to a plain name."""
        self.dynamic = False
        self.makes_loader = False
        """It builds a DataLoader (``load_graph_data(config, device)`` returning loaders)."""
        self.moved: set[cst.Call] = set()
        """Calls whose result is moved (``torch.zeros(3).cuda()``): not left on the CPU."""
        self.bound: dict[cst.Call, str] = {}
        self.moved_names: set[str] = set()
        """Names moved later (``x.cuda(rank)``): what they hold does not stay on the CPU."""
        self.layers = True
        """Whether a layer made on the host counts (not in a module's own ``__init__``)."""

    def left_on_host(self) -> str | None:
        """The first creation whose tensor is never moved in the body, if any."""
        return next(
            (made for name, made in self.created.items() if name not in self.moved_names), None
        )

    def visit_Assign(self, node: cst.Assign) -> None:
        target = node.targets[0].target if len(node.targets) == 1 else None
        if isinstance(target, cst.Name) and isinstance(node.value, cst.Call):
            self.bound[node.value] = target.value

    def on_visit(self, node: cst.CSTNode) -> bool:
        if not self.unused or self.dynamic:
            return False  # nothing left to report
        return super().on_visit(node)

    def visit_Name(self, node: cst.Name) -> None:
        self.unused.discard(node.value)
        if node.value in DYNAMIC:
            self.dynamic = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        self.makes_loader |= (dotted(func) or "").endswith("DataLoader")
        moved = isinstance(func, cst.Attribute) and func.attr.value in MOVES
        if moved and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
            self.moved.add(func.value)
        if moved and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            self.moved_names.add(func.value.value)
        if node not in self.moved and _creates_on_host(node, self):
            qualified = self.semantic.qualify(func) or ""
            name = self.bound.get(node, "")
            self.created.setdefault(name, f"{qualified.replace('torch.nn.', 'nn.')}(...)")


def _imports_a_test_framework(semantic: Semantic) -> bool:
    return any(semantic.qualify(cst.Name(name)) == name for name in ("pytest", "unittest"))


def _plain_decorator(node: cst.BaseExpression, semantic: Semantic) -> bool:
    """Decorators that leave the signature the author's own (``@torch.no_grad()``)."""
    target = node.func if isinstance(node, cst.Call) else node
    name = semantic.qualify(target) or dotted(target) or ""
    return name in PLAIN_DECORATORS


def _creates_on_host(node: cst.Call, body: _Body) -> bool:
    """A torch factory or a torch.nn layer called without ``device=``."""
    qualified = body.semantic.qualify(node.func) or ""
    if not qualified.startswith("torch."):
        return False
    layer = (
        body.layers
        and qualified.startswith("torch.nn.")
        and qualified.rsplit(".", 1)[-1] in api.WEIGHTED_LAYERS
    )
    if qualified[6:] not in CREATORS and not layer:
        return False
    first = node.args[0].value if node.args else None
    if qualified == "torch.tensor" and isinstance(first, cst.Integer | cst.Float | cst.Name):
        return False  # a 0-dim constant (`torch.tensor(0.01)`) combines with tensors anywhere
    return not any(arg.keyword is not None and arg.keyword.value == "device" for arg in node.args)
