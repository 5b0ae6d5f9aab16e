"""GPD102: a module re-created or reloaded and never moved back to the device."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from gpudoc.lint.analysis.api import CPU_LITERAL, WEIGHTED_LAYERS
from gpudoc.lint.analysis.events import BindingEvent, CallEvent, ClassEvent, Semantic
from gpudoc.lint.analysis.expressions import device_move_target, string_value
from gpudoc.lint.analysis.functions import argument_for
from gpudoc.lint.analysis.names import class_method, dotted, iter_statements, keyword, method_named
from gpudoc.lint.analysis.values import Kind, Place, Value
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report, Rule
from gpudoc.lint.rules._default_device import cuda_by_default
from gpudoc.lint.rules._helpers import all_on_host, any_on_device, input_on_device
from gpudoc.lint.visit import code_ids, walk


@dataclass
class Rebinding:
    """``name = Module()`` where ``name`` held a module placed on the device before."""

    statement: cst.CSTNode
    name: str
    scope: int
    device_name: str | None
    first_use: cst.Call | None = None
    settled: bool = False
    """Moved (``name.to(device)``) before any use: a later rebinding of the name that stays
    stale is not this one's."""
    reloaded: bool = False
    """Its weights restored (``name.load_state_dict(...)``): the trained model, meant for the
    device it was trained on, whatever it is fed."""
    moved_back: bool = False
    """Brought to the CPU on purpose (``model = model.eval().cpu()``), not re-created."""


@dataclass
class ReplacedPart:
    """``model.fc = nn.Linear(...)`` after ``model`` was moved: ``.to()`` moved the old part."""

    statement: cst.CSTNode
    name: str
    root: str
    scope: int
    device_name: str | None
    used: bool = False
    """Called on device tensors before any new move."""
    settled: bool = False
    """Moved again (with the rest of the model) before any such call."""


@dataclass(frozen=True)
class ConditionalMove:
    """A module moved only inside an unrelated ``if``, then used with device data after it."""

    statement: cst.CSTNode
    name: str
    test: cst.BaseExpression
    unmoved: bool = False
    """``statement`` binds the module on the path that leaves it on the host; else it is the
    move of the path that places it."""
    device_name: str | None = None


def _in_else(module: cst.Module, move: ConditionalMove) -> bool:
    """The move sits in the ``else`` (or an ``elif``) of the ``if`` whose test is ``move.test``."""
    finder = _IfOf(move.test)
    walk(module, finder)
    orelse = finder.found.orelse if finder.found is not None else None
    return orelse is not None and id(move.statement) in code_ids(orelse)


class _IfOf(cst.CSTVisitor):
    def __init__(self, test: cst.BaseExpression) -> None:
        self.test = test
        self.found: cst.If | None = None

    def visit_If(self, node: cst.If) -> None:
        if node.test is self.test:
            self.found = node


@dataclass(frozen=True)
class ModuleCall:
    call: cst.Call
    module_name: str
    module: Value
    args: list[tuple[str | None, Value]]
    """The plain name passed (``images``) and the value of each argument."""
    device_name: str | None
    """A name that holds the script's device in this scope, for fixes."""


