"""GPD104: submodules kept in a plain list or dict."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis.events import (
    BindingEvent,
    ClassEvent,
    ItemEvent,
    Semantic,
    StatementEvent,
)
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.values import Kind
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.rules._class_attrs import InitAttributes, is_module_constructor
from gpudoc.lint.rules._registered_lists import registered_attributes


class ModulesInPlainContainer(Rule):
    """Submodules kept in a plain Python list or dict inside an `nn.Module`.

    ## What it does
    Finds `self.layers = [nn.Linear(...), ...]` (or a list comprehension, a dict, or an empty list
    filled with `.append(nn.Conv2d(...))`) in the `__init__` of an `nn.Module` subclass. Unlike
    the placement rules it also runs in files that place nothing (a model library, a CPU
    script, a LightningModule whose Trainer places it): the modules are never trained or saved
    there either.

    ## Why is this bad?
    PyTorch only registers submodules assigned as attributes or held in `nn.ModuleList` /
    `nn.ModuleDict`. Modules in a plain list are not moved by `model.to(device)`, are missing from
    `model.parameters()` (so they are never trained) and from the `state_dict`. On a GPU the
    forward pass fails with `Input type (torch.cuda.FloatTensor) and weight type
    (torch.FloatTensor) should be the same`.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = [nn.Linear(8, 8) for _ in range(3)]
    ```

    ## Use instead
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
    ```

    A list whose items `__init__` then registers (`self.add_module(...)` in a loop over it) or
    wraps (`self.blocks = nn.ModuleList(self.paths)`) is fine.

    ## Known problems
    Only containers built in `__init__` from recognisable module constructors are checked (also
    through an initialiser that returns the module it is given: `init_(nn.Linear(h, 1))`,
    `layer_init(...)`, `nn.utils.spectral_norm(...)`), and lists of what `__init__` was given,
    moved one by one (`[ph.to(device) for ph in prediction_heads]`), whose items the class
    calls (`for head in self.prediction_heads: head(x)`). Wrapping
    them changes `state_dict` keys, so old checkpoints need `strict=False` or a key mapping.
    """

    CODE = "GPD104"
    PLACEMENT = False  # never trained nor saved, on any device
    NAME = "modules-in-plain-container"
    SUMMARY = "submodules in a plain list/dict are not moved, trained or saved with the model"
    VALID = (
        """\
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
        self.sizes = [8, 16, 32]
net = Net().cuda()
""",
    )
    INVALID = (
        Invalid(
            """\
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [nn.Linear(8, 8) for _ in range(3)]
net = Net().cuda()
""",
            line=5,
            col=9,
        ),
        Invalid(
            """\
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = []
        for _ in range(3):
            self.heads.append(nn.Linear(8, 2))
