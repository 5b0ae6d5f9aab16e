"""GPD101: a placed module called on a batch that never left the host."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import libcst as cst

from gpudoc.lint.analysis.events import (
    BindingEvent,
    CallEvent,
    CompareEvent,
    FunctionEvent,
    OperationEvent,
    Semantic,
    StatementEvent,
    WalkedCallEvent,
)
from gpudoc.lint.analysis.expressions import device_move_target, string_value
from gpudoc.lint.analysis.functions import argument_for
from gpudoc.lint.analysis.names import assignments, built_class, dotted, method_named
from gpudoc.lint.analysis.values import Kind, Place, Value
from gpudoc.lint.rule import Context, FixSpec, Invalid, Report, Rule
from gpudoc.lint.rules._default_device import cuda_by_default
from gpudoc.lint.rules._factory_uses import read_only_as_index
from gpudoc.lint.rules._helpers import (
    LENGTHS,
    all_on_host,
    chain_name,
    input_on_device,
    move_after_binding,
    moved_by_statement,
)
from gpudoc.lint.visit import walk


@dataclass(frozen=True)
class Argument:
    node: cst.BaseExpression
    name: str | None
    """The plain name passed (``images``), when the argument is one."""
    value: Value
    spread: bool = False
    """Passed as ``**inputs``: a mapping of tensors, with no ``.to()`` of its own."""


@dataclass(frozen=True)
class Call:
    """A call of a module (``module`` set), or of a loss or torch function whose tensor
    arguments must share a device (``combines``)."""

    call: cst.Call | cst.Comparison | cst.BinaryOperation
    name: str
    """The module's name, or the function's qualified name (an operator's text)."""
    module: Value | None
    args: list[Argument]
    device_name: str | None
    """A name that holds the script's device in this scope, for fixes."""
    typed_by_name: bool = False
    """The module is a parameter of a function no call in the file reached, placed only
    because its name and a ``device`` parameter say so (``def train(model, loader, device)``)."""


class UnmovedInput(Rule):
    """A module on the device is called on a tensor that is still on the host.

    ## What it does
    Finds calls of a module that was moved to a device (`model.to(device)`, `.cuda()`, built with
    `device=`) whose input comes from a `DataLoader`, a dataset or a tensor factory and was never
    moved: the evaluation loop copied from the CPU half of a tutorial. Also a tensor of a batch
    the loop left on the host that meets a device result in a comparison or arithmetic
    (`(predicted == labels).sum()` where `labels.to(device)` was written inside the loss call,
    which moved a copy).

    ## Why is this bad?
    On a GPU it crashes with `RuntimeError: Input type (torch.FloatTensor) and weight type
    (torch.cuda.FloatTensor) should be the same` or `Expected all tensors to be on the same
    device, but found at least two devices, cuda:0 and cpu!`. On a CPU-only laptop it runs, which
    is why it reaches the GPU box.

    ## Example
    ```python
    model = Net().to(device)
    for images, labels in test_loader:
        outputs = model(images)
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    for images, labels in test_loader:
        images, labels = images.to(device), labels.to(device)
        outputs = model(images)
    ```

    ## Known problems
    Batches moved by a helper function, a custom `collate_fn`, or a framework (Lightning,
    accelerate's `prepare`) are recognised as moved or unknown, never as host tensors; a
    `collate_fn` of the file's own (a function, a method of the class, or an attribute its
    `__init__` binds to one: `self.collate_fn = self.collate`) that moves nothing keeps them on
    the host. A module whose `forward` moves an input itself (`x = x.to(device)`, or through a
    function of the file that returns its argument moved) is given it on the host. A mapping
    spread into the call (`model(**inputs)`) is reported with a hint that
    moves each of its tensors, and no fix. A module
    wrapped in `nn.DataParallel` scatters host inputs itself and is not reported. A function
    whose callers are in other files (`def train_epoch(loader, model, device)`) cannot know
    whether its `model` is wrapped: when it moves the targets of a batch but hands the inputs
    to the model unmoved, that is the DataParallel idiom (pytorch/examples' imagenet) and it is
    not reported there. A parameter named for a loss (`criterion`, `loss_fn`) holds one: the
    outputs and the targets it is given must share a device (one named for CTC takes targets
    on the host). The output of a module left on the host while it is given device tensors is
    that module's finding (GPD102), not reported again where it is used. A tensor the
    module's `forward` reads only as an index (`out[rows, labels]`) may stay on the host:
    PyTorch copies an index to the indexed tensor's device. Nothing is reported
    on the CPU arm of a device test (`else:` of
    `if torch.cuda.is_available():`, `if args.no_cuda:`): the device is the CPU there, unless
    the file used CUDA on that arm before (`if args.gpu is not None:` ... `else: model =
    nn.DataParallel(model).cuda()`): such a test picks a GPU, and a tensor moved only under it
    stays on the host on the other GPU path.

    ## Fix safety
    Unsafe: it changes where the batch lives. The fix moves every tensor the loop (or the
    assignment) unpacks to the device variable the script names (`x, y = x.to(device),
    y.to(device)`); with no such variable there is no fix. A non-tensor among the unpacked names
    (a list of file names) would make `.to()` raise.
    """

    CODE = "GPD101"
    NAME = "unmoved-input"
    SUMMARY = "a module on the device is called on a batch or tensor left on the host"
    VALID = (
        # lengths stay on the host for pack_padded_sequence, whatever their suffix
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.LSTM(4, 4).to(device)
tensor = torch.LongTensor(indexed).to(device)
length_tensor = torch.LongTensor([len(indexed)])
prediction = model(tensor, length_tensor)
""",
        """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
loader = torch.utils.data.DataLoader(dataset, batch_size=8)
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    out = model(x)
""",
        """\
import torch
model = torch.nn.Linear(4, 2).to("cuda")
for batch in loader:
    batch = {k: v.to("cuda") for k, v in batch.items()}
    out = model(**batch)
""",
        """\
import torch
model = torch.nn.Linear(4, 2)
for x, y in torch.utils.data.DataLoader(dataset):
    out = model(x)
""",
        """\
import torch
model = torch.nn.DataParallel(torch.nn.Linear(4, 2)).cuda()
for x, y in torch.utils.data.DataLoader(dataset):
    out = model(x)
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
loader = torch.utils.data.DataLoader(dataset, batch_size=8)
for x, y in loader:
    out = model(x)
""",
            line=6,
            col=17,
            expected_replacement="""\
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
loader = torch.utils.data.DataLoader(dataset, batch_size=8)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    out = model(x)
""",
        ),
        Invalid(
            """\
import torch
def test(model, device, test_loader):
    model.eval()
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
""",
            line=6,
            col=28,
            expected_replacement="""\
import torch
def test(model, device, test_loader):
    model.eval()
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
""",
        ),
    )

    EVENTS = ("call", "statement", "function", "binding", "walked", "compare", "operation")

    def __init__(self) -> None:
        super().__init__()
        self.module_calls: list[Call] = []
        self.reloaded: set[tuple[str, int]] = set()
        """Modules given a state (``net.load_state_dict(...)``), by name and binding: trained
        weights, evaluated on the host by mistake when a re-created one meets host inputs (the
        CIFAR-10 tutorial)."""
        self.mixed_calls: list[Call] = []
        self.discarded: set[str] = set()
        """Names whose move a statement discarded (GPD103 reports them)."""
        self.conventional: dict[cst.FunctionDef, dict[str, Value]] = {}
        """Functions walked without a call: their module parameters, typed by name."""
        self.rebound: set[tuple[cst.FunctionDef | None, str]] = set()
        """(function, name) of modules the function itself moves or rebinds."""
        self.in_instance_methods: list[tuple[int, int]] = []
        """(the walk's step, the index in ``module_calls``) of module calls made in a module's
        own method walked for a call on a placed instance (``policy.act(obs, masks)``)."""
        self.host_module_calls: set[int] = set()
        """Calls of a module with weights left on the host, given a device tensor (GPD102's
        findings)."""
        self.host_outputs_bound: set[int] = set()
        """Statements that bind such a call's output (``out = teacher(x)``, then
        ``out = out.detach()``): it is on the host because the module is, GPD102's finding."""
        self.half_moved: set[cst.CSTNode] = set()
        """Loops and assignments that unpack a batch one of whose tensors is moved later
        (``targets = targets.to(device)``)."""

    def on_function(self, event: FunctionEvent, semantic: Semantic) -> None:
        if not semantic.walked_for_call:
            modules = {n: v for n, v in event.params.items() if v.kind is Kind.MODULE}
            self.conventional[event.node] = modules

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        before, after = event.previous, event.value
        chain = _chain(event.assigned)
        root = chain[-1] if chain else None
        from_host_module = any(id(node) in self.host_module_calls for node in chain)
        # `out = out.detach()` of such an output
        kept = isinstance(root, cst.Name) and root.value == event.name and before is not None
        if from_host_module or (kept and before and id(before.binding) in self.host_outputs_bound):
            self.host_outputs_bound.add(id(event.statement))
        if after.kind is Kind.MODULE:
            self.rebound.add((semantic.function_node, event.name))
        if before is None or before.binding is None or not before.is_tensorish:
            return
        if after.is_tensorish and after.place is Place.DEVICE and before.place is Place.HOST:
            self.half_moved.add(before.binding)

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        module, node = event.module, event.node
        if event.method == "load_state_dict" and isinstance(node.func, cst.Attribute):
            # the module as it is bound now: a reload of the model a later line replaces is not
            # a reload of the new one
            binding = event.receiver.binding if event.receiver is not None else None
            self.reloaded.add((dotted(node.func.value) or "", id(binding)))
        combines = event.combines and sum(1 for a in event.args if a.is_tensorish) >= 2
        if module is None and not combines:
            return
        if semantic.on_cpu_path:
            return  # `else:` of `if torch.cuda.is_available():`: nothing is on a GPU there
        args = [
            Argument(arg.value, dotted(arg.value), value, arg.star == "**")
            for arg, value in zip(node.args, event.args, strict=True)
            # `F.interpolate(x, size=[r, r])`: sizes and factors, read as numbers on any device
            if arg.keyword is None or arg.keyword.value not in SHAPE_KEYWORDS
        ]
        if _ctc_loss(event):
            args = args[:1]  # CTC takes targets and lengths from the host too
        if module is not None:
            # `def forward(self, x): x = x.to(device)`: the module brings its input itself
            moved = _moved_by_forward(module, semantic)
            args = [
                a
                for index, (a, arg) in enumerate(zip(args, node.args[: len(args)], strict=True))
                if (arg.keyword.value if arg.keyword is not None else index) not in moved
            ]
        if combines and semantic.function is not None:
            # a factory's tensor made in a function without device= is GPD106's finding
            args = [a for a in args if not isinstance(a.value.origin, cst.Call)]
        name = event.module_name if module is not None else event.qualified
        by_name = _typed_by_name(self.conventional, semantic, name, module)
        by_name = by_name and (semantic.function_node, name) not in self.rebound
        call = Call(node, name or "", module, args, semantic.device_name(), by_name)
        fed = any(input_on_device(value) for value in event.args)
        if module is not None and module.place is Place.HOST and module.weighted and fed:
            self.host_module_calls.add(id(node))  # GPD102 reports the module
        if module is not None:
            if semantic.on_placed_instance:
                self.in_instance_methods.append((semantic.step, len(self.module_calls)))
            self.module_calls.append(call)
        if combines:
            self.mixed_calls.append(call)

    def on_compare(self, event: CompareEvent, semantic: Semantic) -> None:
        node = event.node
        operands = [node.left, *(target.comparator for target in node.comparisons)]
        self._operands(node, operands, event.values, semantic)

    def on_operation(self, event: OperationEvent, semantic: Semantic) -> None:
        node = event.node
        self._operands(node, [node.left, node.right], (event.left, event.right), semantic)

    def _operands(
        self,
        node: cst.Comparison | cst.BinaryOperation,
        operands: list[cst.BaseExpression],
        values: tuple[Value, ...],
        semantic: Semantic,
    ) -> None:
        """``(predicted == labels).sum()``: a device result compared (or combined) with a
        batch the loop left on the host; ``labels.to(device)`` written inside the loss call
        moved a copy, not ``labels``."""
        if semantic.on_cpu_path or not any(_device_tensor(value) for value in values):
            return
        args = [
            Argument(operand, dotted(operand), value)
            for operand, value in zip(operands, values, strict=True)
            if _device_tensor(value) or _batch_tensor(value)
        ]
        if len(args) >= 2:
            call = Call(node, _operator_text(node), None, args, semantic.device_name())
            self.mixed_calls.append(call)

    def on_walked(self, event: WalkedCallEvent, semantic: Semantic) -> None:
        """``policy.act(obs, masks)`` whose body feeds ``masks`` to ``self.base``: a host
        tensor the caller passed is the caller's bug, reported at its argument."""
        inside = [item for item in self.in_instance_methods if item[0] > event.start]
        if not inside:
            return
        func = event.call.func
        receiver = dotted(func.value) if isinstance(func, cst.Attribute) else None
        if event.is_method and receiver == "self":
            # `self.forward(x)` in `def score(self, x)`: the argument becomes score's own
            # parameter, which the call of `model.score(x)` that walked it maps in turn
            for _, index in inside:
                call = self.module_calls[index]
                args = [_at_call_site(arg, event) for arg in call.args]
                self.module_calls[index] = replace(call, args=args)
            return
        self.in_instance_methods = [i for i in self.in_instance_methods if i[0] <= event.start]
        if not event.is_method or receiver is None:
            return
        for _, index in inside:
            call = self.module_calls[index]
            args = [_at_call_site(arg, event) for arg in call.args]
            if any(new is not old for new, old in zip(args, call.args, strict=True)):
                self.module_calls[index] = Call(
                    event.call, receiver, call.module, args, semantic.device_name()
                )

    def on_statement(self, event: StatementEvent, semantic: Semantic) -> None:
        moved = moved_by_statement(event)
        if moved is not None:
            self.rebound.add((semantic.function_node, moved))
        receiver, call = event.receiver, event.node.value
        if receiver is None or not receiver.is_tensorish or receiver.inplace_to:
            return
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            name = dotted(call.func.value)
            if name is not None:
                self.discarded.add(name)

    def finish(self, context: Context) -> Iterator[Report]:
        flags = context.flags
        if cuda_by_default(context) or "lightning" in flags.frameworks:
            return
        reported: set[int] = set()
        for report, binding in self.module_inputs(context):
            reported.add(id(binding))
            yield report
        # a tensor whose .to(device) was discarded is reported once, as GPD103
        yield from self.mixed_inputs(context, reported)

    def host_outputs(self) -> set[int]:
        """The output of a module left on the host is that module's finding (GPD102)."""
        return {
            id(c.call)
            for c in self.module_calls
            if c.module is not None and c.module.place is Place.HOST
        }

    def mixed_inputs(self, context: Context, reported: set[int]) -> Iterator[Report]:
        """A loss or torch function on a device tensor and a host one (a batch half moved)."""
        discarded = self.discarded
        host_outputs = self.host_outputs()
        for call in self.mixed_calls:
            if not any(a.value.is_tensorish and a.value.place is Place.DEVICE for a in call.args):
                continue
            for arg in call.args:
                value = arg.value
                if not _on_host(value) or id(arg.node) in host_outputs:
                    continue
                if id(value.binding) in self.host_outputs_bound:
                    continue
                if arg.name is not None and LENGTHS.search(arg.name.rsplit(".", 1)[-1]):
                    continue
                if id(value.binding) in reported or (arg.name and arg.name in discarded):
                    break  # the same batch was reported where it entered the model
                reported.add(id(value.binding))
                shown = arg.name or context.code(arg.node)
                device = call.device_name or "device"
                meets = (
                    f"`{call.name}` also gets tensors on the device"
                    if isinstance(call.call, cst.Call)
                    else f"`{call.name}` meets it with a tensor on the device"
                )
                message = (
                    f"`{shown}` is still on the host{_where(value.place)} but {meets}: "
                    f"move it first ({_move_text(arg, shown, device)})"
                )
                fix = _move_fix(arg, call.device_name) if value.place is Place.HOST else None
                yield Report(arg.node, message, fix)
                break

    def module_inputs(self, context: Context) -> Iterator[tuple[Report, object]]:
        host_outputs = self.host_outputs()
        for call in self.module_calls:
            module = call.module
            if module is None or not module.is_device_module or module.wrapper or module.managed:
                continue
            if not module.weighted:
                continue
            for arg in call.args:
                value = arg.value
                if not _on_host(value) or id(arg.node) in host_outputs:
                    continue
                if id(value.binding) in self.host_outputs_bound:
                    continue
                if (
                    module.stale
                    and (call.name, id(module.binding)) not in self.reloaded
                    and all_on_host(a.value for a in call.args)
                ):
                    continue  # a re-created model fed host tensors only: all on the CPU
                if arg.name is not None and LENGTHS.search(arg.name.rsplit(".", 1)[-1]):
                    continue
                if call.typed_by_name and value.binding in self.half_moved:
                    continue  # targets moved, inputs left for a DataParallel to scatter
                shown = arg.name or context.code(arg.node)
                device = call.device_name or "device"
                why = "was on the device before" if module.stale else "is on the device"
                where = _where(value.place)
                message = (
                    f"`{shown}` is still on the host{where} but `{call.name}` {why}: "
                    f"move it first ({_move_text(arg, shown, device)})"
                )
                fix = _move_fix(arg, call.device_name) if value.place is Place.HOST else None
                yield Report(arg.node, message, fix), value.binding
                break


HOST_PLACES = (Place.HOST, Place.MIXED)
SHAPE_KEYWORDS = frozenset(
    {"size", "scale_factor", "output_size", "shape", "sizes", "kernel_size", "stride", "pad"}
)


def _moved_by_forward(module: Value, semantic: Semantic) -> frozenset[int | str]:
    """The inputs (by position and by name) that the module's class rebinds moved to a device
    in the top level of its ``forward`` (``x = x.to(device)``), or takes as sequence lengths."""
    name = built_class(module.origin)
    cls = semantic.module_class_named(cst.Name(name)) if name else None
    forward = method_named(cls.node if cls is not None else None, "forward")
    if forward is None and name:
        forward = semantic.class_method(name, "forward")  # a base class's, run on this one
    if forward is None or not isinstance(forward.body, cst.IndentedBlock):
        return frozenset()
    params = [p.name.value for p in forward.params.params][1:]
    # `def forward(self, seq, seq_lengths)`: lengths stay on the host (pack_padded_sequence)
    moved: set[int | str] = {
        key for index, name in enumerate(params) if LENGTHS.search(name) for key in (index, name)
    }
    # `out[rows, domain]`: an index tensor may stay on the host, PyTorch copies it over
    moved.update(
        key
        for index, name in enumerate(params)
        if read_only_as_index(name, [forward])
        for key in (index, name)
    )
    for statement in forward.body.body:
        for target, value in assignments(statement):
            receiver = _moved_receiver(value) or _moved_by_helper(value, forward, semantic)
            if receiver is not None and receiver == dotted(target) and receiver in params:
                moved.update((params.index(receiver), receiver))
            receiver = _moved_by_method(value, name, semantic) if name else None
            if receiver is not None and receiver in params:
                moved.update((params.index(receiver), receiver))
    return frozenset(moved)


def _moved_by_method(value: cst.BaseExpression, class_name: str, semantic: Semantic) -> str | None:
    """``batch`` of ``x, y = self.process_data(batch)`` in ``forward``, where the instance's
    class (a subclass, for a hook its base's ``forward`` calls) moves what it is given there
    (``batch["x"].to(self.device)``)."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
        return None
    if dotted(value.func.value) != "self":
        return None
    method = semantic.class_method(class_name, value.func.attr.value)
    if method is None:
        return None
    params = [p.name.value for p in (*method.params.posonly_params, *method.params.params)]
    for parameter in params[1:]:
        given = argument_for(method, value, parameter, is_method=True)
        if given is not None and _moves_every_use(method, parameter):
            return dotted(given.value)
    return None


def _moves_every_use(method: cst.FunctionDef, parameter: str) -> bool:
    """Each read of ``parameter`` in ``method`` is moved to a device (``batch["x"].to(d)``,
    ``batch["y"].cuda()``): not a dtype cast, not one key of several."""
    uses = _MovedUses(parameter)
    walk(method.body, uses)
    return bool(uses.reads) and uses.reads <= uses.moved


class _MovedUses(cst.CSTVisitor):
    def __init__(self, parameter: str) -> None:
        self.parameter = parameter
        self.reads: set[int] = set()
        self.moved: set[int] = set()

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.parameter:
            self.reads.add(id(node))

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk(node.value, self)
        return False  # `x.shape` names no parameter `shape`

    def visit_Call(self, node: cst.Call) -> None:
        target = device_move_target(node)
        text = string_value(target) if target is not None else None
        if target is None or (text is not None and not text.startswith("cuda")):
            return
        moved = node.func.value if isinstance(node.func, cst.Attribute) else node
        root = chain_name(moved)
        if root is not None and root.value == self.parameter:
            self.moved.add(id(root))


def _moved_by_helper(
    value: cst.BaseExpression, forward: cst.FunctionDef, semantic: Semantic
) -> str | None:
    """``x`` of ``to_param_device(self, x)``, a function of ``forward``'s file that returns its
    parameter moved (``return t.to(next(mod.parameters()).device)``)."""
    if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Name):
        return None
    helper = semantic.function_beside(forward, value.func.value)
    if helper is None or not isinstance(helper.body, cst.IndentedBlock):
        return None
    last = helper.body.body[-1] if helper.body.body else None
    returned = None
    if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[0], cst.Return):
        returned = last.body[0].value
    parameter = _moved_receiver(returned) if returned is not None else None
    if parameter is None:
        return None
    given = argument_for(helper, value, parameter, is_method=False)
    return dotted(given.value) if given is not None else None


def _moved_receiver(value: cst.BaseExpression) -> str | None:
    """``x`` of ``x.to(device)`` / ``x.cuda()``, also at the end of a chain of its methods
    (``t.unsqueeze(-1).float().to(self.device)``); not ``x.to("cpu")``, nor ``x.to(dtype)``."""
    target = device_move_target(value)
    text = string_value(target) if target is not None else None
    if target is None or (text is not None and not text.startswith("cuda")):
        return None
    func = value.func if isinstance(value, cst.Call) else None
    if not isinstance(func, cst.Attribute):
        return None
    receiver = func.value
    while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
        receiver = receiver.func.value
    return dotted(receiver)


def _chain(expr: cst.BaseExpression | None) -> list[cst.BaseExpression]:
    """``teacher(x).detach().data``, ``teacher(x).detach()``, ``teacher(x)``, ``teacher``: a
    chain of methods and attributes, down to what it starts from (the call of a module kept
    on an attribute, ``self.net(x)``, is one of its links)."""
    chain: list[cst.BaseExpression] = []
    while expr is not None:
        chain.append(expr)
        if isinstance(expr, cst.Attribute):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        else:
            break
    return chain


def _at_call_site(arg: Argument, event: WalkedCallEvent) -> Argument:
    """The caller's argument for a parameter passed on unchanged (``masks`` of ``def act(self,
    obs, masks)``) or through a tensor method (``x.repeat_interleave(T)``), else ``arg``."""
    name = arg.name if arg.name is not None else _derived_from(arg.node)
    if name is None or "." in name:
        return arg
    given = argument_for(event.function, event.call, name, is_method=True)
    if given is None:
        return arg
    return Argument(given.value, dotted(given.value), arg.value)


def _derived_from(expr: cst.BaseExpression) -> str | None:
    """``x`` of ``x.repeat_interleave(T, dim=0)``, ``x.unsqueeze(0).float()`` or ``x[0]``."""
    derived = False
    while isinstance(expr, cst.Call | cst.Subscript) or (
        isinstance(expr, cst.Attribute) and derived
    ):
        if isinstance(expr, cst.Call):
            if not isinstance(expr.func, cst.Attribute):
                return None
            expr = expr.func.value
        else:
            expr = expr.value
        derived = True
    return expr.value if derived and isinstance(expr, cst.Name) else None


def _typed_by_name(
    conventional: dict[cst.FunctionDef, dict[str, Value]],
    semantic: Semantic,
    name: str | None,
    module: Value | None,
) -> bool:
    """``module`` is still what the parameter ``name`` held on entry to a function walked
    without a call (nothing in the body moved or rebound it)."""
    function = semantic.function_node
    if module is None or name is None or function is None or semantic.walked_for_call:
        return False
    entry = conventional.get(function, {}).get(name)
    return entry is not None and entry == module


def _device_tensor(value: Value) -> bool:
    return value.kind is Kind.TENSOR and value.place is Place.DEVICE and not value.by_name


def _batch_tensor(value: Value) -> bool:
    """A tensor of a batch a loop unpacked on the host (not a row of a tensor: one of those
    is 0-dim, which combines with a tensor on any device)."""
    host = value.kind is Kind.TENSOR and value.place is Place.HOST and not value.by_name
    return host and not value.row and isinstance(value.binding, cst.For)


def _operator_text(node: cst.Comparison | cst.BinaryOperation) -> str:
    operator: cst.CSTNode = (
        node.operator if isinstance(node, cst.BinaryOperation) else node.comparisons[0].operator
    )
    return cst.Module([]).code_for_node(operator).strip()


def _ctc_loss(event: CallEvent) -> bool:
    """``F.ctc_loss`` or a ``nn.CTCLoss``: only its log-probabilities must be on the device;
    it moves targets itself and reads the lengths on the host (cuDNN wants them there)."""
    if event.qualified == "torch.nn.functional.ctc_loss":
        return True
    if "ctc" in (event.module_name or "").lower():
        return True  # `ctc_criterion(...)`, a parameter named for the loss it holds
    origin = event.module.origin if event.module is not None else None
    while isinstance(origin, cst.Call):
        if (dotted(origin.func) or "").endswith("CTCLoss"):
            return True
        func = origin.func
        origin = func.value if isinstance(func, cst.Attribute) else None
    return False


def _on_host(value: Value) -> bool:
    """On the host, or on some paths: not when only a parameter's name says the loader it came
    from is on the host (`if not args.prefetcher: x = x.to(dev)`: the other loader may place)."""
    if not value.is_tensorish or value.place not in HOST_PLACES:
        return False
    return value.place is Place.HOST or not value.by_name


def _move_text(arg: Argument, shown: str, device: str) -> str:
    """How to move it: rebind a name; an expression is moved where it is written."""
    name = arg.name
    if arg.spread:
        return f"`{{k: v.to({device}) for k, v in {shown}.items()}}`"
    if isinstance(arg.node, cst.List | cst.Tuple):
        return _each_moved(arg.node, device)
    if name is None:
        atom = isinstance(arg.node, cst.Name | cst.Attribute | cst.Call | cst.Subscript)
        return f"`{shown if atom else f'({shown})'}.to({device})`"
    return f"`{shown} = {shown}.to({device})`"


def _each_moved(sequence: cst.List | cst.Tuple, device: str) -> str:
    """A list has no ``.to()``: each tensor in it is moved (``[a.to(d), b.to(d)]``)."""
    names = [dotted(element.value) for element in sequence.elements]
    if not names or None in names:
        return f"each tensor in it, with `.to({device})`"
    moved = ", ".join(f"{name}.to({device})" for name in names)
    return f"each tensor in it: `[{moved}]`"


def _where(place: Place) -> str:
    """A value moved in one branch of a test about something else stays behind on the other."""
    return " on some paths (it is moved in one branch only)" if place is Place.MIXED else ""


def _move_fix(arg: Argument, device_name: str | None) -> FixSpec | None:
    """Move a plain tensor name right after it is bound; nothing for attributes or batches."""
    if arg.name is None or "." in arg.name or arg.value.kind.value != "tensor" or arg.spread:
        return None
    return move_after_binding(arg.value.binding, arg.name, device_name)