class UnmovedModule(Rule):
    """A module is used on the device's data, or was on the device, but is never moved there.

    ## What it does
    Finds a model that is re-created or reloaded (`net = Net(); net.load_state_dict(...)`) after
    the same name was moved to the device, and then used without a new `.to(device)`; a part
    replaced after the move (`model.to(device)`, then `model.fc = nn.Linear(512, 10)`: the new
    head is on the host) before the model meets device tensors; and a model that is never moved
    while the tensors it is called on are.

    ## Why is this bad?
    A fresh module lives on the CPU. Called on device tensors it crashes with `Input type
    (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same`; called on
    host tensors it silently evaluates on the CPU, and the GPU sits idle.

    ## Example
    ```python
    net = Net()
    net.to(device)
    ...
    net = Net()
    net.load_state_dict(torch.load(PATH))
    outputs = net(images)
    ```

    ## Use instead
    ```python
    net = Net()
    net.load_state_dict(torch.load(PATH, map_location=device))
    net.to(device)
    outputs = net(images)
    ```

    Also finds a model moved only inside an `if` about something else (pytorch/examples
    `snli/train.py`: `model.to(device)` under `if args.word_vectors:`) and then used with device
    tensors after it; when another path of that `if` builds the model itself and leaves it on
    the host (`if args.pretrained: model = resnet18()`), it is reported there. And a model
    still on the host given to torchsummary's `summary(model, input_size)`, which builds CUDA
    inputs unless it is passed `device="cpu"` (torchinfo's `summary` follows the model and is
    not concerned).

    Also finds a module class whose `__init__` moves itself (`self.cuda()`, `self.to(device)`)
    before it builds its parts (pyro's VAE example: `if use_cuda: self.cuda()`, then
    `self.encoder = Encoder(...)`): `.cuda()` moved only the parameters that existed then, and
    the parts built after it stay on the host.

    ## Known problems
    A model loaded whole with `torch.load` is of unknown placement and not reported, unless the
    checkpoint is mapped to the CPU (`map_location="cpu"`): then what it holds is on the host
    (yolov5's `ckpt["model"]`). A module moved inside a helper function counts as unmoved only
    when the helper's result is discarded.

    ## Fix safety
    Unsafe: it moves the module's parameters. The fix inserts `model.to(device)` after the line
    that binds the module (`model.fc.to(device)` for a replaced part), with the script's own
    device variable; with none, or for an attribute of `self`, there is no fix. An optimizer
    built over the parameters before that line keeps working (`Module.to` moves parameters in
    place).
    """

    CODE = "GPD102"
    NAME = "unmoved-module"
    SUMMARY = "a module re-created, reloaded or fed device tensors is never moved to the device"
    VALID = (
        # eval() returns the module itself: the chain moves `model`
        """\
import torch
import torchvision
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torchvision.models.resnet18()
model.eval().to(device)
out = model(torch.randn(1, 3, 8, 8).to(device))
""",
        """\
import torch
model = torch.nn.Linear(4, 2).to("cuda")
model = torch.nn.Linear(4, 2)
model = model.to("cuda")
out = model(torch.randn(3, 4, device="cuda"))
""",
        """\
import torch
model = torch.nn.Linear(4, 2)
out = model(torch.randn(3, 4))
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
net = torch.nn.Linear(4, 2)
net.to("cuda")
net = torch.nn.Linear(4, 2)
net.load_state_dict(torch.load("w.pt", map_location="cpu"))
out = net(x)
""",
            line=4,
            col=1,
        ),
        Invalid(
            """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2)
if args.word_vectors:
    model.to(device)
x = torch.randn(3, 4, device=device)
out = model(x)
""",
            line=5,
            col=5,
        ),
        Invalid(
            """\
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(4, 2)
x = torch.randn(3, 4).to(device)
out = model(x)
""",
            line=3,
            col=1,
            expected_replacement="""\
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Linear(4, 2)
model.to(device)
x = torch.randn(3, 4).to(device)
out = model(x)
""",
        ),
    )

    EVENTS = ("binding", "call", "class")

    def __init__(self) -> None:
        super().__init__()
        self.rebindings: list[Rebinding] = []
        self.conditional_moves: list[ConditionalMove] = []
        self.module_calls: list[ModuleCall] = []
        self.parts: list[ReplacedPart] = []
        self.summaries: list[tuple[cst.Call, str]] = []
        self.late_parts: list[tuple[cst.CSTNode, str, str]] = []
        """A part ``__init__`` builds after moving ``self``: its statement, its attribute and
        the move's text."""

    def on_class(self, event: ClassEvent, semantic: Semantic) -> None:
        if event.module_class is None or event.module_class.custom_apply:
            return
        init = method_named(event.node, "__init__")
        if init is not None:
            late = _part_after_self_move(init, semantic)
            if late is not None:
                self.late_parts.append(late)

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        """``net = Net()`` where ``net`` held a placed module (the walk marks it stale)."""
        value, previous = event.value, event.previous
        self.moved_again(event.name, semantic)
        if value.kind is not Kind.MODULE or value.place is not Place.HOST or not value.weighted:
            return  # a loss with nothing to move (`nn.BCELoss()`) runs where its inputs are
        if previous is not None and previous.is_device_module:
            rebinding = Rebinding(
                event.statement, event.name, semantic.scope_id, semantic.device_name()
            )
            # `model = model.eval().cpu()`: moved back on purpose, a bug only if fed the device
            rebinding.moved_back = event.assigned is not None and _brought_to_the_cpu(
                event.assigned
            )
            self.rebindings.append(rebinding)
            return
        root, dot, _ = event.name.partition(".")
        held = semantic.lookup(root) if dot and root != "self" else None
        placed = held is not None and held.kind is Kind.MODULE and held.place is Place.DEVICE
        if placed and held is not None and not (held.wrapper or held.managed):
            part = ReplacedPart(
                event.statement, event.name, root, semantic.scope_id, semantic.device_name()
            )
            self.parts.append(part)

    def moved_again(self, name: str, semantic: Semantic) -> None:
        """``model.to(device)``, ``model = model.to(device)`` or ``model.fc.to(device)`` after
        the part was replaced, before the model meets device tensors."""
        for part in self.parts:
            if name in (part.root, part.name) and part.scope == semantic.scope_id and not part.used:
                part.settled = True

    def settle_rebindings(self, name: str, semantic: Semantic) -> None:
        """``model.to(device)`` after ``model = Net()``, before ``model`` is used: that
        rebinding is placed. (Its fix inserts this very move: a fixed file must not report it
        again when a later rebinding of the name is used without a move.)"""
        for rebinding in self.rebindings:
            if rebinding.name == name and rebinding.scope == semantic.scope_id:
                rebinding.settled = rebinding.settled or rebinding.first_use is None

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        module, name, node = event.module, event.module_name, event.node
        func = node.func
        if event.method == "load_state_dict" and isinstance(func, cst.Attribute):
            reloaded = dotted(func.value)
            for rebinding in self.rebindings:
                if rebinding.name == reloaded and not rebinding.settled:
                    rebinding.reloaded = True
        if event.method in ("to", "cuda") and isinstance(func, cst.Attribute):
            self.moved_again(dotted(func.value) or "", semantic)
            self.settle_rebindings(dotted(func.value) or "", semantic)
        if event.qualified in SUMMARIES and not semantic.on_cpu_path:
            self.note_summary(event)
        if module is None or name is None:
            return
        if any(value.place is Place.DEVICE for value in event.args):  # `images.to(device)`
            for part in self.parts:
                if part.root == name and part.scope == semantic.scope_id:
                    part.used = part.used or not part.settled
        arguments = [
            (dotted(arg.value), value) for arg, value in zip(node.args, event.args, strict=True)
        ]
        self.module_calls.append(ModuleCall(node, name, module, arguments, semantic.device_name()))
        self.note_conditional_move(event, module, name, semantic)
        if module.stale and not _uncalled_function(semantic):
            # a new example on the CPU, on purpose (a notebook's next cell); a reloaded model is
            # still reported: trained weights evaluated on the CPU by mistake (the CIFAR-10
            # tutorial's reload). A function nothing here calls, walked on its own at the end,
            # is left out: a library may call it before the name was rebound (lime's
            # `classifier_fn=predict`)
            fed = any_on_device(event.args)
            # `model(data.numpy())`: a module fed NumPy arrays computes on the host
            numpy = any(v.kind is Kind.NDARRAY for v in event.args) and not fed
            fresh = all_on_host(event.args) or numpy
            for rebinding in self.rebindings:
                if rebinding.name != name or rebinding.first_use is not None or rebinding.settled:
                    continue
                if rebinding.moved_back and not fed:
                    continue
                if rebinding.reloaded or not fresh:
                    rebinding.first_use = node

    def note_summary(self, event: CallEvent) -> None:
        """``summary(model, (3, 32, 32))`` of torchsummary: it feeds ``device="cuda"`` inputs
        unless told otherwise, so a model still on the host fails there on a GPU machine."""
        node = event.node
        first = node.args[0] if node.args and node.args[0].keyword is None else None
        held = event.args[0] if event.args else None
        device = keyword(node, "device")
        text = string_value(device.value) if device is not None else "cuda"
        if first is None or held is None or text is None or not text.startswith("cuda"):
            return
        if held.kind is Kind.MODULE and held.place is Place.HOST and held.weighted:
            self.summaries.append((node, dotted(first.value) or "the model"))

    def note_conditional_move(
        self, event: CallEvent, module: Value, name: str, semantic: Semantic
    ) -> None:
        """Called outside the ``if`` that alone moved it, on device tensors."""
        test = module.moved_if
        if test is None or semantic.in_branch_of(test):
            return
        if not any_on_device(event.args):
            return
        statement = module.unmoved_at or module.moved_at or event.node
        if all(c.statement is not statement for c in self.conditional_moves):
            unmoved = module.unmoved_at is not None
            device = semantic.device_name()
            self.conditional_moves.append(ConditionalMove(statement, name, test, unmoved, device))

    def finish(self, context: Context) -> Iterator[Report]:
        for statement, attribute, moved_by in self.late_parts:
            message = (
                f"`{attribute}` is built after `{moved_by}` in `__init__`, which moved only the "
                f"parts that existed then: `{attribute}` stays on the host; move `self` after "
                "building every part"
            )
            yield Report(statement, message)
        for rebinding in self.rebindings:
            if rebinding.first_use is None:
                continue
            device = rebinding.device_name or "device"
            if rebinding.moved_back:
                message = (
                    f"`{rebinding.name}` is brought back to the host here, and is then fed a "
                    f"device tensor: move the input to the CPU too, or keep `{rebinding.name}` "
                    f"on the device"
                )
                yield Report(rebinding.statement, message)
                continue
            message = (
                f"`{rebinding.name}` is re-created here on the host after it was moved to the "
                f"device, and is used without `{rebinding.name}.to({device})`"
            )
            yield Report(
                rebinding.statement,
                message,
                _fix(rebinding.statement, rebinding.name, rebinding.device_name),
            )
        for part in self.parts:
            if not part.used:
                continue
            device = part.device_name or "device"
            message = (
                f"`{part.name}` gets a new module on the host after `{part.root}` was moved to "
                f"the device (`.to()` moved the old one): move it too (`{part.name}.to({device})`)"
                ", or assign it before the move"
            )
            yield Report(part.statement, message, _fix(part.statement, part.name, part.device_name))
        for call, name in self.summaries:
            message = (
                f"`{name}` is still on the host, but torchsummary's `summary()` feeds it CUDA "
                f'inputs (`device="cuda"` by default): move `{name}` to the device first'
            )
            yield Report(call, message)
        yield from self.unmoved_with_device_inputs(context)
        for move in self.conditional_moves:
            test = context.code(move.test)
            when = f"when `{test}` is false" if _in_else(context.module, move) else f"when `{test}`"
            message = (
                f"`{move.name}` is moved to the device only {when}, but "
                "it is used with device tensors on every path: move it unconditionally"
            )
            if move.unmoved:
                message = (
                    f"`{move.name}` stays on the host on this path of `if {test}`, while the "
                    "other path moves it, and it is used with device tensors after the `if`: "
                    f"move it here too (`{move.name}.to({move.device_name or 'device'})`)"
                )
            yield Report(move.statement, message)

    def unmoved_with_device_inputs(self, context: Context) -> Iterator[Report]:
        seen: set[int] = set()
        for call in self.module_calls:
            module = call.module
            if module.place is not Place.HOST or module.stale or not module.weighted:
                continue
            if module.wrapper or module.managed or cuda_by_default(context):
                continue
            moved = [name for name, value in call.args if input_on_device(value)]
            if not moved:
                continue
            node = module.binding if module.binding is not None else call.call
            if id(node) in seen:
                continue
            seen.add(id(node))
            shown = f"`{moved[0]}`" if moved[0] else "its input"
            device = call.device_name or "device"
            # a module handed to a helper is reported where the caller created it, by the
            # caller's name
            name = _assigned_name(node) or call.module_name
            if not name:
                # `Blur(5)(grad)`: a module built where it is called, named by its constructor
                message = (
                    f"`{context.code(call.call.func)}` is built on the host where it is called, "
                    f"but {shown} is on the device: move it (`.to({device})`) or build it once "
                    "on the device"
                )
                yield Report(node, message)
                continue
            called = "" if name == call.module_name else f" (`{call.module_name}` where it is used)"
            message = (
                f"`{name}`{called} stays on the host but {shown} is on the device: "
                f"move the module with `{name}.to({device})`"
            )
            fix = _fix(node, name, call.device_name)
            yield Report(node, message, fix)


