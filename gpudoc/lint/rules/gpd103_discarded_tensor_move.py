"""GPD103: a tensor's .to()/.cuda() whose result is thrown away."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import CallEvent, ItemEvent, Semantic, StatementEvent
from gpudoc.lint.analysis.expressions import string_value
from gpudoc.lint.analysis.names import blocks_of, dotted, keyword
from gpudoc.lint.analysis.values import COLLATED, Kind, Place
from gpudoc.lint.cells import MARKER
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report, Rule
from gpudoc.lint.rules._helpers import any_on_device
from gpudoc.lint.visit import walk


@dataclass(frozen=True)
class DiscardedMove:
    statement: cst.Expr
    call: cst.Call
    receiver: cst.BaseExpression
    method: str
    line: cst.SimpleStatementLine | None = None
    """The line that holds the statement (None in a one-line block: ``if c: x.cuda()``)."""
    bound: bool = False
    """The receiver is a tensor by what bound it (a factory, an operation, a function's
    return), not only by a conventional name."""
    scope: cst.FunctionDef | None = None
    """The function the statement is in (None at module level)."""
    to_host: bool = False
    """A move to the CPU: ``.cpu()``, or a ``.to()`` whose result is on the host."""
    loop: cst.BaseExpression | None = None
    """For a loop variable (``for input in inputs: input.to(device)``): what it iterates."""
    on_device: bool = False
    """The receiver is already on the device on every path (a placed module's output)."""


class DiscardedTensorMove(Rule):
    """A tensor's `.to()` / `.cuda()` / `.half()` result is discarded.

    ## What it does
    Finds expression statements such as `x.to(device)` or `mask.cuda()` whose receiver is a
    tensor (bound from a torch factory, a tensor operation, a batch or an element of one such as
    `x = batch[0]`, or a parameter named like one: `x`, `images`, `labels`). Also a collective
    that works in place (`dist.all_reduce`, `reduce`, `broadcast`) given a moved copy of a
    named tensor (`dist.all_reduce(total.cuda())`): the result lands in the copy, and `total`
    is never reduced.

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
    Objects whose `.to()` works in place (modules, a tokenizer's `BatchEncoding`, a PyTorch
    Geometric graph: a data set's, a loader's batch, or a name whose graph attributes
    `data.edge_index` / `data.x` are read in a file that imports `torch_geometric`) are never
    typed as tensors, so they are not reported; nor is a subscript or name that may hold a module
    (`ckpt["model"].half()`, `models[name].cuda()`, `self.encoder.to(device)`). The last
    statement of a notebook cell is not reported: Jupyter shows its value (`m.to(device)` to show
    the moved tensor), nor is `x.type()` with no argument, which reads the type's name.
    In a file that places nothing itself, a discarded move is reported when it converts the
    dtype, or moves a tensor the file made to the device (`t.to(batch.device)`: accelerate,
    Lightning or a caller placed `batch`); a parameter typed only by its name (`x.to(dev)` in
    a library function) is not, and neither is a move to the CPU there. A discarded dtype
    conversion of a name that its function (or, at module level, the file) never reads again
    is not reported: the dtype it keeps meets nothing. Nor is a discarded move to the CPU whose
    next read moves the tensor itself (`adp.to(cpu)`, then `adp = adp.cpu().numpy()`): nothing
    is lost. Nor is a discarded move to the device of a tensor the analysis knows is already
    there on every path (`q = reward + critic(next_obs)`, then `q.to(device)`). A loop variable
    is typed by its name (`for input in train_inputs: input.to(dev)`),
    unless it is one letter or the loop walks what may hold modules (`for head in heads`); its
    finding has no fix, since rebinding the loop variable leaves the container as it was.

    ## Fix safety
    The fix assigns the result back (`x = x.to(device)`). It is safe only when the move goes to
    the device and the next statement that reads the name passes it to a module on the device
    or combines it with a device tensor: there the unfixed code already fails on a GPU, and the
    fix is what makes it run. Everywhere else it is unsafe, because making the move effective
    changes what runs: `x.cuda()` assigned back in a test whose model stays on the CPU breaks
    the test on every GPU machine, and a dtype conversion assigned back (`x = x.half()`) can
    create a dtype mismatch (`expected scalar type Half but found Float`) that was not there.
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
        # a checkpoint's module converts in place
        """\
import torch
def restore(data, device):
    data["model"].to(device)
    return data
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
        # the model stays on the CPU: making the move effective would break the test on a GPU
        Invalid(
            """\
import torch
def test_forward():
    model = torch.nn.Linear(4, 2)
    x = torch.randn(3, 4)
    x.cuda()
    assert model(x).shape == (3, 2)
""",
            line=5,
            col=5,
            expected_replacement="""\
import torch
def test_forward():
    model = torch.nn.Linear(4, 2)
    x = torch.randn(3, 4)
    x = x.cuda()
    assert model(x).shape == (3, 2)
""",
        ),
    )

    EVENTS = ("statement", "call", "item")

    def __init__(self) -> None:
        super().__init__()
        self.moves: list[DiscardedMove] = []
        self.tensor_items: set[tuple[int, str]] = set()
        """(function, ``d[key]``) of items the function stored a tensor in
        (``instance[key] = torch.tensor(ids)``)."""
        self.reduced_copies: list[tuple[cst.Call, cst.Call]] = []
        """(the collective, the move) of ``dist.all_reduce(total.cuda())``: the result lands
        in a copy nothing keeps."""
        self.device_calls: dict[int, list[str | None]] = {}
        """id of a call that needs device tensors (a placed module, or a function combining a
        device tensor) -> the plain names passed to it."""

    def on_item(self, event: ItemEvent, semantic: Semantic) -> None:
        text = _item_text(event.target)
        if text is not None and event.value is not None and event.value.is_tensorish:
            self.tensor_items.add((id(semantic.function_node), text))

    def on_statement(self, event: StatementEvent, semantic: Semantic) -> None:
        receiver, call = event.receiver, event.node.value
        if receiver is None or not isinstance(call, cst.Call):
            return
        func = call.func
        if not isinstance(func, cst.Attribute):
            return
        if func.attr.value == "type" and not call.args:
            return  # `x.type()` reads the type's name: nothing to assign back
        # a whole batch of a loader whose collate_fn builds it may be an object whose `.to()`
        # moves it in place (a BatchEncoding, a batch class returning `self`)
        collated = receiver.kind is Kind.BATCH and receiver.source == COLLATED
        tensor = receiver.is_tensorish and not receiver.inplace_to and not collated
        loop = _tensor_loop(func.value, semantic.function_node)
        element = (
            _tensor_subscript(func.value)
            or (id(semantic.function_node), _item_text(func.value)) in self.tensor_items
            or _bound_to_element(func.value, semantic.function_node)
            or loop is not None
        )
        if not isinstance(func.value, cst.Name | cst.Attribute | cst.Subscript):
            return  # `torch.zeros(1).cuda()`: a temporary no name holds (CUDA's context made)
        if tensor or element:
            bound = tensor and not receiver.by_name
            method = func.attr.value
            to_host = method == "cpu" or (
                method == "to"
                and event.value.place is Place.HOST
                and receiver.place is not Place.HOST
            )
            move = DiscardedMove(
                event.node, call, func.value, method, event.line, bound,
                semantic.function_node, to_host, loop, receiver.place is Place.DEVICE,
            )  # fmt: skip
            self.moves.append(move)

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        reduced = _reduced_copy(event)
        if reduced is not None:
            self.reduced_copies.append((event.node, reduced))
        module, args = event.module, event.args
        device_module = module is not None and module.is_device_module
        tensors = sum(1 for value in args if value.is_tensorish)
        mixed = event.combines and tensors >= 2 and any_on_device(args)
        if device_module or mixed:
            self.device_calls[id(event.node)] = [dotted(arg.value) for arg in event.node.args]

    def finish(self, context: Context) -> Iterator[Report]:
        for collective, copy in self.reduced_copies:
            func = cst.ensure_type(copy.func, cst.Attribute)
            shown, method = context.code(func.value), func.attr.value
            called = (dotted(collective.func) or "").rsplit(".", 1)[-1]
            message = (
                f"`{called}` works in place on `{shown}.{method}(...)`, a new tensor nothing "
                f"keeps: `{shown}` itself is never reduced (move it first: `{shown} = "
                f"{shown}.{method}(...)`, then pass `{shown}`)"
            )
            yield Report(copy, message)
        uses: _NextUse | None = None
        for move in self.moves:
            if not context.flags.places and not _matters_anywhere(move, context):
                continue
            if _may_hold_module(move.receiver):
                continue  # `ckpt["model"].half()`, `models[name].cuda()`: modules convert in place
            if _converts_dtype(move, context) and _never_read(move, context):
                continue  # `degrees.float()`, `degrees` unused: the dtype it keeps meets nothing
            if move.on_device and not move.to_host and _moves_to_device(move, context):
                continue  # `q = r + model(x)`, then `q.to(device)`: already there, nothing lost
            if not move.bound and _graph_batch(move, context):
                continue  # a PyTorch Geometric `Batch` (`data.edge_index` read): moved in place
            uses = uses or _NextUse(context.module, self.device_calls)
            if uses.shown_by_its_cell(move):
                continue  # a notebook cell shows it as its result
            if (move.to_host or _to_cpu(move)) and uses.moved_again(move):
                continue  # `adp.to(cpu)` then `adp = adp.cpu().numpy()`: nothing was lost
            shown = context.code(move.receiver)
            message = (
                f"`{shown}.{move.method}(...)` returns a new tensor and this statement discards "
                f"it: tensors do not move in place (write `{shown} = {shown}.{move.method}(...)`)"
            )
            fix = None
            if move.loop is not None:
                # rebinding the loop variable would leave the container as it was
                held = context.code(move.loop)
                message = (
                    f"`{shown}.{move.method}(...)` returns a new tensor and this statement "
                    f"discards it: tensors do not move in place, and `{held}` keeps the "
                    f"unmoved ones (build the moved ones: `[{shown}.{move.method}(...) for "
                    f"{shown} in {held}]`)"
                )
            elif isinstance(move.receiver, cst.Name | cst.Attribute | cst.Subscript):
                uses = uses or _NextUse(context.module, self.device_calls)
                safe = _moves_to_device(move, context) and uses.needs_device(move)
                edit = NodeEdit(move.call, f"{shown} = ", "before")
                fix = FixSpec((edit,), safe=safe, description="assign the result back")
            yield Report(move.statement, message, fix)


