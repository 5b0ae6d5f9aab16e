"""GPD202: .numpy() or a NumPy / scikit-learn call on a device tensor."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CallEvent, Semantic
from gpudoc.lint.analysis.values import Kind, Place, Value
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report
from gpudoc.lint.rules._numpy_lists import NumpyOnDeviceLists

SIMPLE = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


@dataclass(frozen=True)
class NumpyUse:
    node: cst.Call
    receiver: cst.BaseExpression
    value: Value
    function: str | None
    """None for ``t.numpy()``; the qualified function for ``np.mean(t)``."""
    from_call: bool
    """Seen while walking a function for one of its calls: other calls may pass other values."""


class NumpyOnDeviceTensor(NumpyOnDeviceLists):
    """`.numpy()`, NumPy or scikit-learn on a tensor that lives on the device.

    ## What it does
    Finds `.numpy()` on a tensor known to be on the device (a placed model's output, a moved
    tensor) with no `.cpu()` in between, and NumPy, scikit-learn, SciPy or matplotlib functions
    called on such a tensor, or on a list that `append` filled with device tensors
    (`losses.append(loss)`, then `np.mean(losses)`).

    ## Why is this bad?
    It fails with `TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu()
    to copy the tensor to host memory first.`

    ## Example
    ```python
    preds = model(images).argmax(1).numpy()
    ```

    ## Use instead
    ```python
    preds = model(images).argmax(1).cpu().numpy()
    ```

    NumPy functions that only read metadata or call the tensor's own method (`np.shape`,
    `np.ndim`, `np.size`, `np.squeeze`, `np.nonzero`, `np.swapaxes`) copy nothing to the host
    and are not reported.

    ## Known problems
    Only tensors whose placement the analysis knows are checked; `.item()`, `.tolist()` and
    `.detach().cpu().numpy()` are fine.

    ## Fix safety
    Inserting `.cpu()` is safe where the value is known to be a device tensor (bound from a
    placed model's output, a moved tensor): `.cpu()` is a no-op on the CPU. It is unsafe where
    the value is typed only by its parameter name (`x`, `images`): if it is not a tensor,
    `.cpu()` raises; and inside a helper found through one of its calls (`imshow(images[i])`
    with `images` on the device), since other calls may hand it NumPy arrays. For NumPy
    reductions that call the tensor's method (`np.mean(t)` calls
    `t.mean(axis=None, out=None)`, which fails on any device) the fix inserts `.cpu().numpy()`
    and is unsafe: it turns a crash on the CPU into a NumPy result.
    """

    CODE = "GPD202"
    NAME = "numpy-on-device-tensor"
    SUMMARY = ".numpy() or NumPy/scikit-learn on a device tensor, without .cpu()"
    VALID = (
        """\
import torch
model = torch.nn.Linear(4, 2).cuda()
out = model(torch.randn(3, 4).cuda())
preds = out.detach().cpu().numpy()
total = out.sum().item()
""",
        """\
import numpy as np
import torch
model = torch.nn.Linear(4, 2).cuda()
out = model(torch.randn(3, 4).cuda())
batch, classes = np.shape(out)
logits = np.squeeze(out)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
model = torch.nn.Linear(4, 2).cuda()
out = model(torch.randn(3, 4).cuda())
preds = out.argmax(1).numpy()
""",
            line=4,
            col=9,
            expected_replacement="""\
import torch
model = torch.nn.Linear(4, 2).cuda()
out = model(torch.randn(3, 4).cuda())
preds = out.argmax(1).cpu().numpy()
""",
        ),
        Invalid(
            """\
import numpy as np
import torch
model = torch.nn.Linear(4, 2).cuda()
out = model(torch.randn(3, 4).cuda())
print(np.mean(out))
""",
            line=5,
            col=7,
            expected_replacement="""\
import numpy as np
import torch
model = torch.nn.Linear(4, 2).cuda()
out = model(torch.randn(3, 4).cuda())
print(np.mean(out.cpu().numpy()))
""",
        ),
        # typed a tensor by its name only: the fix is offered, but unsafe
        Invalid(
            """\
