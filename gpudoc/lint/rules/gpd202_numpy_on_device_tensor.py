"""GPD202: .numpy() or a NumPy / scikit-learn call on a device tensor."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import (
    CallEvent,
    EventKind,
    ItemEvent,
    Semantic,
    WalkedCallEvent,
)
from gpudoc.lint.analysis.functions import argument_for
from gpudoc.lint.analysis.names import assigned_value, dotted
from gpudoc.lint.analysis.values import APPENDED, ESTIMATOR, Kind, Place, Value
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report
from gpudoc.lint.rules._helpers import chain_name
from gpudoc.lint.rules._numpy_lists import NumpyOnDeviceLists

SIMPLE = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


@dataclass
class NumpyUse:
    node: cst.Call
    receiver: cst.BaseExpression
    value: Value
    function: str | None
    """None for ``t.numpy()``; the qualified function for ``np.mean(t)``."""
    from_call: bool
    """Seen while walking a function for one of its calls: other calls may pass other values."""
    step: int
    """``Semantic.step`` where it was seen (which walk of a helper saw it)."""
    site: cst.Call | None = None
    """The call (in the linted file) that hands the converting helper the device tensor through
    one of its parameters, when the helper is also called elsewhere or lives in another file:
    the finding belongs there (``imshow(images[i])``, not ``np.transpose(img)`` in imshow)."""
    site_argument: cst.Arg | None = None
    also: tuple[tuple[cst.BaseExpression, Value], ...] = ()
    """The call's other arguments on the device (``accuracy_score(targets, predictions)``):
    one finding, one fix for all of them, so that one round of --fix settles the call."""


class NumpyOnDeviceTensor(NumpyOnDeviceLists):
    """`.numpy()`, NumPy or scikit-learn on a tensor that lives on the device.

    ## What it does
    Finds `.numpy()` on a tensor known to be on the device (a placed model's output, a moved
    tensor) with no `.cpu()` in between, and NumPy, scikit-learn, SciPy or matplotlib functions
    called on such a tensor, on a list display that holds one among numbers
    (`np.array([loss.item(), acc * 100])`), or on a list that `append` filled with device
    tensors (`losses.append(loss)`, then `np.mean(losses)`). A helper that converts its parameter
    (`def imshow(img): plt.imshow(np.transpose(img, (1, 2, 0)))`) and is also called with NumPy
    arrays, or lives in another file of the project, is reported at the call that hands it a
    device tensor (`imshow(images[idx])`): that call is the bug, not the helper.
    Plotting methods of matplotlib Axes (`ax.imshow(t)`, `axs[0, i].plot(t)`) convert their
    data too, and are checked on what is named like Axes (`ax`, `axs`, `axes`, `self.ax`), and so
    do the d2l book's plotting helpers (`d2l.plot`, `d2l.show_images`, and `add` of a
    `d2l.Animator`, item by item: `animator.add(epoch, (None, valid_loss))`).
    A device tensor stored into a NumPy array (`g_loss[ind] = loss.data` into `g_loss =
    np.zeros(...)`) is converted too, and so is the data of a scikit-learn estimator's `fit`,
    `fit_transform`, `transform` or `predict` (`TSNE(n_components=2).fit_transform(mu)`).
    The lengths `pad_packed_sequence` returns are a CPU tensor, wherever the packed batch is.
    scikit-learn's `train_test_split`, `shuffle` and
    `resample` only index what they are given and are not reported.

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
    `.cpu()` raises; inside a helper found through its only call, since later code may hand
    it NumPy arrays; and at a call that hands a converting helper a device tensor
    (`imshow(images[i].cpu())`), since the helper may need that tensor on the device too. For NumPy
    reductions that call the tensor's method (`np.mean(t)` calls
    `t.mean(axis=None, out=None)`, which fails on any device) the fix inserts `.cpu().numpy()`
    and is unsafe: it turns a crash on the CPU into a NumPy result. A call given several device
    tensors (`accuracy_score(targets, predictions)`) is one finding, whose fix moves them all.
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

    EVENTS: ClassVar[tuple[EventKind, ...]] = ("binding", "call", "walked", "item")

    def __init__(self) -> None:
        super().__init__()
        self.uses: list[NumpyUse] = []
        self.stores: list[tuple[cst.BaseExpression, str]] = []
        """Device tensors stored into a NumPy array (``losses[i] = loss.data``), by name."""

    def on_item(self, event: ItemEvent, semantic: Semantic) -> None:
        """``g_loss[ind] = loss.data`` into ``g_loss = np.zeros(...)``: NumPy converts it."""
        value = event.value
        if value is None or not value.is_tensorish or value.place is not Place.DEVICE:
            return
        base = dotted(event.target.value)
        held = semantic.lookup(base) if base is not None else None
        statement = event.statement
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
        if held is None or held.kind is not Kind.NDARRAY or not isinstance(small, cst.Assign):
            return
        self.stores.append((small.value, base or ""))

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        super().on_call(event, semantic)  # lists of device tensors (_numpy_lists.py)
        if semantic.on_cpu_path:
            return  # the CPU path of a device guard: the tensor is on the host there
        node, receiver = event.node, event.receiver
        if event.method == "numpy" and event.qualified is None and receiver is not None:
            func = node.func
            converted = event.result.kind is Kind.NDARRAY  # not a method of the file's own
            if converted and receiver.place is Place.DEVICE and isinstance(func, cst.Attribute):
                from_call = semantic.walked_for_call
                use = NumpyUse(node, func.value, receiver, None, from_call, semantic.step)
                self.uses.append(use)
            return
        qualified = event.qualified or ""
        if receiver is not None and receiver.source == ESTIMATOR and event.method in FITTING:
            qualified = f"sklearn.{event.method}"  # `TSNE(n_components=2).fit_transform(mu)`
        if not qualified.startswith(api.DATAFRAME_ROOTS) or qualified in api.INDEXING_HELPERS:
            return
        parts: list[tuple[cst.BaseExpression, Value]] = []
        for arg, value in zip(node.args, event.args, strict=True):
            part = _on_device_part(arg.value, value)
            if part is not None:
                parts.append(part)
        if parts:
            (argument, argument_value), *also = parts
            from_call = semantic.walked_for_call
            use = NumpyUse(node, argument, argument_value, qualified, from_call, semantic.step)
            use.also = tuple(also)
            self.uses.append(use)

    def on_walked(self, event: WalkedCallEvent, semantic: Semantic) -> None:
        """A helper that converts a parameter to NumPy (``def imshow(img): np.transpose(img)``)
        is right for the NumPy arrays its other calls pass: the call that hands it a device
        tensor is the bug. So when it has other calls here, or lives in another file, its
        conversions of that parameter are reported at this call."""
        uses = [use for use in self.uses if use.step > event.start and use.site is None]
        name = event.function.name.value
        if not uses or not (event.foreign or semantic.calls_named(name) > 1):
            return
        for use in uses:
            start = chain_name(use.receiver)
            root = start.value if start is not None else None
            function, call = event.function, event.call
            argument = argument_for(function, call, root, event.is_method) if root else None
            if argument is not None:
                use.site, use.site_argument = call, argument

    def finish(self, context: Context) -> Iterator[Report]:
        for stored, array in self.stores:
            shown = context.code(stored)
            message = (
                f"`{shown}` is on the device and storing it into the NumPy array `{array}` "
                "converts it: add `.cpu()`"
            )
            fix = None
            if isinstance(stored, SIMPLE):
                edit = NodeEdit(stored, ".cpu()", "after")
                fix = FixSpec((edit,), safe=True, description="insert .cpu()")
            yield Report(stored, message, fix)
        for use in self.uses:
            function = (use.function or "").rsplit(".", 1)[-1]
            first = _first_argument(use.node) is use.receiver
            numpy = (use.function or "").startswith("numpy.")
            if numpy and first and function in NUMPY_NO_CONVERSION:
                continue  # reads metadata or calls the tensor's own method: no host copy
            yield self._report(use, function, numpy and first, context)

    def _report(self, use: NumpyUse, function: str, first: bool, context: Context) -> Report:
        if use.site is not None and use.site_argument is not None:
            return _site_report(use, use.site, use.site_argument, function, context)
        shown = context.code(use.receiver)
        # `.cpu()` on what only its name calls a tensor may fail, and so may one in a helper
        # that other calls hand NumPy arrays
        by_name = use.value.by_name or any(value.by_name for _node, value in use.also)
        safe = not (by_name or use.from_call)
        text, description = ".cpu()", "insert .cpu()"
        others = [node for node, _value in use.also]
        sequence = _a_sequence(use)  # a list has no `.cpu()`
        if not function:
            message = f"`{shown}` is on the device: `.numpy()` needs `.cpu()` first"
        elif first and function in NUMPY_TENSOR_METHOD_REDUCTIONS:
            message = (
                f"`{function}()` calls `{shown}.{function}(axis=..., out=...)`, which a tensor "
                f"does not accept, and `{shown}` is on the device: convert it first "
                f"(`{shown}.cpu().numpy()`)"
            )
            text, description, safe = ".cpu().numpy()", "insert .cpu().numpy()", False
        elif others:
            names = ", ".join(f"`{context.code(node)}`" for node in [use.receiver, *others])
            message = f"`{function}()` converts {names}, which are on the device: add `.cpu()`"
        elif sequence:
            message = (
                f"`{function}()` converts `{shown}`, a list of device tensors: bring each to the "
                f"host first (`[t.detach().cpu() for t in {shown}]`)"
            )
        else:
            message = f"`{function}()` converts `{shown}`, which is on the device: add `.cpu()`"
        if not isinstance(use.receiver, SIMPLE) or sequence:
            return Report(use.node, message)  # `.cpu()` of a list would raise AttributeError
        edits = [NodeEdit(use.receiver, text, "after")] + [
            NodeEdit(node, ".cpu()", "after") for node in others if isinstance(node, SIMPLE)
        ]
        fix = FixSpec(tuple(edits), safe=safe, description=description)
        return Report(use.node, message, fix)


