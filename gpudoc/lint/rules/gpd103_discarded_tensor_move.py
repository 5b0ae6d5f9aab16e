"""GPD103: a tensor's .to()/.cuda() whose result is thrown away."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis.facts import DiscardedMove, Facts
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report, Rule


class DiscardedTensorMove(Rule):
    """A tensor's `.to()` / `.cuda()` / `.half()` result is discarded.

    ## What it does
    Finds expression statements such as `x.to(device)` or `mask.cuda()` whose receiver is a
    tensor (bound from a torch factory, a tensor operation, a batch, or a parameter named like
    one: `x`, `images`, `labels`).

    ## Why is this bad?
    `Module.to()` moves a module in place, but `Tensor.to()` returns a new tensor and leaves the
    original where it was. The statement does nothing, and the next use of `x` fails with
    `Expected all tensors to be on the same device` (or silently keeps the old dtype).

    ## Example
    ```python
    x = torch.randn(8, 4)
    x.to(device)
    ```

    ## Use instead
    ```python
    x = torch.randn(8, 4)
    x = x.to(device)
    ```

    ## Known problems
    Objects whose `.to()` works in place (modules, a tokenizer's `BatchEncoding`) are never typed
    as tensors, so they are not reported. The fix (safe) assigns the result back.
    """

    CODE = "GPD103"
    NAME = "discarded-tensor-move"
    SUMMARY = "a tensor's .to()/.cuda() result is discarded: tensors do not move in place"
    PLACEMENT = False
    VALID = (
        """\
import torch
model = torch.nn.Linear(4, 2)
model.to("cuda")
""",
        """\
import torch
inputs = tokenizer("hello", return_tensors="pt")
inputs.to("cuda")
""",
        """\
import torch
x = torch.randn(3)
x = x.to("cuda")
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
x = torch.randn(3)
x.to("cuda")
""",
            line=3,
            col=1,
            expected_replacement="""\
import torch
x = torch.randn(3)
x = x.to("cuda")
""",
        ),
        Invalid(
            """\
import torch
def step(model, x, device):
    x.to(device)
    return model(x)
""",
            line=3,
            col=5,
            expected_replacement="""\
import torch
def step(model, x, device):
    x = x.to(device)
    return model(x)
""",
        ),
    )

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        for move in facts.discarded_moves:
            if not facts.flags.places and not _converts_dtype(move, context):
                continue
            shown = context.code(move.receiver)
            message = (
                f"`{shown}.{move.method}(...)` returns a new tensor and this statement discards "
                f"it: tensors do not move in place (write `{shown} = {shown}.{move.method}(...)`)"
            )
            fix = None
            if isinstance(move.receiver, cst.Name | cst.Attribute | cst.Subscript):
                edit = NodeEdit(move.call, f"{shown} = ", "before")
                fix = FixSpec((edit,), safe=True, description="assign the result back")
            yield Report(move.statement, message, fix)


def _converts_dtype(move: DiscardedMove, context: Context) -> bool:
    """A CPU-only file: only a discarded dtype conversion changes behaviour."""
    if move.method in ("cpu", "cuda"):
        return False
    if move.method != "to":
        return True
    args = "".join(context.code(arg) for arg in move.call.args)
    return "dtype" in args or "torch." in args
