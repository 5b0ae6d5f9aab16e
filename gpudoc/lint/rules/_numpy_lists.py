"""GPD202's check of NumPy, matplotlib and scikit-learn on lists of device tensors
(``np.mean(losses)``, ``plt.plot(losses)``), kept in its own
module: the rule class inherits it and reports what it finds along with its own findings."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import BindingEvent, CallEvent, EventKind, Semantic
from gpudoc.lint.analysis.names import dotted, keyword
from gpudoc.lint.analysis.values import Place, Value
from gpudoc.lint.rule import Context, Report, Rule
from gpudoc.lint.rules._helpers import parameter_names

APPENDS = frozenset({"append", "extend", "insert"})
METADATA = frozenset({"shape", "ndim", "size", "squeeze"})
"""NumPy functions that read metadata or dispatch to the tensor: no conversion, no failure."""

Key = tuple[str | None, str]


class NumpyOnDeviceLists(Rule):
    """Follows lists built with ``[...]`` and ``append``: which hold device tensors, and NumPy
    functions called on them. The rule class that inherits this reports the findings."""

    EVENTS: ClassVar[tuple[EventKind, ...]] = ("binding", "call")

    def __init__(self) -> None:
        super().__init__()
        self.lists: dict[Key, cst.Call | None] = {}
        """Lists bound to ``[...]`` -> the first append of a device tensor, if any yet."""
        self.loss_calls: set[cst.Call] = set()
        self.handed: set[tuple[str, str, int, str | None]] = set()
        """(function, list, position, keyword) of a module-level list handed to a function."""
        self.pending: list[tuple[cst.FunctionDef, str, cst.Call, str, cst.Call]] = []
        """Conversions of a parameter named like a module-level list of device tensors."""
        self.losses: set[Key] = set()
        """Names bound to what a loss returned: a 0-dim tensor."""
        self.animators: set[Key] = set()
        """Names bound to a ``d2l.Animator(...)``: its ``add(x, y)`` plots with matplotlib."""

    def is_animator(self, call: cst.Call, semantic: Semantic) -> bool:
        func = call.func
        name = dotted(func.value) if isinstance(func, cst.Attribute) else None
        return name is not None and self.key_in(semantic, name, self.animators)

    @staticmethod
    def key_in(semantic: Semantic, name: str, keys: set[Key]) -> bool:
        return (semantic.function, name) in keys or (None, name) in keys

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        key = (semantic.function, event.name)
        value = event.assigned
        built = semantic.qualify(value.func) if isinstance(value, cst.Call) else None
        if built is not None and built.startswith("d2l.") and built.endswith(".Animator"):
            self.animators.add(key)
        else:
            self.animators.discard(key)
        if value in self.loss_calls:
            self.losses.add(key)
        else:
            self.losses.discard(key)
        if _is_new_list(event):
            self.lists[key] = None
        else:
            self.lists.pop(key, None)

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        self.note_handed(event)
        if _is_loss(event):
            self.loss_calls.add(event.node)
        if event.method in APPENDS and event.qualified is None:
            self.note_append(event, semantic)
            return
        if event.method in AXES_PLOTS and event.qualified is None and _on_axes(event.node):
            self.check_axes_plot(event)
            return
        if event.method == "add" and self.is_animator(event.node, semantic):
            self.check_axes_plot(event)  # d2l's Animator plots each point it is given
            return
        function = _converter(event.qualified or "")
        if function is None:
            return
        for arg in event.node.args:
            name = dotted(arg.value)
            append = self.lists.get(self.key(semantic, name or ""))
            if name is None or append is None:
                continue
            caller = semantic.function_node
            local = (semantic.function, name) in self.lists
            if caller is not None and not local and name in parameter_names(caller):
                # `def plot(rewards)`: the module's `rewards` only if a call hands it over
                self.pending.append((caller, name, event.node, function, append))
                return
            self.report_list(event.node, function, name, append)
            return

    def note_handed(self, event: CallEvent) -> None:
        """``plot(losses)``: a module-level list handed to a function of the file."""
        func = event.node.func
        callee = func.value if isinstance(func, cst.Name) else None
        if callee is None:
            return
        for index, arg in enumerate(event.node.args):
            if isinstance(arg.value, cst.Name) and (None, arg.value.value) in self.lists:
                keyword_name = arg.keyword.value if arg.keyword is not None else None
                self.handed.add((callee, arg.value.value, index, keyword_name))

    def note_append(self, event: CallEvent, semantic: Semantic) -> None:
        func = event.node.func
        name = dotted(func.value) if isinstance(func, cst.Attribute) else None
        key = self.key(semantic, name or "")
        if key not in self.lists or self.lists[key] is not None or not event.args:
            return
        if self.indexes_a_loss(event.node.args[-1].value, semantic):
            return  # `loss[0]` of a reduced loss: a number before PyTorch 0.4, an IndexError since
        if _on_device(event.args[-1]):
            self.lists[key] = event.node

    def indexes_a_loss(self, item: cst.BaseExpression, semantic: Semantic) -> bool:
        """``loss[0]``, ``loss`` bound to what a loss returned (``loss.data[0]`` is a number
        already: expressions.py reads it so)."""
        if not isinstance(item, cst.Subscript) or len(item.slice) != 1:
            return False
        index = item.slice[0].slice
        if not (isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)):
            return False
        name = dotted(item.value) or ""
        return self.key_in(semantic, name, self.losses)

    def check_axes_plot(self, event: CallEvent) -> None:
        """``ax.imshow(frames[0])``: matplotlib turns its data into NumPy arrays (each item of
        a tuple or list display too: ``animator.add(epoch, (None, valid_loss))``)."""
        for arg, value in zip(event.node.args, event.args, strict=True):
            if arg.keyword is not None:
                continue
            shown_node = _device_item(arg.value, value)
            if shown_node is not None:
                shown = self.code(shown_node)
                message = (
                    f"`{_method(event.node)}()` converts `{shown}`, which is on the device, to a "
                    f"NumPy array: it fails with `can't convert cuda:0 device type tensor to "
                    f"numpy`; pass `{shown}.cpu()`"
                )
                self.report(event.node, message)
                return

    def code(self, node: cst.BaseExpression) -> str:
        return dotted(node) or cst.Module([]).code_for_node(node)

    def key(self, semantic: Semantic, name: str) -> Key:
        """This function's list ``name``, else the module's (a list filled by a function)."""
        local = (semantic.function, name)
        return local if local in self.lists else (None, name)

    def check(self, context: Context) -> Iterator[Report]:
        """A parameter named like a module-level list holds that list only where a call of
        the function hands it over (``plot(losses)``, not ``plot(test_rewards)``); the calls
        are all known once the walk is over."""
        for function, name, node, converter, append in self.pending:
            if self.passes_own_list(function, name):
                self.report_list(node, converter, name, append)
        self.pending.clear()
        yield from super().check(context)

    def passes_own_list(self, function: cst.FunctionDef | None, name: str) -> bool:
        """Some call of ``function`` hands it the module's list of that name (``plot(losses)``
        for ``def plot(losses)``)."""
        if function is None:
            return False
        position = parameter_names(function).index(name)
        return any(
            callee == function.name.value
            and arg == name
            and (keyword_name == name or (keyword_name is None and index == position))
            for callee, arg, index, keyword_name in self.handed
        )

    def report_list(self, node: cst.Call, function: str, name: str, append: cst.Call) -> None:
        item = append.args[-1].value if append.args else None
        shown = dotted(item) if item is not None else None
        hint = f"append `{shown}.item()` (or `{shown}.detach().cpu()`)" if shown else "append "
        if not shown:
            hint += "`.item()` or `.detach().cpu()` values"
        message = (
            f"`{function}()` converts `{name}`, a list of device tensors (`{name}.{_method(append)}"
            f"(...)` adds them): NumPy calls `.numpy()` on each item, which fails on the GPU with "
            f"`can't convert cuda:0 device type tensor to numpy`; {hint}"
        )
        self.report(node, message)


LOSS_FUNCTIONS = frozenset(
    {"cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"}
)


def _is_loss(event: CallEvent) -> bool:
    """A loss module (one without weights: ``nn.CrossEntropyLoss()``) or function
    (``F.mse_loss``): it returns a 0-dim tensor unless told not to reduce."""
    module = event.module
    if module is not None:
        built = module.origin if isinstance(module.origin, cst.Call) else None
        return not module.weighted and (built is None or keyword(built, "reduction") is None)
    qualified = event.qualified or ""
    last = qualified.rsplit(".", 1)[-1]
    if not qualified.startswith("torch.nn.functional."):
        return False
    return (last.endswith("_loss") or last in LOSS_FUNCTIONS) and (
        keyword(event.node, "reduction") is None
    )


def _converter(qualified: str) -> str | None:
    """``mean`` for ``numpy.mean``, ``plot`` for ``matplotlib.pyplot.plot``: functions that turn
    their arguments into arrays; None for the rest (``np.shape`` reads metadata)."""
    if qualified.startswith("numpy."):
        function = qualified[6:]
        return function if function in api.NUMPY_CONVERTERS and function not in METADATA else None
    if qualified.startswith(("matplotlib.", "sklearn.")) and qualified not in api.INDEXING_HELPERS:
        return qualified.rsplit(".", 1)[-1]
    if qualified.startswith("d2l.") and qualified.rsplit(".", 1)[-1] in D2L_PLOTS:
        return qualified.rsplit(".", 1)[-1]  # the d2l book's helpers draw with matplotlib
    return None


D2L_PLOTS = frozenset({"plot", "show_images", "show_heatmaps", "show_trace_2d"})
"""Plotting helpers of the d2l package (Dive into Deep Learning) that hand their data to
matplotlib."""


AXES_PLOTS = frozenset(
    [
        *("imshow", "matshow", "plot", "scatter", "hist", "hist2d", "bar", "barh", "step"),
        *("errorbar", "fill_between", "pcolormesh", "contour", "contourf", "boxplot"),
        *("violinplot", "stem", "semilogx", "semilogy", "loglog", "quiver", "hexbin"),
    ]
)
"""Methods of matplotlib Axes that turn their data arguments into NumPy arrays."""


def _on_axes(call: cst.Call) -> bool:
    """``ax.imshow(...)``, ``axs[i].plot(...)``, ``axes[0, 1].scatter(...)``: a method called on
    what is named like matplotlib Axes (``plt.imshow`` is resolved by its import)."""
    node = call.func.value if isinstance(call.func, cst.Attribute) else None
    while isinstance(node, cst.Subscript | cst.Attribute):
        if isinstance(node, cst.Attribute) and node.attr.value.lower().startswith("ax"):
            return True
        node = node.value
    return isinstance(node, cst.Name) and node.value.lower().startswith("ax")


def _method(call: cst.Call) -> str:
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else "append"


def _is_new_list(event: BindingEvent) -> bool:
    """``losses = []``, ``final = [embedding]``, ``list()``: a list its appends fill."""
    value = event.assigned
    if isinstance(value, cst.List):
        return True
    return isinstance(value, cst.Call) and dotted(value.func) == "list" and not value.args


def _device_item(node: cst.BaseExpression, value: Value) -> cst.BaseExpression | None:
    """``node`` when it is on the device, or its element that is (in a tuple or list display)."""
    if _on_device(value):
        return node
    if isinstance(node, cst.Tuple | cst.List) and value.items is not None:
        for element, item in zip(node.elements, value.items, strict=False):
            if _on_device(item):
                return element.value
    return None


def _on_device(value: Value) -> bool:
    return value.is_tensorish and value.place is Place.DEVICE and not value.by_name