FITTING = frozenset(
    {"fit", "fit_transform", "transform", "predict", "predict_proba", "fit_predict",
     "partial_fit", "score", "decision_function", "inverse_transform"}
)  # fmt: skip
"""Methods of a scikit-learn estimator that turn their data into NumPy arrays."""
NUMPY_NO_CONVERSION = frozenset({"shape", "ndim", "size", "squeeze", "nonzero", "swapaxes"})
"""NumPy functions that read a tensor's metadata or call its own method (``np.squeeze(t)`` is
``t.squeeze()``, a tensor on the same device); checked with a tensor whose ``__array__``
raises. The rest (``np.argmax``, ``np.clip``, ufuncs) fall back to converting it."""
NUMPY_TENSOR_METHOD_REDUCTIONS = frozenset(
    {"mean", "sum", "max", "min", "amax", "amin", "std", "var", "prod", "all", "any"}
)
"""``np.mean(t)`` calls ``t.mean(axis=None, dtype=None, out=None)``: a TypeError on any
device, so ``.cpu()`` alone does not repair it; ``.cpu().numpy()`` does."""


def _site_report(
    use: NumpyUse, site: cst.Call, argument: cst.Arg, function: str, context: Context
) -> Report:
    """At the call that hands a converting helper a device tensor (``imshow(images[i])``)."""
    given = context.code(argument.value)
    callee = context.code(site.func)
    converts = f"`{function}()`" if function else "`.numpy()`"
    message = (
        f"`{given}` is on the device and `{callee}()` converts it to NumPy ({converts} on "
        f"`{context.code(use.receiver)}`): pass `{given}.cpu()`"
    )
    if not isinstance(argument.value, SIMPLE):
        return Report(site, message)
    # unsafe: the helper may also use the tensor with device tensors
    edit = NodeEdit(argument.value, ".cpu()", "after")
    return Report(site, message, FixSpec((edit,), safe=False, description="insert .cpu()"))


