"""GPD302: an optimizer's state loaded before its model is moved to the device."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis.events import (
    BindingEvent,
    CallEvent,
    Semantic,
    StatementEvent,
    WalkedCallEvent,
)
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.values import Kind, Place
from gpudoc.lint.rule import Context, Invalid, Report, Rule
from gpudoc.lint.rules._helpers import MOVES, Optimizers, moved_by_statement


class OptimizerStateBeforePlacement(Rule):
    """`optimizer.load_state_dict(...)` before `model.to(device)`: the state stays on the CPU.

    ## What it does
    Finds `optimizer.load_state_dict(...)` for an optimizer built on `model.parameters()` while
    `model` is still on the host, followed later in the same scope by moving `model` to the
    device (`model.to(device)`, `model = model.cuda()`).

    ## Why is this bad?
    `load_state_dict` casts the loaded state (SGD's momentum, Adam's `exp_avg` and
    `exp_avg_sq`) to the device the parameters are on *at that moment*: the CPU. Moving the model
    afterwards moves the parameters but not the optimizer's state, and the first
    `optimizer.step()` on the GPU fails with `Expected all tensors to be on the same device`.
    Resuming from a checkpoint is where this appears, and only on the GPU machine.

    ## Example
    ```python
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.load_state_dict(checkpoint["optimizer"])
    model.to(device)
    ```

    ## Use instead
    ```python
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.load_state_dict(checkpoint["optimizer"])
    ```

    A model moved by a function called after the load (`place(model, device)`, a `train(model,
    optimizer)` that starts with `model = model.cuda()`) moves in place: the load came first.

    Also finds an optimizer that creates its state in its constructor (`Adagrad`, whose
    `state_sum` is made at once) built before its model is moved (pytorch/pytorch#7321).

    ## Known problems
    An optimizer built from parameter groups (`[{"params": model.get_backbone_params()}, {"params":
    model.head.parameters(), "lr": ...}]`) belongs to the model whose parameters, methods or
    submodules the groups name; groups of several models belong to none. A helper
    that restores the state (`load_checkpoint(path, model, optimizer)`, in this file or another
    one of the project) is reported at its call. The project's own optimizer classes (a
    subclass of `torch.optim.Optimizer`, as transformers' `AdamW` was) are optimizers too.
    An optimizer built again (`optimizer = optim.Adam(...)`) before anything steps it or hands
    it on is not reported: the restored state never meets a step.
    """

    CODE = "GPD302"
    NAME = "optimizer-state-before-placement"
    SUMMARY = "optimizer.load_state_dict before the model is moved leaves its state on the CPU"
    PLACEMENT = False
    VALID = (
        """\
import torch
import torch.nn as nn
model = nn.Linear(4, 2).to("cuda")
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(torch.load("opt.pt", map_location="cpu"))
""",
        """\
import torch
import torch.nn as nn
model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(torch.load("opt.pt"))
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
import torch.nn as nn
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2)
optimizer = torch.optim.Adam(model.parameters())
optimizer.load_state_dict(torch.load("opt.pt", map_location="cpu"))
model.to(device)
""",
            line=6,
            col=1,
        ),
        Invalid(
            """\