import torch
def to_numpy(x, device):
    x = x.to(device)
    return x.numpy()
""",
            line=4,
            col=12,
            expected_replacement="""\
import torch
def to_numpy(x, device):
    x = x.to(device)
    return x.cpu().numpy()
""",
        ),
        Invalid(
            """\
import numpy as np
import torch
model = torch.nn.Linear(4, 1).cuda()
losses = []
for x in torch.randn(10, 3, 4).cuda():
    loss = model(x).pow(2).mean()
    losses.append(loss)
print(np.mean(losses))
""",
            line=8,
            col=7,
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self.uses: list[NumpyUse] = []

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        super().on_call(event, semantic)  # lists of device tensors (_numpy_lists.py)
        if semantic.on_cpu_path:
            return  # the CPU path of a device guard: the tensor is on the host there
        node, receiver = event.node, event.receiver
        if event.method == "numpy" and event.qualified is None and receiver is not None:
            func = node.func
            converted = event.result.kind is Kind.NDARRAY  # not a method of the file's own
            if converted and receiver.place is Place.DEVICE and isinstance(func, cst.Attribute):
                self.uses.append(
                    NumpyUse(node, func.value, receiver, None, bool(semantic.walked_for_call))
                )
            return
        qualified = event.qualified or ""
        if not qualified.startswith(api.DATAFRAME_ROOTS):
            return
        for arg, value in zip(node.args, event.args, strict=True):
            if value.is_tensorish and value.place is Place.DEVICE:
                use = NumpyUse(node, arg.value, value, qualified, semantic.walked_for_call)
                self.uses.append(use)
                return

    def finish(self, context: Context) -> Iterator[Report]:
        for use in self.uses:
            function = (use.function or "").rsplit(".", 1)[-1]
            first = _first_argument(use.node) is use.receiver
            numpy = (use.function or "").startswith("numpy.")
            if numpy and first and function in NUMPY_NO_CONVERSION:
                continue  # reads metadata or calls the tensor's own method: no host copy
            yield self._report(use, function, numpy and first, context)

    def _report(self, use: NumpyUse, function: str, first: bool, context: Context) -> Report:
        shown = context.code(use.receiver)
        # `.cpu()` on what only its name calls a tensor may fail, and so may one in a helper
        # that other calls hand NumPy arrays
        safe = not (use.value.by_name or use.from_call)
        text, description = ".cpu()", "insert .cpu()"
        if not function:
            message = f"`{shown}` is on the device: `.numpy()` needs `.cpu()` first"
        elif first and function in NUMPY_TENSOR_METHOD_REDUCTIONS:
            message = (
                f"`{function}()` calls `{shown}.{function}(axis=..., out=...)`, which a tensor "
                f"does not accept, and `{shown}` is on the device: convert it first "
                f"(`{shown}.cpu().numpy()`)"
            )
            text, description, safe = ".cpu().numpy()", "insert .cpu().numpy()", False
        else:
            message = f"`{function}()` converts `{shown}`, which is on the device: add `.cpu()`"
        if not isinstance(use.receiver, SIMPLE):
            return Report(use.node, message)
        edit = NodeEdit(use.receiver, text, "after")
        return Report(use.node, message, FixSpec((edit,), safe=safe, description=description))


NUMPY_NO_CONVERSION = frozenset({"shape", "ndim", "size", "squeeze", "nonzero", "swapaxes"})
"""NumPy functions that read a tensor's metadata or call its own method (``np.squeeze(t)`` is
``t.squeeze()``, a tensor on the same device); checked with a tensor whose ``__array__``
raises. The rest (``np.argmax``, ``np.clip``, ufuncs) fall back to converting it."""
NUMPY_TENSOR_METHOD_REDUCTIONS = frozenset(
    {"mean", "sum", "max", "min", "amax", "amin", "std", "var", "prod", "all", "any"}
)
"""``np.mean(t)`` calls ``t.mean(axis=None, dtype=None, out=None)``: a TypeError on any
device, so ``.cpu()`` alone does not repair it; ``.cpu().numpy()`` does."""


def _first_argument(call: cst.Call) -> cst.BaseExpression | None:
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[0].value if positional else None