IN_PLACE_COLLECTIVES = frozenset(
    f"torch.distributed.{name}" for name in ("all_reduce", "reduce", "broadcast")
)
"""Collectives that write their result into the tensor they are given."""


def _reduced_copy(event: CallEvent) -> cst.Call | None:
    """The move in ``dist.all_reduce(total.cuda())``: the collective's tensor is a moved copy
    of a named tensor, so its result is lost with the copy."""
    if event.qualified not in IN_PLACE_COLLECTIVES or not event.node.args:
        return None
    tensor = keyword(event.node, "tensor") or event.node.args[0]
    if tensor.keyword is not None and tensor.keyword.value != "tensor":
        return None
    move = tensor.value
    if not isinstance(move, cst.Call) or not isinstance(move.func, cst.Attribute):
        return None
    named = isinstance(move.func.value, cst.Name | cst.Attribute | cst.Subscript)
    return move if named and move.func.attr.value in ("to", "cuda") else None


MODULE_KEY = re.compile(
    r"(model|net|module|encoder|decoder|backbone|generator|discriminator|head|policy|critic"
    r"|teacher|student|ema|layer|block|expert)s?$",
    re.I,
)
"""Names and keys that hold modules: ``ckpt["model"]``, ``models[name]``, ``self.encoder``."""


