"""GPD205: a CUDA query with no availability check, in a file that otherwise supports the CPU."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from gpudoc.lint.analysis.events import (
    CallEvent,
    FunctionEvent,
    Semantic,
)
from gpudoc.lint.analysis.flow import is_guard
from gpudoc.lint.analysis.names import dotted, names_in
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report
from gpudoc.lint.rules._checkpoints import scan
from gpudoc.lint.rules._helpers import OffersCpu
from gpudoc.lint.visit import walk

QUERIES = frozenset(
    {
        "torch.cuda.is_bf16_supported",
        "torch.cuda.get_device_capability",
        "torch.cuda.get_device_name",
        "torch.cuda.get_device_properties",
        "torch.cuda.mem_get_info",
    }
)
"""``synchronize()`` and ``reset_peak_memory_stats()`` fail the same way on a CPU-only build,
but they sit in the training engines of GPU-only projects (DeiT, MAE, ConvNeXt), whose "CPU"
is a library option: reported there, they were wrong on every public repository tried."""
EXITS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


class CudaQueryWithoutFallback(OffersCpu):
    """A CUDA query (`get_device_capability()`, `mem_get_info()`, ...) with no availability check.

    ## What it does
    Finds `torch.cuda.is_bf16_supported()`, `get_device_capability()`, `get_device_name()`,
    `get_device_properties()` and `mem_get_info()` outside any device test,
    in a file that means to run on the CPU too: it checks `torch.cuda.is_available()`
    elsewhere, or picks `"cpu"` in a conditional expression or a comparison. A call is
    protected by an `if` or conditional expression about devices (either arm), by
    `torch.cuda.is_available() and ...`, by an earlier `if not torch.cuda.is_available():
    return` in its block, by a `try:` with handlers, or by `for i in
    range(torch.cuda.device_count()):`. A query about a device the function was given
    (`get_device_capability(device)`) is the caller's to guard.

    ## Why is this bad?
    These queries initialise CUDA. Without a GPU they fail with `AssertionError: Torch not
    compiled with CUDA enabled` or `RuntimeError: Found no NVIDIA driver on your system`, so
    the CPU path the script offers dies on a line that only wanted to print the GPU's name or
    pick a dtype (karpathy/nanoGPT#304; `is_bf16_supported()` fails this way before PyTorch
    2.5, pytorch/pytorch#132303).

    ## Example
    ```python
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    ```

    ## Use instead
    ```python
    device = "cuda" if torch.cuda.is_available() else "cpu"
    use_bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    dtype = torch.bfloat16 if use_bf16 else torch.float16
    ```

    ## Known problems
    A query in a function is reported only where the file calls that function (by name)
    outside any device test: helpers of a library, called from other files, are not checked.
    A query behind a flag whose name says nothing about devices is reported. Files with no CPU
    path (GPU-only scripts, notebooks whose metadata asks for a GPU accelerator) and NCCL
    programs are not checked.

    ## Fix safety
    `is_bf16_supported()` becomes `(torch.cuda.is_available() and torch.cuda.is_bf16_supported())`
    (safe: the same answer wherever CUDA works, `False` where the call failed). The other
    queries have no fix: what to do without a GPU is the author's choice.
    """

    CODE = "GPD205"
    NAME = "cuda-query-without-fallback"
    SUMMARY = "a CUDA query (device name, capability, memory) that fails on CPU-only machines"
    PLACEMENT = False
    EVENTS = ("call", "function", "binding", "compare")
    VALID = (
        """\
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
ptdtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
if device == "cuda":
    print(torch.cuda.get_device_name(0))
""",
        """\
import torch
def report():
    if not torch.cuda.is_available():
        return "cpu"
    free, total = torch.cuda.mem_get_info()
    return f"{free}/{total}"
try:
    major, _ = torch.cuda.get_device_capability()
except AssertionError:
    major = 0
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
t = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.half
""",
            line=3,
            col=23,
            expected_replacement="""\
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
t = torch.bfloat16 if (torch.cuda.is_available() and torch.cuda.is_bf16_supported()) else torch.half
""",
        ),
        Invalid(
            """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print("running on", torch.cuda.get_device_name(0))
""",
            line=3,
            col=21,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.queries: dict[cst.Call, cst.FunctionDef | None] = {}
        """Unguarded queries -> the function they are in (None: module level)."""
        self.functions: dict[str, cst.FunctionDef] = {}
        """The function being walked under each name (the walk is sequential)."""
        self.called: set[str] = set()
        """Names of the functions and methods called outside any device test."""
        """``x = "cuda" if ... else "cpu"`` or ``device == "cpu"``: the file picks the CPU."""

    def on_function(self, event: FunctionEvent, semantic: Semantic) -> None:
        self.functions[event.node.name.value] = event.node

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        if semantic.under_guard:
            return
        func = event.node.func
        if isinstance(func, cst.Attribute | cst.Name):
            self.called.add(func.attr.value if isinstance(func, cst.Attribute) else func.value)
        if event.qualified in QUERIES:
            function = semantic.function
            self.queries[event.node] = self.functions.get(function) if function else None

    def finish(self, context: Context) -> Iterator[Report]:
        flags = context.flags
        if not self.queries or flags.cuda_only:
            return
        if not (flags.availability_check or self.offers_cpu):
            return
        if not self.offers_cpu and scan(context.module, path=context.path).cpu_path is None:
            return  # `print(torch.cuda.is_available())` shows it, chooses nothing
        # a query in a function counts where this file calls that function outside device tests
        queries = {
            call: function
            for call, function in self.queries.items()
            if function is None or function.name.value in self.called
        }
        finder = _Protection(set(queries))
        for region in {function or context.module for function in queries.values()}:
            walk(region, finder)
        for call in queries:
            if call in finder.protected:
                continue
            func = call.func
            name = context.code(func)
            why = " (before PyTorch 2.5)" if name.endswith("is_bf16_supported") else ""
            message = (
                f"`{name}()` fails on a machine without CUDA{why} (`Torch not compiled with CUDA "
                "enabled`), and this file otherwise falls back to the CPU: check "
                "`torch.cuda.is_available()` first"
            )
            yield Report(call, message, _fix(call, context))


def _fix(call: cst.Call, context: Context) -> FixSpec | None:
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "is_bf16_supported":
        return None
    available = f"{context.code(func.value)}.is_available()"
    edits = (
        NodeEdit(call, f"({available} and ", "before"),
        NodeEdit(call, ")", "after"),
    )
    return FixSpec(edits, safe=True, description="check torch.cuda.is_available() first")


class _Protection(cst.CSTVisitor):
    """Which of ``calls`` sit where a device test protects them (see the rule's docs)."""

    def __init__(self, calls: set[cst.Call]) -> None:
        self.calls = calls
        self.roots: set[cst.CSTNode] = set()
        self.depth = 0
        self.protected: set[cst.Call] = set()
        self.region: cst.CSTNode | None = None
        self.parameters: set[str] = set()
        """The parameters of the function being visited."""

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.region is None:
            self.region = node
        elif isinstance(node, cst.FunctionDef | cst.ClassDef):
            return False  # a nested body is its own region
        if node in self.roots:
            self.depth += 1
        if isinstance(node, cst.If | cst.IfExp) and _guard(node.test):
            self.roots.update(part for part in (node.body, node.orelse) if part is not None)
        elif isinstance(node, cst.BooleanOperation) and _guard(node.left):
            self.roots.add(node.right)
        elif isinstance(node, cst.For) and _guard(node.iter):
            self.roots.add(node.body)  # `for i in range(torch.cuda.device_count()):` runs 0 times
        elif isinstance(node, cst.FunctionDef):
            params = node.params
            every = (*params.posonly_params, *params.params, *params.kwonly_params)
            self.parameters = {param.name.value for param in every}
        elif isinstance(node, cst.Try | cst.TryStar) and node.handlers:
            self.roots.add(node.body)
        elif isinstance(node, cst.IndentedBlock | cst.Module):
            self.roots.update(_after_early_exit(node.body))
        elif isinstance(node, cst.Call) and node in self.calls and self.covers(node):
            self.protected.add(node)
        return True

    def covers(self, call: cst.Call) -> bool:
        """Under a device test, or about a device the caller chose (a parameter)."""
        return bool(self.depth) or any(dotted(arg.value) in self.parameters for arg in call.args)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if original_node in self.roots:
            self.depth -= 1
        if original_node is self.region:
            self.region = None
            self.parameters = set()


def _guard(test: cst.BaseExpression) -> bool:
    """A device test, or a test for the NCCL backend (GPU-only code)."""
    return is_guard(test) or any("nccl" in name.lower() for name in names_in(test))


def _after_early_exit(body: Sequence[cst.BaseStatement]) -> list[cst.CSTNode]:
    """The statements after ``if not torch.cuda.is_available(): return`` (or ``raise``, or an
    ``assert torch.cuda.is_available()``): they run only where the test passed."""
    for position, statement in enumerate(body):
        if _exits_unless_available(statement):
            return list(body[position + 1 :])
    return []


def _exits_unless_available(statement: cst.BaseStatement) -> bool:
    if isinstance(statement, cst.SimpleStatementLine):
        return any(isinstance(s, cst.Assert) and is_guard(s.test) for s in statement.body)
    if not isinstance(statement, cst.If) or not is_guard(statement.test):
        return False
    last = statement.body.body[-1] if statement.body.body else None
    if isinstance(last, cst.SimpleStatementLine):
        small = last.body[-1]
        if isinstance(small, EXITS):
            return True
        call = small.value if isinstance(small, cst.Expr) else None
        func = call.func if isinstance(call, cst.Call) else None
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        return name in ("exit", "quit")
    return False
