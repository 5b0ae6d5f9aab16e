"""GPD206: ``device="cuda"`` as a parameter default in code that otherwise supports the CPU."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import (
    BindingEvent,
    CallEvent,
    FunctionEvent,
    Semantic,
)
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import calls_in, dotted, keyword
from gpudoc.lint.analysis.values import Place
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report
from gpudoc.lint.rules._helpers import OffersCpu
from gpudoc.lint.visit import walk

DEVICE_PARAM = re.compile(r"^(device|dev|[a-z_]*_device|map_location)$")
"""Parameters that take a device to allocate on (not ``device_type="cuda"``, a lookup key)."""


class CudaDefaultParameter(OffersCpu):
    """A `device="cuda"` default in a function signature of a file that falls back to the CPU.

    ## What it does
    Finds parameters whose default is `"cuda"`, `"cuda:0"` or `torch.device("cuda")`, in
    device-agnostic code: a file that falls back to the CPU elsewhere (`device = "cuda" if
    torch.cuda.is_available() else "cpu"`, `if args.device == "cpu":`), follows its inputs'
    device (`torch.zeros(n, device=x.device)`), or calls the function with `"cpu"` somewhere;
    when the function does not check availability itself and a call in the file leaves the
    parameter out. Also a GPU switch on by default (`def load_data(path, cuda=True):` with
    `if cuda: x = x.cuda()`) that a call leaves out in a script with a switch of its own
    (`args.cuda = not args.no_cuda and torch.cuda.is_available()`), also when the function
    lives in another file of the project.

    ## Why is this bad?
    The script picks the CPU on a machine without a GPU, but every call that relies on the
    default still asks for CUDA and fails with `AssertionError: Torch not compiled with CUDA
    enabled` or `RuntimeError: No CUDA GPUs are available`, typically in a helper the CPU path
    was never tested through.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


    def sample(model, n, device="cuda"):
        return model(torch.randn(n, 128, device=device))
    ```

    ## Use instead
    ```python
    def sample(model, n, device=None):
        device = device or next(model.parameters()).device
        return model(torch.randn(n, 128, device=device))
    ```

    ## Known problems
    Files that never choose the CPU are not reported (they need a GPU anyway: GPD203; an
    `if torch.cuda.is_available():` alone is not a CPU fallback), and neither are files written
    for GPUs only (NCCL). Following a tensor's device counts as serving any device only where
    the tensor is not one the function made on its own device, and not in a file that asks
    for CUDA by name elsewhere (`torch.randn(n, device="cuda")`, BigGAN's utilities). A
    default is reported only when a call in the same file relies on it: callers in other
    files, calls through `*args` / `**kwargs`, and method calls on anything but `self` are not
    followed. Only parameters named like a device
    (`device`, `dev`, `*_device`, `map_location`) are checked: `device_type="cuda"` is usually a
    key, not an allocation.

    ## Fix safety
    The fix (unsafe: on a host without a usable GPU the default becomes the CPU instead of an
    error) writes `"cuda" if torch.cuda.is_available() else "cpu"` in place of `"cuda"`, where
    `torch` is imported under that name.
    """

    CODE = "GPD206"
    NAME = "cuda-default-parameter"
    SUMMARY = 'a device="cuda" default in a file that otherwise falls back to the CPU'
    PLACEMENT = False
    EVENTS = ("function", "call", "binding", "compare")
    VALID = (
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def sample(model, n, device=None):
    return model(torch.randn(n, 8, device=device))
""",
        """\
import torch
def sample(model, n, device="cuda"):
    return model(torch.randn(n, 8, device=device))
images = sample(model, 16)
""",
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def sample(model, n, device="cuda"):
    return model(torch.randn(n, 8, device=device))
images = sample(model, 16, device)
more = sample(model, n=16, device=device)
""",
        """\
import torch
def tuned(n, device="cuda"):
    return torch.randn(n, device=device)
def device_name():
    if torch.cuda.is_available():
        return torch.cuda.get_device_name()
    return ""
best = tuned(16)
""",
        """\
import torch
use_cuda = torch.cuda.is_available()
def sample(model, n, device="cuda"):
    if not torch.cuda.is_available():
        device = "cpu"
    return model(torch.randn(n, 8, device=device))
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def sample(model, n, device="cuda"):
    return model(torch.randn(n, 8, device=device))
images = sample(model, 16)
""",
            line=3,
            col=29,
            expected_replacement="""\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def sample(model, n, device="cuda" if torch.cuda.is_available() else "cpu"):
    return model(torch.randn(n, 8, device=device))
images = sample(model, 16)
""",
        ),
        Invalid(
            """\
import torch
class Trainer:
    def __init__(self, net, device=torch.device("cuda:0")):
        self.net = net.to(device)
use_cuda = torch.cuda.is_available() and not args.cpu
eval_device = "cuda" if use_cuda else "cpu"
trainer = Trainer(torch.nn.Linear(2, 2))
""",
            line=3,
            col=36,
            expected_replacement="""\
import torch
class Trainer:
    def __init__(self, net, device=torch.device("cuda:0" if torch.cuda.is_available() else "cpu")):
        self.net = net.to(device)
use_cuda = torch.cuda.is_available() and not args.cpu
eval_device = "cuda" if use_cuda else "cpu"
trainer = Trainer(torch.nn.Linear(2, 2))
""",
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.defaults: list[Default] = []
        self.follows = False
        """A torch call follows a tensor of unknown place (``device=x.device``): code written
        for any device, unless it hard-codes CUDA elsewhere."""
        self.hard_coded = False
        self.switched = False
        """A name is bound to a test of CUDA's availability: the script's own GPU switch."""
        """A torch call asks for CUDA with a literal, unguarded (``device="cuda"``)."""
        """The file falls back to the CPU (``"cuda" if ... else "cpu"``, ``device == "cpu"``)."""
        self.calls: dict[tuple[str, bool], list[tuple[cst.Call, bool]]] = {}
        """Calls of local callables by (name, called as an attribute): ``("sample", False)``,
        ``("Trainer", False)``, ``("run", True)`` for ``runner.run(...)``; with whether a
        device test guards them."""

    def on_function(self, event: FunctionEvent, semantic: Semantic) -> None:
        params = event.node.params
        positional = [*params.posonly_params, *params.params]
        found: list[tuple[cst.Param, cst.SimpleString | None, int | None]] = []
        for position, param in enumerate((*positional, *params.kwonly_params)):
            if param.default is None:
                continue
            index = position if position < len(positional) else None
            if DEVICE_PARAM.match(param.name.value):
                text = _cuda_string(param.default, semantic)
                if text is not None:
                    found.append((param, text, index))
            elif _gpu_switch_on(param, event.node):
                found.append((param, None, index))  # `cuda=True`, tested by `if cuda:`
        if not found or _checks_availability(event.node):
            return
        has_torch = semantic.qualify(cst.Name("torch")) == "torch"
        bound = bool(positional) and positional[0].name.value in ("self", "cls")
        for param, text, index in found:
            if index is not None and bound:
                index -= 1
            default = param.default
            assert default is not None
            self.defaults.append(
                Default(event.node, default, text, param.name.value, index, has_torch)
            )

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        super().on_binding(event, semantic)
        if not self.switched and event.assigned is not None:
            # `args.cuda = not args.no_cuda and torch.cuda.is_available()`
            self.switched = any(
                (dotted(call.func) or "").endswith("cuda.is_available")
                for call in calls_in(event.assigned)
            )

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        if event.qualified is not None:  # an imported callable is not one of ours
            if event.qualified.startswith("torch."):
                followed = _followed_tensor(event.node)
                if followed is not None and not _placed(followed, semantic):
                    self.follows = True
                if not semantic.under_guard and _asks_for_cuda(event.node, semantic):
                    self.hard_coded = True
            return
        func = event.node.func
        guarded = semantic.under_guard  # a GPU-only call may rely on the default
        if isinstance(func, cst.Attribute):
            # a method of this file's class is called on `self`; `other.run()` may be anything
            if dotted(func.value) == "self":
                self.calls.setdefault((func.attr.value, True), []).append((event.node, guarded))
        elif isinstance(func, cst.Name):
            self.calls.setdefault((func.value, False), []).append((event.node, guarded))

    def finish(self, context: Context) -> Iterator[Report]:
        if not self.defaults or context.flags.cuda_only:
            return
        # `torch.eye(n, device=w.device)` beside `torch.randn(n, device="cuda")`: a GPU code
        # base's regulariser (BigGAN's utils), no CPU support
        offers_cpu = self.offers_cpu or (self.follows and not self.hard_coded)
        classes = _classes_of(context.module)
        for default in self.defaults:
            function = default.function.name.value
            key = (function, default.function in classes)
            if function == "__init__":
                key = (classes.get(default.function, ""), False)
            calls = self.calls.get(key, [])
            # a call that passes "cpu" says the function serves the CPU too
            switched = default.text is None and self.switched
            cpu = switched or any(_passes_cpu(call, default) for call, _ in calls)
            if not offers_cpu and not cpu:
                continue
            omitting = next(
                (call for call, guarded in calls if not guarded and _omits(call, default)), None
            )
            if omitting is None:
                continue  # every call in this file passes the device: the default is never used
            yield self.finding(default, omitting, context)

    def finding(self, default: Default, call: cst.Call, context: Context) -> Report:
        shown = context.code(default.node)
        name = default.param
        where = context.code(call)
        if len(where) > 60 or "\n" in where:
            where = f"{context.code(call.func)}(...)"
        message = (
            f"`{name}={shown}` asks for CUDA whenever a caller leaves `{name}` out, as "
            f"`{where}` does, in code that otherwise runs on the CPU too: on a machine "
            f"without a GPU that call fails; default to `None` and use the caller's device"
        )
        if default.text is None:
            message = (
                f"`{name}={shown}` turns the GPU on whenever a caller leaves `{name}` out, as "
                f"`{where}` does, in code that otherwise runs on the CPU too: on a machine "
                f"without a GPU that call fails; pass the script's own switch"
            )
        fix = None
        if default.has_torch and default.text is not None:
            guarded = f'{default.text.value} if torch.cuda.is_available() else "cpu"'
            edit = NodeEdit(default.text, guarded, "replace")
            fix = FixSpec((edit,), safe=False, description="fall back to the CPU")
        return Report(default.node, message, fix)


@dataclass(frozen=True)
class Default:
    function: cst.FunctionDef
    node: cst.BaseExpression
    text: cst.SimpleString | None
    """The ``"cuda"`` string of the default; None for a GPU switch on by default."""
    param: str
    index: int | None
    """Its position among the arguments a call passes (``self`` left out), None if keyword-only."""
    has_torch: bool
    """``torch`` is imported under that name (for the fix)."""


def _followed_tensor(call: cst.Call) -> cst.BaseExpression | None:
    """``x`` of ``torch.zeros(n, device=x.device)``: code that follows its inputs' device."""
    device = keyword(call, "device")
    value = device.value if device is not None else None
    if isinstance(value, cst.Attribute) and value.attr.value == "device":
        return value.value
    return None


def _placed(tensor: cst.BaseExpression, semantic: Semantic) -> bool:
    """``audio`` made with ``device=device`` a few lines up: following it follows the
    function's own device, not an input's."""
    held = semantic.lookup_local(tensor.value) if isinstance(tensor, cst.Name) else None
    return held is not None and held.is_tensorish and held.place is Place.DEVICE


def _asks_for_cuda(call: cst.Call, semantic: Semantic) -> bool:
    device = keyword(call, "device")
    return device is not None and _cuda_string(device.value, semantic) is not None


def _passes_cpu(call: cst.Call, default: Default) -> bool:
    """``call`` passes ``"cpu"`` for the parameter."""
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    for arg in call.args:
        keyword = arg.keyword.value if arg.keyword is not None else None
        named = keyword == default.param
        placed = (
            keyword is None
            and default.index is not None
            and (default.index < len(positional) and positional[default.index] is arg)
        )
        if (named or placed) and string_value(arg.value) == "cpu":
            return True
    return False


def _omits(call: cst.Call, default: Default) -> bool:
    """``call`` leaves the parameter to its default (no ``*args`` / ``**kwargs`` may pass it)."""
    if any(arg.star for arg in call.args):
        return False
    if any(arg.keyword is not None and arg.keyword.value == default.param for arg in call.args):
        return False
    positional = sum(1 for arg in call.args if arg.keyword is None)
    return default.index is None or positional <= default.index


def _classes_of(module: cst.Module) -> dict[cst.FunctionDef, str]:
    """Each method -> the name of its class (for ``__init__``: the name its callers call)."""
    owners: dict[cst.FunctionDef, str] = {}
    stack: list[cst.CSTNode] = list(module.body)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.ClassDef):
            for statement in node.body.body:
                if isinstance(statement, cst.FunctionDef):
                    owners[statement] = node.name.value
                stack.append(statement)
        elif isinstance(node, cst.If | cst.Try | cst.With):
            stack.extend(node.body.body)
    return owners


def _cuda_string(node: cst.BaseExpression, semantic: Semantic) -> cst.SimpleString | None:
    """The ``"cuda..."`` string of a default ``"cuda"`` or ``torch.device("cuda")``."""
    if isinstance(node, cst.Call) and semantic.qualify(node.func) == "torch.device":
        if len(node.args) != 1:
            return None
        node = node.args[0].value
    text = string_value(node)
    if text is not None and api.CUDA_LITERAL.match(text) and isinstance(node, cst.SimpleString):
        return node
    return None


GPU_SWITCH = re.compile(r"^(use_|on_)?(cuda|gpu)$", re.I)
"""A parameter that turns the GPU on (``cuda=True``, ``use_gpu=True``)."""


def _gpu_switch_on(param: cst.Param, function: cst.FunctionDef) -> bool:
    """``cuda=True``, tested by an ``if`` of the function (``if cuda: adj = adj.cuda()``)."""
    if not GPU_SWITCH.match(param.name.value) or dotted(param.default or cst.Name("")) != "True":
        return False
    tests = _SwitchTests(param.name.value)
    walk(function.body, tests)
    return tests.found


class _SwitchTests(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.found = False

    def visit_If(self, node: cst.If) -> None:
        if isinstance(node.test, cst.Name) and node.test.value == self.name:
            self.found = True


def _checks_availability(function: cst.FunctionDef) -> bool:
    finder = _AvailabilityFinder()
    walk(function.body, finder)
    return finder.found


class _AvailabilityFinder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in ("is_available", "device_count"):
            self.found = True