def _may_hold_module(receiver: cst.BaseExpression) -> bool:
    if isinstance(receiver, cst.Subscript):
        base = (dotted(receiver.value) or "").rsplit(".", 1)[-1]
        keys = [
            string_value(element.slice.value) or dotted(element.slice.value) or ""
            for element in receiver.slice
            if isinstance(element.slice, cst.Index)
        ]
        return bool(MODULE_KEY.search(base)) or any(MODULE_KEY.search(key) for key in keys)
    name = (dotted(receiver) or "").rsplit(".", 1)[-1]
    return bool(name) and bool(MODULE_KEY.search(name))


def _moves_to_device(move: DiscardedMove, context: Context) -> bool:
    """``.to(device)`` / ``.cuda()``: a move to the device, not a dtype conversion or ``.cpu()``."""
    if move.method == "cuda":
        return True
    if move.method != "to" or _converts_dtype(move, context):
        return False
    return any(arg.keyword is None or arg.keyword.value == "device" for arg in move.call.args)


class _NextUse:
    """Whether the statement after a discarded move that reads the name needs it on the device:
    it is passed to a placed module, or combined with a device tensor."""

    def __init__(self, module: cst.Module, calls: dict[int, list[str | None]]) -> None:
        self.blocks = _line_blocks(module)
        self.module = module
        self.calls = calls

    def shown_by_its_cell(self, move: DiscardedMove) -> bool:
        """The last statement of a notebook cell (``m.to(device)`` to show the moved tensor):
        Jupyter displays its value, the cell's point, not a move the author forgot."""
        body = list(self.module.body)
        if move.line is None or move.line not in body:
            return False
        index = body.index(move.line) + 1
        if index == len(body):  # the last cell's last statement, in a notebook
            return any(_is_cell_marker(line) for line in self.module.header)
        return any(_is_cell_marker(line) for line in body[index].leading_lines)

    def needs_device(self, move: DiscardedMove) -> bool:
        found = self.next_read(move)
        if found is None:
            return False
        name = dotted(move.receiver)
        return any(name in self.calls.get(id(call), ()) for call in found.calls)

    def moved_again(self, move: DiscardedMove) -> bool:
        """The next statement that reads the name moves it itself (``x.cpu()``, ``x.to(...)``)."""
        found = self.next_read(move)
        return found is not None and found.moved

    def next_read(self, move: DiscardedMove) -> _Reads | None:
        """How the first statement after the move's line (in its block) that reads the name
        reads it; None when none does."""
        name = dotted(move.receiver)
        line = move.line
        block = self.blocks.get(id(line)) if line is not None else None
        body = getattr(block, "body", None)
        if name is None or line is None or not isinstance(body, Sequence) or line not in body:
            return None
        for statement in body[list(body).index(line) + 1 :]:
            found = _Reads(name)
            walk(statement, found)
            if found.calls or found.other:
                return found
        return None