def _a_sequence(use: NumpyUse) -> bool:
    """What is converted is a list or tuple of tensors (``bn = [i[0] for i in losses]``), not a
    tensor: it has no ``.cpu()``."""
    value = use.value
    if value.items is not None or value.source == APPENDED:
        return True
    name = dotted(use.receiver)
    if value.binding is None or name is None:
        return False
    bound = assigned_value(value.binding, name)
    return isinstance(bound, cst.List | cst.ListComp | cst.Tuple | cst.GeneratorExp)


def _on_device_part(
    node: cst.BaseExpression, value: Value
) -> tuple[cst.BaseExpression, Value] | None:
    """The argument itself when it is on the device, or the first device tensor among the
    elements of a list or tuple display that mixes them with numbers (``[loss.item(), acc *
    100]``: NumPy converts each element)."""
    if value.source == APPENDED:
        return None  # a list filled by appends: _numpy_lists.py names the append
    if value.is_tensorish and value.place is Place.DEVICE:
        return node, value
    if value.items is None or not isinstance(node, cst.List | cst.Tuple):
        return None
    if len(node.elements) != len(value.items):
        return None
    for element, item in zip(node.elements, value.items, strict=True):
        if item.is_tensorish and item.place is Place.DEVICE and not item.by_name:
            return element.value, item
    return None


def _first_argument(call: cst.Call) -> cst.BaseExpression | None:
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[0].value if positional else None