import torch
import torch.nn as nn
def resume(path):
    net = nn.Linear(4, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    opt.load_state_dict(torch.load(path, map_location="cpu"))
    net = net.cuda()
    return net, opt
""",
            line=6,
            col=5,
        ),
    )

    EVENTS = ("binding", "call", "statement", "walked")

    def __init__(self) -> None:
        super().__init__()
        self.optimizers = Optimizers()
        self.loaded: dict[int, dict[str, tuple[cst.Call, str]]] = {}
        """scope -> optimizer name -> its ``load_state_dict`` call (or the call of the helper
        that does it) and the module it was built for, while that module is not placed yet."""
        self.early: list[tuple[cst.Call, str, str, cst.CSTNode]] = []
        """(the load, the optimizer, the module, the later move of the module)."""
        self.unused: dict[int, tuple[int, str, bool]] = {}
        """Index in ``early`` -> (scope, optimizer name, whether the move was in a branch) while
        nothing has used that optimizer since the move (``optimizer.step()``, ``train(net,
        optimizer)``)."""
        self.rebuilt: set[int] = set()
        """Indexes in ``early`` whose optimizer was built again before any use: its restored
        state never meets a step."""
        self.in_helpers: list[tuple[int, str]] = []
        """Loads inside a function walked for a call: (the walk's step, the module the
        optimizer was built for where the caller built it)."""

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        """``model = model.cuda()`` places it; ``optimizer = Adam(model.parameters())``."""
        for index, (scope, optimizer, branched) in list(self.unused.items()):
            # `optimizer = optim.Adam(...)` again, never stepped; not when only a branch
            # builds it again (`if args.reset_optimizer:`): the other path steps the old one
            wide = branched or not semantic.in_branch
            if scope == semantic.scope_id and optimizer == event.name and wide:
                self.rebuilt.add(index)
                del self.unused[index]
        value, previous = event.value, event.previous
        module_before = previous is not None and previous.kind is Kind.MODULE
        placed_now = previous is not None and not previous.is_device_module
        if module_before and placed_now and value.is_device_module:
            self.placed(event.name, event.statement, semantic)
        self.optimizers.note(event, semantic)
        value = event.value
        call = _eager_state(event.assigned) if value.kind is Kind.OPTIMIZER else None
        if call is not None and value.source:
            # `Adagrad(model.parameters())` makes its state now, on the parameters' device
            module = semantic.lookup(value.source)
            if module is not None and module.kind is Kind.MODULE and not module.is_device_module:
                self.loaded.setdefault(semantic.scope_id, {})[f"{event.name}="] = (
                    call,
                    value.source,
                )

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        if self.unused:
            self.note_use(event, semantic)
        receiver, func = event.receiver, event.node.func
        if event.qualified is not None or receiver is None or not isinstance(func, cst.Attribute):
            return
        name = dotted(func.value)
        if name is None:
            return
        if receiver.kind is Kind.OPTIMIZER and event.method == "load_state_dict":
            # torch casts the state to the parameters' device now: a module placed after
            # this leaves the state behind
            built = self.optimizers.get(semantic, name)
            if built is None and semantic.walked_for_call and receiver.source:
                # `load_checkpoint(path, model, optimizer)`: judged where it was called
                self.in_helpers.append((semantic.step, receiver.source))
                return
            module = semantic.lookup(built[0]) if built is not None else None
            if built is not None and (module is None or not module.is_device_module):
                self.loaded.setdefault(semantic.scope_id, {})[name] = (event.node, built[0])
        elif event.method in MOVES and receiver.kind is Kind.MODULE:
            # `net.to(device).eval()`: a module moves in place, whatever the chain does next
            result = event.result
            placed = result.kind is Kind.MODULE and result.place is Place.DEVICE
            if placed and receiver.place is not Place.DEVICE:
                self.placed(name, event.node, semantic)

    def note_use(self, event: CallEvent, semantic: Semantic) -> None:
        """The restored optimizer stepped or handed on after the move: its state meets a step."""
        func = event.node.func
        names = {dotted(arg.value) for arg in event.node.args}
        if isinstance(func, cst.Attribute):
            names.add(dotted(func.value))
        for index, (scope, optimizer, _branched) in list(self.unused.items()):
            if scope == semantic.scope_id and optimizer in names:
                del self.unused[index]

    def on_statement(self, event: StatementEvent, semantic: Semantic) -> None:
        """``model.to(device)`` as a statement; or ``train(model, loader, optimizer)`` whose
        body moved the model in place (``model = model.cuda()``) after its state was loaded."""
        for _, built in list(self.loaded.get(semantic.scope_id, {}).values()):
            held = semantic.lookup(built)
            if held is not None and held.is_device_module and event.line is not None:
                self.placed(built, event.line, semantic)
        receiver = event.receiver
        if receiver is None or receiver.kind is not Kind.MODULE or event.line is None:
            return
        name = moved_by_statement(event)
        if name is not None:
            self.placed(name, event.line, semantic)

    def on_walked(self, event: WalkedCallEvent, semantic: Semantic) -> None:
        """A helper (of this file or another) that restored an optimizer's state: its call is
        the load, in the caller's scope, when the optimizer's module is still on the host."""
        inside = [module for step, module in self.in_helpers if step > event.start]
        self.in_helpers = [item for item in self.in_helpers if item[0] <= event.start]
        for module in inside:
            held = semantic.lookup(module)
            if held is not None and held.kind is Kind.MODULE and not held.is_device_module:
                name = dotted(event.call.func) or "the helper"
                self.loaded.setdefault(semantic.scope_id, {})[f"{name}()"] = (event.call, module)

    def placed(self, module: str, statement: cst.CSTNode, semantic: Semantic) -> None:
        loaded = self.loaded.get(semantic.scope_id, {})
        for optimizer, (load, built) in list(loaded.items()):
            if built == module:
                self.early.append((load, optimizer, module, statement))
                self.unused[len(self.early) - 1] = (
                    semantic.scope_id,
                    optimizer,
                    semantic.in_branch,
                )
                del loaded[optimizer]

    def finish(self, context: Context) -> Iterator[Report]:
        for index, (load, optimizer, module, move) in enumerate(self.early):
            if index in self.rebuilt:
                continue  # built again before any step: the restored state is never used
            moved = context.code(move).strip()
            if optimizer.endswith("="):
                message = (
                    f"`{context.code(load.func)}` creates its state when it is built, while "
                    f"`{module}` is still on the host, and `{moved}` moves the parameters only "
                    "later: the state stays on the CPU and the first step on the GPU fails "
                    "('Expected all tensors to be on the same device'); move the model first"
                )
                yield Report(load, message)
                continue
            what = f"`{optimizer}.load_state_dict`"
            if optimizer.endswith("()"):
                what = f"`{optimizer[:-2]}(...)` restores an optimizer's state and"
            message = (
                f"{what} runs while `{module}` is still on "
                f"the host, and `{moved}` moves it only later: the "
                "loaded state stays on the CPU and the first step on the GPU fails ('Expected "
                "all tensors to be on the same device'); move the model first"
            )
            yield Report(load, message)


EAGER_STATE = frozenset({"Adagrad"})
"""Optimizers that create their state in the constructor (``state_sum`` of Adagrad), not at the
first step: built before the model moves, that state stays on the CPU."""


def _eager_state(value: cst.BaseExpression | None) -> cst.Call | None:
    """The constructor call ``optim.Adagrad(...)``, when ``value`` (what a binding assigned) is
    one."""
    if isinstance(value, cst.Call) and (dotted(value.func) or "").rsplit(".", 1)[-1] in EAGER_STATE:
        return value
    return None