def _line_blocks(module: cst.Module) -> dict[int, cst.Module | cst.IndentedBlock]:
    """The block (the module, or an indented block) that holds each statement line, by the
    line's id: statements only, no expression is visited."""
    found: dict[int, cst.Module | cst.IndentedBlock] = {}
    holders: list[cst.Module | cst.IndentedBlock] = [module]
    while holders:
        holder = holders.pop()
        compound: list[cst.CSTNode] = []
        for statement in holder.body:
            found[id(statement)] = holder
            if not isinstance(statement, cst.SimpleStatementLine):
                compound.append(statement)
        while compound:
            node = compound.pop()
            holders += [part for part in blocks_of(node) if isinstance(part, cst.IndentedBlock)]
            if isinstance(node, cst.If) and isinstance(node.orelse, cst.If):
                compound.append(node.orelse)  # an `elif`
    return found


class _Reads(cst.CSTVisitor):
    """The calls that take ``name`` as an argument, and whether it is read anywhere else."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.calls: list[cst.Call] = []
        self.other = False

        self.moved = False
        """It is read as the receiver of a move: ``x.cpu()``, ``x.to(device)``."""

    def visit_Call(self, node: cst.Call) -> None:
        if any(dotted(arg.value) == self.name for arg in node.args):
            self.calls.append(node)
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("cpu", "to", "cuda"):
            self.moved |= dotted(func.value) == self.name

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name.split(".")[0]:
            self.other = True


def _item_text(node: cst.BaseExpression) -> str | None:
    """``instance[key]``, ``d["ids"]``: an item of a named container at a named or written
    key, as text; None for anything else (a slice, a computed key)."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1:
        return None
    base, index = dotted(node.value), node.slice[0].slice
    if base is None or not isinstance(index, cst.Index):
        return None
    key = dotted(index.value)
    if key is None:
        written = string_value(index.value)
        key = None if written is None else repr(written)  # `d["ids"]` is not `d[ids]`
    return None if key is None else f"{base}[{key}]"