net = Net().to("cuda")
""",
            line=5,
            col=9,
        ),
    )

    EVENTS = ("class", "binding", "statement", "item")

    def __init__(self) -> None:
        super().__init__()
        self.attrs = InitAttributes()
        self.appended: dict[int, dict[str, cst.Call]] = {}
        """id of a module class -> attr -> a module constructor appended to (or stored in)
        ``self.attr``, a plain list or dict, in ``__init__``."""
        self.attribute_items: dict[int, list[tuple[str, cst.Call, str]]] = {}
        """id of a module class -> (list, append call, attribute appended) in ``__init__``."""

    def on_class(self, event: ClassEvent, semantic: Semantic) -> None:
        if event.module_class is not None:
            self.attrs.add_class(event.module_class)

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        self.attrs.note(event, semantic)

    def on_statement(self, event: StatementEvent, semantic: Semantic) -> None:
        """``self.layers.append(nn.Linear(...))`` in ``__init__``: a plain list of modules."""
        call = event.node.value
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
            return
        method = call.func.attr.value
        if method not in ("append", "extend", "insert") or not call.args:
            return
        name = dotted(call.func.value) or ""
        item = call.args[-1].value
        if not name.startswith("self.") or not _holds_a_module(item, semantic):
            return
        if isinstance(item, cst.Attribute) and semantic.module_class is not None:
            # `self.heads.append(self.head)`: a bug only where a loop rebinds `self.head` (the
            # earlier ones are lost); appended once, the list only keeps a second reference
            # (`self._to_flatten.append(self.rnn)` for `flatten_parameters()`)
            key = id(semantic.module_class)
            self.attribute_items.setdefault(key, []).append((name, call, dotted(item) or ""))
            return
        self.note_module(name, call, semantic)

    def on_item(self, event: ItemEvent, semantic: Semantic) -> None:
        """``self.experts[name] = nn.Linear(...)`` in ``__init__``: a plain dict of modules."""
        name = dotted(event.target.value) or ""
        statement = event.statement
        if not name.startswith("self.") or not isinstance(statement, cst.SimpleStatementLine):
            return
        small = statement.body[0]
        value = small.value if isinstance(small, cst.Assign) else None
        if isinstance(value, cst.Call) and is_module_constructor(value, semantic):
            self.note_module(name, value, semantic)

    def note_module(self, name: str, call: cst.Call, semantic: Semantic) -> None:
        cls = semantic.module_class
        if cls is not None and semantic.in_init:
            self.appended.setdefault(id(cls), {}).setdefault(name[5:], call)

    def finish(self, context: Context) -> Iterator[Report]:
        for cls in self.attrs.classes:
            for name, call, item in self.attribute_items.get(id(cls), []):
                if _rebound_in_loop_with(cls.node, call, item):
                    self.appended.setdefault(id(cls), {}).setdefault(name[5:], call)
            appended = self.appended.get(id(cls), {})
            registered: set[str] | None = None  # read only for a class with a candidate
            for attr in self.attrs.of(cls):
                plain = attr.shape in ("module-list", "module-dict")
                filled = attr.shape in ("empty-list", "empty-dict") and attr.attr in appended
                if not (plain or filled):
                    continue
                if registered is None:
                    registered = registered_attributes(cls.node)
                if attr.attr in registered:
                    continue  # `self.add_module(...)` for each item, or wrapped afterwards
                wrapper = "nn.ModuleDict" if "dict" in attr.shape else "nn.ModuleList"
                message = (
                    f"`self.{attr.attr}` holds submodules in a plain "
                    f"{'dict' if 'dict' in attr.shape else 'list'}: they are not moved by "
                    f"`.to(device)`, trained or saved; use `{wrapper}`"
                )
                yield Report(attr.statement, message)


def _holds_a_module(item: cst.BaseExpression, semantic: Semantic) -> bool:
    """``nn.Linear(...)``, a name bound to one (``layer = nn.Linear(...)``), or a list or tuple
    with one (``[nn.Linear(...), nn.ReLU()]``, appended as a pair)."""
    if isinstance(item, cst.List | cst.Tuple):
        return any(_holds_a_module(element.value, semantic) for element in item.elements)
    name = item.value if isinstance(item, cst.Name) else dotted(item)
    if isinstance(item, cst.Name | cst.Attribute) and name is not None:
        # `layer = nn.Linear(...)`, or `self.assign_pred = self.build(...)` appended each turn
        # of a loop (only the last one is a registered submodule)
        held = semantic.lookup(name)
        return held is not None and held.kind is Kind.MODULE and held.weighted
    return is_module_constructor(item, semantic)


def _rebound_in_loop_with(cls: cst.ClassDef, call: cst.Call, attribute: str) -> bool:
    """A loop of the class's ``__init__`` that both rebinds ``attribute`` and makes ``call``."""
    loops = _Loops()
    cls.visit(loops)
    for loop in loops.found:
        finder = _Contents(call, attribute)
        loop.body.visit(finder)
        if finder.has_call and finder.rebinds:
            return True
    return False


class _Loops(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[cst.For | cst.While] = []

    def visit_For(self, node: cst.For) -> None:
        self.found.append(node)

    def visit_While(self, node: cst.While) -> None:
        self.found.append(node)


class _Contents(cst.CSTVisitor):
    def __init__(self, call: cst.Call, attribute: str) -> None:
        self.call, self.attribute = call, attribute
        self.has_call = self.rebinds = False

    def visit_Call(self, node: cst.Call) -> None:
        self.has_call |= node is self.call

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.rebinds |= dotted(node.target) == self.attribute
