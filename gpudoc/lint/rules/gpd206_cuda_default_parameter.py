"""GPD206: ``device="cuda"`` as a parameter default in code that otherwise supports the CPU."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import FunctionEvent, Semantic
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report, Rule


class CudaDefaultParameter(Rule):
    """A `device="cuda"` default in a function signature of a file that falls back to the CPU.

    ## What it does
    Finds parameters whose default is `"cuda"`, `"cuda:0"` or `torch.device("cuda")`, in a file
    that checks `torch.cuda.is_available()` elsewhere (so it means to run without a GPU), when
    the function does not check availability itself.

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
    Files without an availability check are not reported (they need a GPU anyway: GPD203), and
    neither are files written for GPUs only (NCCL, per-rank devices). A default that every call
    site overrides is still reported.

    ## Fix safety
    The fix (unsafe: on a host without a usable GPU the default becomes the CPU instead of an
    error) writes `"cuda" if torch.cuda.is_available() else "cpu"` in place of `"cuda"`, where
    `torch` is imported under that name.
    """

    CODE = "GPD206"
    NAME = "cuda-default-parameter"
    SUMMARY = 'a device="cuda" default in a file that otherwise falls back to the CPU'
    PLACEMENT = False
    EVENTS = ("function",)
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
""",
            line=3,
            col=29,
        ),
        Invalid(
            """\
import torch
class Trainer:
    def __init__(self, model, device=torch.device("cuda:0")):
        self.model = model.to(device)
if torch.cuda.is_available():
    trainer = Trainer(torch.nn.Linear(2, 2))
""",
            line=3,
            col=38,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.defaults: list[tuple[cst.BaseExpression, cst.SimpleString, str, bool]] = []
        """(default, its "cuda" string, parameter, torch importable as ``torch``)."""

    def on_function(self, event: FunctionEvent, semantic: Semantic) -> None:
        params = event.node.params
        found = []
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            text = _cuda_string(param.default, semantic) if param.default is not None else None
            if param.default is not None and text is not None:
                found.append((param.default, text, param.name.value))
        if not found or _checks_availability(event.node):
            return
        has_torch = semantic.qualify(cst.Name("torch")) == "torch"
        self.defaults += [(default, text, name, has_torch) for default, text, name in found]

    def finish(self, facts: Facts, context: Context) -> Iterator[Report]:
        flags = facts.flags
        if not flags.availability_check or flags.cuda_only or flags.per_rank_device:
            return
        for default, text, name, has_torch in self.defaults:
            shown = context.code(default)
            message = (
                f"`{name}={shown}` asks for CUDA whenever a caller leaves `{name}` out, in a file "
                "that otherwise falls back to the CPU: on a machine without a GPU that call fails; "
                f"default to `None` and use the caller's device, or fall back here"
            )
            fix = None
            if has_torch:
                guarded = f'{text.value} if torch.cuda.is_available() else "cpu"'
                edit = NodeEdit(text, guarded, "replace")
                fix = FixSpec((edit,), safe=False, description="fall back to the CPU")
            yield Report(default, message, fix)


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


def _checks_availability(function: cst.FunctionDef) -> bool:
    finder = _AvailabilityFinder()
    function.body.visit(finder)
    return finder.found


class _AvailabilityFinder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in ("is_available", "device_count"):
            self.found = True