def _tensor_subscript(node: cst.BaseExpression) -> bool:
    """``batch["x"].to(device)`` as a statement: an element of a batch, never a module."""
    if not isinstance(node, cst.Subscript):
        return False
    base = (dotted(node.value) or "").rsplit(".", 1)[-1]
    return base.lower() in ("batch", "data", "inputs", "sample", "samples", "tensors", "x")


def _bound_to_element(node: cst.BaseExpression, function: cst.FunctionDef | None) -> bool:
    """``x`` of ``x = batch[0]``, its one binding in the function: an element of a batch."""
    if not isinstance(node, cst.Name) or function is None:
        return False
    bindings = _Bindings(node.value)
    walk(function.body, bindings)
    if len(bindings.values) != 1:
        return False
    value = bindings.values[0]
    return _tensor_subscript(value) and not _may_hold_module(value)  # not `batch["model"]`


def _tensor_loop(
    node: cst.BaseExpression, function: cst.FunctionDef | None
) -> cst.BaseExpression | None:
    """``train_inputs`` of ``for input in train_inputs: input.to(device)``: the loop variable
    is named like a tensor, the loop is its one binding, and what it iterates holds no modules
    (``for h in self.heads``)."""
    if not isinstance(node, cst.Name) or function is None:
        return None
    if not api.TENSOR_NAME.match(node.value) or len(node.value) == 1:
        return None  # one letter (`h`, `m`) says too little
    bindings = _Bindings(node.value)
    walk(function.body, bindings)
    if len(bindings.values) != 1 or len(bindings.loops) != 1:
        return None
    return None if _may_hold_module(bindings.loops[0]) else bindings.loops[0]


class _Bindings(cst.CSTVisitor):
    """The values a function binds to a plain name (None for a binding that is no plain
    assignment: a loop, an unpacking, an augmented assignment)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.values: list[cst.BaseExpression] = []
        self.loops: list[cst.BaseExpression] = []
        """What the loops that bind the name itself iterate over (``for name in ...``)."""

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name) and target.target.value == self.name:
                self.values.append(node.value)
            elif _binds(target.target, self.name):
                self.values.append(cst.Name("None"))

    def visit_For(self, node: cst.For) -> None:
        if _binds(node.target, self.name):
            self.values.append(cst.Name("None"))
        if isinstance(node.target, cst.Name) and node.target.value == self.name:
            self.loops.append(node.iter)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if _binds(node.target, self.name):
            self.values.append(cst.Name("None"))


def _binds(target: cst.BaseExpression, name: str) -> bool:
    if isinstance(target, cst.Name):
        return target.value == name
    if isinstance(target, cst.Tuple | cst.List):
        return any(_binds(element.value, name) for element in target.elements)
    return False


def _matters_anywhere(move: DiscardedMove, context: Context) -> bool:
    """In a file that places nothing itself: a discarded dtype conversion, or a move to the
    device of a tensor this file made (``t.to(batch.device)``, where a framework or a caller
    placed ``batch``). A parameter typed only by its name may be an object whose ``.to()``
    works in place, and a move to the CPU of the file's own tensors changes nothing."""
    if _converts_dtype(move, context):
        return True
    return move.bound and _moves_to_device(move, context) and not _to_cpu(move)