def _assigned_name(statement: cst.CSTNode) -> str | None:
    """``net`` for ``net = Net()``: the one plain name a statement binds."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
        return target.value if isinstance(target, cst.Name) else None
    return None


def _fix(statement: cst.CSTNode, name: str, device: str | None) -> FixSpec | None:
    """``name.to(device)`` on the line after: for a plain name, or a part of one (``model.fc``)."""
    if device is None or not isinstance(statement, cst.SimpleStatementLine):
        return None
    if name.startswith("self.") or name.count(".") > 1:
        return None
    edit = NodeEdit(statement, f"{name}.to({device})", "line_after")
    return FixSpec((edit,), safe=False, description=f"move {name} to {device}")


def _uncalled_function(semantic: Semantic) -> bool:
    """In one of the file's functions that no call here reached (walked on its own at the
    end, with the module's names as they are at its end)."""
    function = semantic.function_node
    if function is None or semantic.walked_for_call:
        return False
    return semantic.local_function(function.name) is function


SUMMARIES = frozenset({"torchsummary.summary", "torchsummary.summary_string"})


def _brought_to_the_cpu(value: cst.BaseExpression) -> bool:
    """A method chain with ``.cpu()`` or ``.to("cpu")`` in it."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        if value.func.attr.value == "cpu":
            return True
        target = device_move_target(value) if value.func.attr.value == "to" else None
        text = string_value(target) if target is not None else None
        if text is not None and CPU_LITERAL.match(text):
            return True
        value = value.func.value
    return False


def _part_after_self_move(
    init: cst.FunctionDef, semantic: Semantic
) -> tuple[cst.CSTNode, str, str] | None:
    """The first weighted part ``init`` builds after ``self.cuda()`` / ``self.to(...)``, when
    no later move of ``self`` follows it: its statement, ``self.<attr>`` and the move."""
    move: str | None = None
    late: tuple[cst.CSTNode, str, str] | None = None
    body = init.body.body if isinstance(init.body, cst.IndentedBlock) else ()
    for statement in iter_statements(body):
        moved = _self_move(statement)
        if moved is not None:
            move, late = moved, None  # a later move takes every part built before it
            continue
        if move is None or late is not None or not isinstance(statement, cst.Assign):
            continue
        for target in statement.targets:
            name = dotted(target.target) or ""
            if name.startswith("self.") and _weighted_part(statement.value, semantic):
                late = (statement, name, move)
                break
    return late


MOVES = frozenset({"cuda", "to"})


def _self_move(statement: cst.CSTNode) -> str | None:
    """``self.cuda()`` or ``self.to(device)`` as a statement: its text."""
    call = statement.value if isinstance(statement, cst.Expr) else None
    func = call.func if isinstance(call, cst.Call) else None
    method = func.attr.value if isinstance(func, cst.Attribute) else None
    if isinstance(func, cst.Attribute) and dotted(func.value) == "self" and method in MOVES:
        return f"self.{method}()"
    return None


def _weighted_part(value: cst.BaseExpression, semantic: Semantic) -> bool:
    """A layer with weights (``nn.Linear(...)``) or a weighted module class of the project."""
    if not isinstance(value, cst.Call):
        return False
    if (dotted(value.func) or "").rsplit(".", 1)[-1] in WEIGHTED_LAYERS:
        return True
    part = semantic.module_class_named(value.func)
    if part is None or not part.weighted or part.places_itself:
        return False
    # `Flip(self.D)`: a wrapper whose only weights are a part built (and moved) before it
    init = class_method(part.node, "__init__")
    sources = part.weights_from
    if init is None or not sources:
        return True
    given = [argument_for(init, value, source, is_method=True) for source in sources]
    return not all(
        arg is not None and (dotted(arg.value) or "").startswith("self.") for arg in given
    )
