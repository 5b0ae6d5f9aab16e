"""GPD202: .numpy() or a NumPy / scikit-learn call on a device tensor."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis.facts import Facts
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report
from gpudoc.lint.rules._numpy_lists import NumpyOnDeviceLists

SIMPLE = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


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

    ## Known problems
    Only tensors whose placement the analysis knows are checked; `.item()`, `.tolist()` and
    `.detach().cpu().numpy()` are fine. The fix (safe: `.cpu()` is a no-op on the CPU) inserts
    `.cpu()`.
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

    def check(self, facts: Facts, context: Context) -> Iterator[Report]:
        yield from self.reports  # lists of device tensors (_numpy_lists.py)
        for use in facts.numpy_uses:
            shown = context.code(use.receiver)
            if use.function is None:
                message = f"`{shown}` is on the device: `.numpy()` needs `.cpu()` first"
            else:
                function = use.function.rsplit(".", 1)[-1]
                message = f"`{function}()` converts `{shown}`, which is on the device: add `.cpu()`"
            fix = None
            if isinstance(use.receiver, SIMPLE):
                edit = NodeEdit(use.receiver, ".cpu()", "after")
                fix = FixSpec((edit,), safe=True, description="insert .cpu()")
            yield Report(use.node, message, fix)