GRAPH_ATTRIBUTES = frozenset(
    {"edge_index", "edge_attr", "edge_weight", "batch", "ptr", "num_graphs", "pos", "x", "y"}
)
"""Attributes of PyTorch Geometric's ``Data`` and ``Batch``, which no tensor has."""


def _graph_batch(move: DiscardedMove, context: Context) -> bool:
    """``data.to(device)`` then ``data.edge_index`` in a file that imports PyTorch Geometric:
    ``Data.to()`` moves the graph's tensors in place and returns the graph."""
    name = dotted(move.receiver)
    if name is None or "." in name or not _imports_graph_library(context.module):
        return False
    reads = _AttributeReads(name)
    walk(move.scope or context.module, reads)
    return not reads.attributes.isdisjoint(GRAPH_ATTRIBUTES)


def _imports_graph_library(module: cst.Module) -> bool:
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.ImportFrom) and small.module is not None:
                if (dotted(small.module) or "").split(".")[0] == "torch_geometric":
                    return True
            elif isinstance(small, cst.Import):
                named = (dotted(alias.name) or "" for alias in small.names)
                if any(name.split(".")[0] == "torch_geometric" for name in named):
                    return True
    return False


class _AttributeReads(cst.CSTVisitor):
    """The attributes read of a plain name (``data.x`` -> ``x``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.attributes: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == self.name:
            self.attributes.add(node.attr.value)


def _to_cpu(move: DiscardedMove) -> bool:
    """``.to("cpu")``, ``.to(device="cpu", non_blocking=True)``."""
    for arg in move.call.args:
        if arg.keyword is None or arg.keyword.value == "device":
            text = string_value(arg.value)
            return text is not None and text.strip().lower().startswith("cpu")
    return False


def _converts_dtype(move: DiscardedMove, context: Context) -> bool:
    """A CPU-only file: only a discarded dtype conversion changes behaviour."""
    if move.method in ("cpu", "cuda"):
        return False
    if move.method != "to":
        return True
    args = "".join(context.code(arg) for arg in move.call.args)
    return "dtype" in args or "torch." in args


def _never_read(move: DiscardedMove, context: Context) -> bool:
    """The receiver is a plain name that its scope (the function, or the whole file at module
    level) reads nowhere but in the discarded statement itself."""
    if not isinstance(move.receiver, cst.Name):
        return False
    reads = _NameReads(move.receiver.value)
    walk(move.scope.body if move.scope is not None else context.module, reads)
    return all(read is move.receiver for read in reads.found)


class _NameReads(cst.CSTVisitor):
    """The reads of a name (not the targets that bind it)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.targets: set[cst.Name] = set()
        self.found: list[cst.Name] = []

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if isinstance(node.target, cst.Name):
            self.targets.add(node.target)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name and node not in self.targets:
            self.found.append(node)


def _is_cell_marker(line: cst.EmptyLine) -> bool:
    """The comment cells.py puts before each notebook cell's code."""
    return line.comment is not None and line.comment.value.startswith(CELL_MARKER)


CELL_MARKER = MARKER.split("{", 1)[0].rstrip()
