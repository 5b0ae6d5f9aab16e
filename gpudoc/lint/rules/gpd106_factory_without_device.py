"""GPD106: new tensors created in forward() or a training step without device=."""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePath

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import (
    AugmentedEvent,
    BindingEvent,
    CallEvent,
    CompareEvent,
    OperationEvent,
    ReturnEvent,
    Semantic,
    WalkedCallEvent,
)
from gpudoc.lint.analysis.expressions import converts_only, string_value
from gpudoc.lint.analysis.follows_inputs import weight_attributes
from gpudoc.lint.analysis.functions import MOVES
from gpudoc.lint.analysis.names import (
    assigned_value,
    bound_names_of,
    dotted,
    is_number_expression,
    iter_statements,
    keyword,
)
from gpudoc.lint.analysis.values import Kind, Place, Value
from gpudoc.lint.rule import Context, FixSpec, Invalid, NodeEdit, Report, Rule
from gpudoc.lint.rules._cpu_project import runs_on_cpu_only
from gpudoc.lint.rules._default_device import cuda_by_default
from gpudoc.lint.rules._factory_reach import (
    COMBINING_METHODS,
    other_arm,
    reaches_device,
)
from gpudoc.lint.rules._factory_uses import (
    Held,
    Uses,
    factories_inside,
    factory_inside,
    meets_tensor_operand,
    no_tensor_parameter,
    only_filled_in,
    only_indexes,
    record_values,
    tensor_parameters,
)
from gpudoc.lint.rules._forward_callers import forward_callers, meets_an_argument
from gpudoc.lint.rules._helpers import (
    LENGTHS,
    chain_root,
    every_parameter,
    parameter_names,
    unpacked_from,
    unpacked_position,
)
from gpudoc.lint.rules._host_instances import host_only_classes
from gpudoc.lint.rules._moved_by_readers import moved_by_every_reader, stored_attribute
from gpudoc.lint.rules._numbers import number_attributes, number_parameters
from gpudoc.lint.rules._project_scripts import importer_texts
from gpudoc.lint.rules._unset_attributes import reads_unset
from gpudoc.lint.rules._zero_dim import SCALAR_OPERATORS, full_reduction
from gpudoc.lint.visit import code_ids, walk

STEP_METHODS = frozenset(
    {
        "forward", "training_step", "validation_step", "test_step", "predict_step",
        "train_step", "eval_step", "init_hidden", "init_hidden_state", "reset_hidden",
    }
)  # fmt: skip

FLOAT_LEGACY = frozenset({"Tensor", "FloatTensor", "DoubleTensor", "HalfTensor"})
"""Legacy constructors of floating-point storage: given sizes, uninitialised numbers for
arithmetic (integer ones given sizes are mostly index buffers, filled later)."""


@dataclass(frozen=True)
class FactoryCall:
    call: cst.Call
    function: str
    """The torch factory, ``zeros``."""
    method: str
    """The enclosing method or function name."""
    in_module_class: bool
    """In a method of an nn.Module subclass."""
    helper_of_module: bool
    """In a module-level function that a method of an nn.Module subclass calls."""
    moved_after: bool
    """Chained with .to()/.cuda()/.type_as()."""
    first_param: str | None
    """The enclosing function's first parameter known to hold a tensor (``x`` in
    ``forward(self, x)``)."""
    callers: tuple[str, ...]
    """The functions whose calls led here, outermost first (``forward`` for its helper)."""
    definition: cst.FunctionDef | None = None
    """The enclosing function itself."""
    owner: cst.ClassDef | None = None
    """The nn.Module subclass whose method holds the factory."""
    meets_no_input: bool = False
    """In a method of a module that holds no weights, whose every parameter holds something
    else than a tensor (``forward(self, list_of_text)``): nothing there is on a device."""
    numbers: frozenset[str] = frozenset()
    """The function's parameters that the walk saw holding Python numbers (``keep_prob``)."""
    autograd: bool = False
    """In the ``forward``/``backward`` of an autograd function: its tensors are the model's."""


def _is_step(name: str) -> bool:
    """A step method, or a part of forward by its name (``_forward``, the hook a base class's
    forward calls; ``forward_features``, ``_forward_impl``)."""
    return name in STEP_METHODS or "forward" in name


def _step_method(factory: FactoryCall) -> str | None:
    """The step method the factory runs in: its own function, or the nearest caller. An
    ignite engine's process function (``def test_step(engine, batch)``) is none: it hands what
    it returns to the engine's metrics, which align devices themselves."""
    definition = factory.definition
    if definition is not None and _engine_process_function(definition):
        return None
    if _is_step(factory.method) or factory.autograd:
        return factory.method
    return next((name for name in reversed(factory.callers) if _is_step(name)), None)


AUTOGRAD_METHODS = frozenset({"forward", "backward", "jvp", "vjp", "setup_context"})


def _autograd_method(function: cst.FunctionDef | None) -> bool:
    """A ``@staticmethod`` of an autograd function's protocol (``backward(ctx, grad_output)``):
    it runs inside the model's forward or backward pass, on the tensors of the model's device,
    whether the class is a ``torch.autograd.Function`` or a library's own base (CrypTen's)."""
    if function is None or function.name.value not in AUTOGRAD_METHODS:
        return False
    params = function.params.params
    static = any(dotted(d.decorator) == "staticmethod" for d in function.decorators)
    return static and bool(params) and params[0].name.value == "ctx"


def _engine_process_function(function: cst.FunctionDef) -> bool:
    params = function.params.params
    return bool(params) and params[0].name.value == "engine"


class FactoryWithoutDevice(Rule):
    """A tensor factory in `forward` (or a training step) without `device=`.

    ## What it does
    Finds `torch.zeros(...)`, `torch.ones`, `torch.randn`, `torch.arange`, `torch.tensor([...])`,
    legacy constructors (`torch.FloatTensor([...])`, which take no CUDA device: the advice is
    `torch.tensor`, with no fix) and similar calls inside `forward`, `init_hidden` or a
    Lightning `*_step` method (or a helper they call: a method of the module, or a function of
    the file that returns the tensor), or in the `forward`/`backward` of an autograd function
    (`@staticmethod def backward(ctx, grad_output)`, whose tensors are the model's), with no
    `device=` argument and no `.to(...)` /
    `.type_as(...)` on the result. In a model file that places nothing itself (only
    definitions, no `__main__`), only `forward`'s are reported: the project's scripts place its
    modules; and none when no script or notebook of the project (the file's directory and
    those above it, up to the project's root) names a device while one of them runs the code
    (karpathy's normalizing flows, trained in a CPU notebook). Also one converted with
    `.type(x.type())` (a CUDA type, on the current device rather than x's) where the file, or a
    project script importing it, runs a process group or names a second GPU and never makes
    its rank's GPU current (`set_device`; DataParallel makes each replica's current); and
    anywhere, such a
    factory handed as the gradient of outputs on the device (`grad_outputs=` of
    `torch.autograd.grad`, the argument of `out.backward(...)`: a WGAN gradient penalty).
    And in any function, one whose tensor meets a tensor on the device in one operation
    (arithmetic, a comparison, `torch.cat([...])`, `torch.where`, `masked_fill_`...; a 0-dim
    device result such as `acc.mean()` too: only a 0-dim *host* tensor may meet a device
    tensor): a library's loss
    function called with the model's outputs, or a test's reference attention whose mask sits
    beside a bias made with `device=query.device`; also an in-place update of it with a device
    tensor (`total = torch.tensor(0.0)` then `total += torch.norm(err)`), where even a 0-dim
    host tensor fails, being the output. A module-level function of a helper file is judged in
    `forward` too when the project's other files call it only from a module's `forward`
    (`torch_utils.sequence_mask(lengths)` in an encoder's forward) and its factory meets what
    the caller passed.

    ## Why is this bad?
    The new tensor is created on the CPU whatever device the input is on; as soon as the model
    is moved to a GPU, the forward pass fails with `Expected all tensors to be on the same
    device` or `Input and hidden tensors are not at the same device` (the hidden-state pattern of
    `time_sequence_prediction` in pytorch/examples).

    ## Example
    ```python
    def forward(self, x):
        h = torch.zeros(x.size(0), self.hidden_size)
        return self.rnn(x, h)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        h = torch.zeros(x.size(0), self.hidden_size, device=x.device)
        return self.rnn(x, h)
    ```

    ## Known problems
    A method of a plain `nn.Module` subclass that reads an attribute the class never sets
    (`init_hidden` reading `self.batch`, left over from another version) would raise before
    its factory runs: it is dead code and not reported. A draw read only through Python's
    number casts (`int(w * r[0])`, a random crop offset) is not reported: what `int()` takes
    is one element.
    `torch.zeros_like`, `x.new_zeros` and 0-dim `torch.tensor(1.0)` as an operand are correct
    and not reported,
    nor is a 0-dim tensor of a name that holds a Python number: an attribute `__init__` assigns
    only numbers (`self.d_head = d_head`, with `d_head: int`, a number default or a size's name),
    such a parameter, or a size (`d_k = q.size(-1)`). A list (`torch.tensor(self.levels)`) is
    reported.
    A tensor the same function moves later on some path (`h = torch.zeros(...)` then
    `if USE_CUDA: h = h.cuda()`) is placed by its author and not reported, even when the
    condition is a flag the linter cannot relate to the input's device; one moved at one use
    (`xx.type_as(x)`) and read unmoved beside the input at another is. A tensor with no
    elements (`torch.empty(0)`, a placeholder return value) is not reported, nor are the
    targets and lengths handed to `nn.CTCLoss` / `F.ctc_loss`, which take them on the host.
    A tensor whose name is only ever handed to a method of an object the linter cannot see
    (`self.detector.head(features, rois, index)`, the detector built in another file and passed
    to `__init__`) is not reported: that method may move it.
    Neither is one handed to a function of the file that returns it moved
    (`return create_variable(hidden)`, where `create_variable` calls `.cuda()` when CUDA is
    available), nor one on the CPU arm of an availability test, nor one used only as an index
    of other tensors (`tokens[batch, torch.randn(n).argsort()]`: PyTorch copies a CPU index to
    the indexed tensor's device; also through arithmetic with numbers and other host factories:
    `pos = offs[:, None] + torch.arange(k)` read only in `table[rows, pos]`), nor one only put
    into a local list that the function never reads (`results[1].extend(torch.tensor(labels))`,
    `results` neither returned nor used).
    Arithmetic on a factory's tensor keeps it a factory's tensor: `t = torch.ones(s) * -1`
    followed by `if torch.cuda.is_available(): t = t.cuda()` is placed, and so is
    `xx = xx.float() / n` followed by `xx.type_as(x)`.
    Where a factory's tensor meets a device tensor, a full reduction of it (`torch.sum(t)`, a
    0-dim tensor), a conversion to a tensor type that may be CUDA's (`.type(FloatTensor)`), and
    a pass through one of the file's own functions (a `Variable` lambda that calls `.cuda()`)
    count as placed.
    A function of another project module that `forward` calls is not reported (it serves that
    module's callers too, a dataset's where the CPU is right), nor a helper function that
    keeps its tensor to itself, nor a tensor a helper returns that its caller moves later by
    name (`grid = make_grid(h, w)`, then `grid.to(x.device)`; also through a method chain:
    `loss = hardest(d).mean()`, then `loss.to(x.device)`).
    A module class of the file whose every instance stays on the host is not reported (a
    notebook's CPU chapter, before a later cell redefines the class and moves that instance):
    each instance made by `model = Net(...)` as a whole top-level statement, bound to the
    definition in effect there, then only called on inputs not on the device, printed, or
    asked for its parameters or state (`model.parameters()`, a discarded `model.train()`).
    Any other mention of the instance's name until it is rebound (a move,
    `DataParallel(model)`, a function or a list it is handed to, an alias), any read of it in
    a function, or any mention of the class besides such constructions (a submodule, a base,
    a function that builds it) keeps the class reported. Inputs the linter cannot place count
    as host inputs there: a host instance fed device tensors fails on its own weights first
    (a class that holds no weights is always reported).

    ## Fix safety
    Unsafe: it adds `device=<first input>.device` (`self.device` in a Lightning `*_step`). For
    random factories (`torch.randn`) that changes the random stream (the device's generator
    draws instead of the CPU's), and an index tensor moved to the device may be slower to use.
    Without a first tensor parameter there is no fix.
    """

    CODE = "GPD106"
    NAME = "factory-without-device"
    SUMMARY = "a tensor created in forward()/a step without device= stays on the CPU"
    PLACEMENT = False
    VALID = (
        """\
import torch
import torch.nn as nn
class RNN(nn.Module):
    def forward(self, x):
        h = torch.zeros(x.size(0), 8, device=x.device)
        c = torch.zeros_like(h)
        scale = torch.tensor(0.5)
        return x.new_ones(3) + h + c + scale
model = RNN().cuda()
""",
        # the gradient penalty's grad_outputs made where the critic's outputs are
        """\
import torch
critic = torch.nn.Linear(8, 1).cuda()
x = torch.randn(4, 8, device="cuda", requires_grad=True)
out = critic(x)
grad = torch.autograd.grad(out, x, torch.ones_like(out), create_graph=True)[0]
out.backward(torch.ones(4, 1, device=out.device))
""",
    )
    INVALID = (
        Invalid(
            """\
import torch
import torch.nn as nn
class RNN(nn.Module):
    def forward(self, x):
        h = torch.zeros(x.size(0), 8)
        return x + h
model = RNN().cuda()
""",
            line=5,
            col=13,
            expected_replacement="""\
import torch
import torch.nn as nn
class RNN(nn.Module):
    def forward(self, x):
        h = torch.zeros(x.size(0), 8, device=x.device)
        return x + h
model = RNN().cuda()
""",
        ),
        # PyTorch-GAN's wgan_div: grad_outputs on the CPU, the critic's outputs on the GPU
        Invalid(
            """\
import torch
critic = torch.nn.Linear(8, 1).cuda()
x = torch.randn(4, 8, device="cuda", requires_grad=True)
out = critic(x)
grad = torch.autograd.grad(out, x, grad_outputs=torch.ones(4, 1), create_graph=True)[0]
""",
            line=5,
            col=49,
        ),
        # a library's loss function, called on the device: the host column meets the labels
        Invalid(
            """\
import torch
def ordinal_loss(logits, labels):
    first = torch.ones(labels.shape[0], 1)
    return (torch.cat([first, labels[:, 1:]], dim=1) * logits).sum()
logits = torch.randn(4, 3, device="cuda")
loss = ordinal_loss(logits, torch.rand(4, 3, device="cuda"))
""",
            line=3,
            col=13,
            expected_replacement="""\
import torch
def ordinal_loss(logits, labels):
    first = torch.ones(labels.shape[0], 1, device=labels.device)
    return (torch.cat([first, labels[:, 1:]], dim=1) * logits).sum()
logits = torch.randn(4, 3, device="cuda")
loss = ordinal_loss(logits, torch.rand(4, 3, device="cuda"))
""",
        ),
    )

    EVENTS = ("call", "binding", "return", "walked", "operation", "augmented", "compare")

    def __init__(self) -> None:
        super().__init__()
        self.attribute_copies: dict[cst.FunctionDef, dict[str, str]] = {}
        self.blocks: dict[cst.FunctionDef, list[list[cst.BaseSmallStatement | None]]] = {}
        self.constants: set[cst.Call] = set()
        """Legacy constructors of numbers written out (``torch.FloatTensor([2 * math.pi])``)."""
        self.factories: list[FactoryCall] = []
        """Sized factories without ``device=`` inside functions."""
        self.held: dict[tuple[int, str], cst.Call] = {}
        """(scope, name) -> the factory call whose tensor the name holds."""
        self.calls: set[cst.Call] = set()
        """The calls in ``factories``."""
        self.moved_later: set[cst.Call] = set()
        """Factory calls whose tensor a later statement of the same function moves."""
        self.used_unmoved: set[cst.Call] = set()
        """Factory calls whose host tensor, not moved, meets a tensor not known to be on the
        host: a move at another use does not excuse it."""
        self.updated_in_place: set[cst.Call] = set()
        """Factories whose tensor a device operand updated in place before any move of it."""
        self.groups: dict[cst.Call, tuple[cst.Call, ...]] = {}
        """The factories one unpacking spreads over its names (``yv, xv = torch.meshgrid(
        ...)``): a move of one part moves the grid they make together."""
        self.bound: dict[cst.Call, tuple[cst.FunctionDef, str]] = {}
        self.combined: set[tuple[cst.FunctionDef, str]] = set()
        """Names bound to a factory's tensor combined with a tensor operand of another call
        (``mask = (torch.rand(n) + g.values()).bool()``): no host value, whatever reads it."""
        self.bound_to: dict[tuple[int, str], list[cst.Call]] = {}
        """(function, name) -> the factory calls bound to that name there: the arms of an
        ``if``/``else`` each bind their own."""
        """Factory call -> the function and the plain name it is bound to."""
        self.handed: set[cst.Name] = set()
        """Names passed to a method of an object the linter knows nothing about."""
        self.gradients: list[tuple[cst.Call, str]] = []
        """Factories handed as the gradient of device outputs, with the call that takes them."""
        self.typed: list[tuple[cst.Call, cst.BaseExpression, bool]] = []
        """Factories converted to another tensor's type (``.type(q.type())``), with that tensor
        and whether a module class's method converts it."""
        self.returned: set[cst.Call] = set()
        self.returned_parts: tuple[cst.Call | None, ...] = ()
        """The factories a helper's last ``return a, b`` returned, by position."""
        self.helper_parts: dict[cst.Call, tuple[cst.Call | None, ...]] = {}
        """A helper's call -> the factories its returned tuple holds, by position."""
        """Factory calls whose tensor (or one computed from it) a ``return`` hands back."""
        self.made_at: dict[cst.Call, int] = {}
        """The walk's step at each factory call (the latest walk of its body)."""
        self.records: dict[cst.FunctionDef, frozenset[cst.BaseExpression]] = {}
        """Per function, the values of its string-keyed dict displays (a logger's record)."""
        self.scalars: set[cst.Call] = set()
        """``torch.tensor(2.0 / math.pi)`` in a function: reported only if handed to a call."""
        self.helper_results: dict[cst.Call, cst.Call] = {}
        """A call of a helper -> the factory call whose tensor it returned."""
        self.fed: set[cst.CSTNode] = set()
        """Constructions of modules (``Net()``) whose instance is called on device tensors."""
        self.number_attributes: dict[cst.ClassDef, frozenset[str]] = {}
        """Per module class, the attributes its ``__init__`` only assigns numbers."""
        self.homes: dict[cst.Call, cst.Module] = {}
        """Factories of another project file's body, walked for a call: that file's module."""
        self.unweighted: set[cst.ClassDef] = set()
        """Module classes that hold nothing to move: on the host, they still meet device
        inputs wherever those are."""
        self.scalar_held: dict[tuple[int, str], cst.Call] = {}
        """Names holding a 0-dim host tensor of a number (``total = torch.tensor(0.0)``)."""
        self.meets: dict[cst.Call, cst.BaseExpression | None] = {}
        """Factory call -> a tensor on the device its tensor meets in one operation
        (``torch.cat([torch.ones(n, 1), labels])`` with ``labels`` on the GPU)."""
        self.left_host: set[cst.Call] = set()
        """Factory calls whose tensor only becomes a Python value or is copied into another
        tensor (``.item()``, ``.copy_(t)``): the host is right for them."""
        self.host_held: dict[tuple[int, str], cst.Call] = {}
        """(scope, name) -> the factory call whose host tensor the name still holds (not
        through the file's own functions, which may move it: see ``host_factory``)."""
        self.follows: set[tuple[int, str]] = set()
        """(scope, name) of tensors made on another tensor's device (``device=q.device``): the
        function's author expects its inputs on a device."""

    def on_walked(self, event: WalkedCallEvent, semantic: Semantic) -> None:
        """``g = self.grid(h, w)``: the call's result is the helper's factory tensor, so a
        later ``g.to(x.device)`` places it."""
        made = [call for call in self.returned if self.made_at.get(call, -1) > event.start]
        parts = self.returned_parts
        if parts and any(self.made_at.get(part, -1) > event.start for part in parts if part):
            self.helper_parts[event.call] = parts
        self.returned_parts = ()
        if made:
            self.helper_results[event.call] = made[0]
            # `return h if gru else (h, c)`: a move of what the call returned moves them all
            self.join_groups(made)

    def join_groups(self, calls: Iterable[cst.Call]) -> None:
        """One group of ``calls`` and of everything already grouped with them: a move of
        any of their tensors moves them all."""
        together = tuple({part for call in calls for part in self.groups.get(call, (call,))})
        self.groups.update((part, together) for part in together)

    def on_return(self, event: ReturnEvent, semantic: Semantic) -> None:
        """``return torch.zeros(...)``, ``return h, c``: the caller gets the factory's tensor."""
        value = event.node.value
        elements = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
        held = self.held_in(semantic)
        found = [factory_inside(e, self.calls, held) for e in elements]
        self.returned.update(factory for factory in found if factory is not None)
        if not isinstance(value, cst.Tuple) and value is not None:
            # `return torch.cat([torch.sin(ang), torch.cos(ang)])`: one tensor from all of
            # them; a move of what the call returned moves it whole
            self.returned.update(factories_inside(value, self.calls, held))
        if isinstance(value, cst.Tuple):
            self.returned_parts = tuple(found)

    def held_in(self, semantic: Semantic) -> Held:
        scope = semantic.scope_id
        return lambda name: self.held.get((scope, name))

    def on_binding(self, event: BindingEvent, semantic: Semantic) -> None:
        """``h = torch.zeros(...)`` (also ``Variable(torch.zeros(...))``): ``h`` holds it."""
        key = (semantic.scope_id, event.name)
        value = event.assigned
        if value is None:
            # `noise = keep_prob` then `noise += torch.rand(...)` (EfficientNet's drop_connect):
            # the number became the added tensor, which the walk binds only then
            value = _added_to_number(event)
        owner = _made_on_input_device(value)
        if owner is not None and (semantic.scope_id, owner) not in self.host_held:
            # `pos = torch.arange(n, device=inv.device)`, `inv` a factory's tensor: on the host
            self.follows.add(key)
        else:
            self.follows.discard(key)
        if isinstance(value, cst.Call) and value in self.scalars:
            self.scalar_held[key] = value  # `total = torch.tensor(0.0)`
        else:
            self.scalar_held.pop(key, None)
        strict = self.host_factory(value, semantic) if value is not None else None
        if strict is None or (value is not None and full_reduction(value, semantic.qualify)):
            self.host_held.pop(key, None)  # `s = torch.sum(h)`: 0-dim, meets any device
        else:
            self.host_held[key] = strict
        # `h = h.float() / n`: still the factory's tensor; so are the parts of
        # `yv, xv = torch.meshgrid(torch.arange(h), torch.arange(w))`
        unpacked = unpacked_from(event.statement, event.name) if value is None else None
        factory = factory_inside(value or unpacked, self.calls, self.held_in(semantic))
        if isinstance(unpacked, cst.Call) and unpacked in self.helper_parts:
            # `tx, ty = build_targets(pred_boxes, ...)`: each name holds what the helper returns
            # at its position, not its first argument's tensor
            factory = None
        if unpacked is not None:  # each part holds all of them: a move of one moves its grid
            group = tuple(factories_inside(unpacked, self.calls, self.held_in(semantic)))
            self.groups.update((part, group) for part in group)
        elif factory is not None and value is not None:
            # `ang = torch.arange(n)[:, None] * f[None]`: one tensor made of both; a move of
            # it moves what each became
            held = self.held_in(semantic)
            group = tuple(factories_inside(value, self.calls, held))
            if isinstance(value, cst.Call) and _torch_function(semantic.qualify(value.func)):
                # `plane = torch.matmul(rows, ones)`: made of every operand, not the first only
                for arg in value.args[1:]:
                    group += tuple(factories_inside(arg.value, self.calls, held))
            if len(group) > 1:
                self.join_groups(group)
        self.held.pop(key, None)
        function = semantic.function_node
        helper = self.helper_result(value)
        if helper is None and isinstance(unpacked, cst.Call):
            # `nGT, tx, ty = build_targets(...)`: each name, the factory at its position
            parts = self.helper_parts.get(unpacked, ())
            position = unpacked_position(event.statement, event.name)
            if position is not None and position < len(parts):
                helper = parts[position]
                if helper is not None:
                    self.groups[helper] = (helper,)  # moving `tx` moves only `tx`
        if factory is None and helper is not None:
            self.held[key] = helper
        elif factory is not None:
            self.held[key] = factory
            if (
                value is not None
                and function is not None
                and self.meets_operand(value, factory, function, semantic)
            ):
                self.combined.add((function, event.name))
            if function is not None and "." not in event.name and factory not in self.bound:
                self.bound[factory] = (function, event.name)
                self.bound_to.setdefault((id(function), event.name), []).append(factory)

    def meets_operand(
        self,
        value: cst.BaseExpression,
        factory: cst.Call,
        function: cst.FunctionDef,
        semantic: Semantic,
    ) -> bool:
        """``value`` combines ``factory``'s tensor with a tensor operand of another call."""
        held = self.held_in(semantic)

        def holds(operand: cst.BaseExpression) -> bool:
            return factory in factories_inside(operand, self.calls, held)

        return meets_tensor_operand(value, holds, self.host_operand(function))

    def helper_result(self, value: cst.BaseExpression | None) -> cst.Call | None:
        """The factory whose tensor a helper's call returned, for that call or a method chain or
        subscript on it (``g = self.grid(h, w)``, ``loss = hardest(d).mean()``)."""
        while isinstance(value, cst.Call | cst.Subscript):
            if isinstance(value, cst.Call) and value in self.helper_results:
                return self.helper_results[value]
            if isinstance(value, cst.Subscript):
                value = value.value
            elif isinstance(value.func, cst.Attribute):
                value = value.func.value
            else:
                return None
        return None

    def note_filled(self, event: CallEvent, semantic: Semantic) -> None:
        """``grids.append(grid)``: the list holds the factories of all it was given, which a
        later ``torch.cat(grids).to(dev)`` moves together."""
        func, node = event.node.func, event.node
        if event.method != "append" or not node.args or not isinstance(func, cst.Attribute):
            return
        if not isinstance(func.value, cst.Name):
            return
        held = self.held_in(semantic)
        item = node.args[0].value
        given = list(factories_inside(item, self.calls, held))
        if not given:
            return
        if isinstance(item, cst.Name):
            given += self.other_arms(semantic, item.value, given[0])
        key = (semantic.scope_id, func.value.value)
        first = self.held.setdefault(key, given[0])
        self.join_groups([first, *given])

    def note_move(self, event: CallEvent, semantic: Semantic) -> None:
        """``h.cuda()`` / ``h.to(device)`` of a name holding a factory's tensor."""
        # a later `h = h.cuda()` (under `if USE_CUDA:`) places what the factory made, and so
        # does `a.expand_as(x).to(x.device)` or `.type(FloatTensor)` with a CUDA type
        func = event.node.func
        # `self.table.type_as(self._float_tensor)` (fairseq): to the other tensor's device
        moves = (
            event.method in MOVES
            or event.method == "type_as"
            or (event.method == "type" and _may_be_cuda_type(event, semantic))
        )
        if not moves or not isinstance(func, cst.Attribute):
            return
        if event.method == "to" and converts_only(event.node):
            return  # `mask.to(torch.bool)`: a conversion, where the tensor already is
        args = event.node.args
        if event.method == "type_as" and args and dotted(args[0].value) == dotted(func.value):
            return  # `fake.type_as(fake)` (a typo of lightning-bolts' GAN): stays where it is
        created = list(factories_inside(func.value, self.calls, self.held_in(semantic)))
        if not created:
            # `lanczos(ramp(r, 2), 2).to(x.device)`: a helper's tensor through another helper
            created += self.helper_chain_result(func.value)
        root = chain_root(func.value)
        if isinstance(root, cst.Name) and created:
            created += self.other_arms(semantic, root.value, created[0])
        for call in created:
            self.moved_later.update(self.groups.get(call, (call,)))

    def helper_chain_result(self, expr: cst.BaseExpression) -> list[cst.Call]:
        """The factory a helper's call returned, found through the first arguments of the
        calls around it (``lanczos(ramp(r, 2), 2)``)."""
        value: cst.BaseExpression | None = expr
        while isinstance(value, cst.Call):
            if value in self.helper_results:
                return [self.helper_results[value]]
            first = value.args[0] if value.args else None
            value = first.value if first is not None and first.keyword is None else None
        return []

    def other_arms(self, semantic: Semantic, name: str, factory: cst.Call) -> list[cst.Call]:
        """The factories bound to ``name`` in the other arm of an ``if``/``else`` than
        ``factory``: ``if full: h = torch.zeros(b, c)`` ``else: h = torch.zeros(b, 1)``, then
        ``h = h.cuda()`` (or ``hs.append(h)``) takes whichever arm made it."""
        function = semantic.function_node
        if function is None:
            return []
        bound = self.bound_to.get((id(function), name), ())
        return [c for c in bound if c is not factory and other_arm(function, factory, c)]

    def note_placing_helper(self, event: CallEvent, semantic: Semantic) -> None:
        """``create_variable(torch.zeros(...))`` / ``return cuda_variable(hidden)``: one of the
        file's functions returns what it is given moved (``tensor.cuda()`` when CUDA is
        available), so the factory's tensor is placed by it."""
        result = event.result
        if not (result.is_tensorish and result.place in (Place.DEVICE, Place.MIXED)):
            return
        if not semantic.is_local_function(event.node.func):
            return
        for arg in event.node.args:
            value = arg.value
            if isinstance(value, cst.Call) and value in self.calls:
                self.moved_later.add(value)
            elif isinstance(value, cst.Name):
                created = self.held.get((semantic.scope_id, value.value))
                if created is not None:
                    self.moved_later.add(created)

    def note_handed(self, event: CallEvent, semantic: Semantic) -> None:
        """``self.head(features, rois, roi_index)`` with ``self.head`` an object of another
        file the linter cannot see (a parameter of ``__init__``): its method may place what it
        is given (``at.totensor(roi_index)``)."""
        func = event.node.func
        if event.qualified is not None or event.module is not None:
            return
        if not isinstance(func, cst.Attribute) or dotted(func.value) == "self":
            return
        if event.receiver is not None and event.receiver.kind is not Kind.UNKNOWN:
            return
        for arg in event.node.args:
            if (
                isinstance(arg.value, cst.Name)
                and (semantic.scope_id, arg.value.value) in self.held
            ):
                self.handed.add(arg.value)

    def on_operation(self, event: OperationEvent, semantic: Semantic) -> None:
        node = event.node
        self.note_meeting([(node.left, event.left), (node.right, event.right)], semantic)

    def on_compare(self, event: CompareEvent, semantic: Semantic) -> None:
        """``best_acc < acc`` with ``best_acc = torch.zeros(1)``: a comparison of tensors is an
        operation on both (SSGC's validation loop)."""
        node = event.node
        parts = [node.left, *(target.comparator for target in node.comparisons)]
        if len(parts) == len(event.values):
            self.note_meeting(list(zip(parts, event.values, strict=True)), semantic)

    def on_augmented(self, event: AugmentedEvent, semantic: Semantic) -> None:
        """``total = torch.tensor(0.0)`` then ``total += torch.norm(err)`` with ``err`` on the
        device: an in-place update keeps the host tensor, and a CUDA operand fails it, even a
        0-dim one (a host 0-dim tensor mixes with CUDA only as an operand, never as the
        output)."""
        self.note_added_to_number(event, semantic)
        if not (event.added.is_tensorish and event.added.place is Place.DEVICE):
            return
        if semantic.function is None or semantic.on_cpu_path:
            return
        target = event.node.target
        key = (semantic.scope_id, target.value) if isinstance(target, cst.Name) else None
        scalar = self.scalar_held.get(key) if key is not None else None
        if scalar is not None and scalar in self.scalars:
            self.scalars.discard(scalar)
            self.note_factory(scalar, "tensor", semantic)
        factory = scalar or self.host_factory(target, semantic)
        if factory is not None:
            self.meets.setdefault(factory, _tensor_root(event.node.value, semantic))
            if factory not in self.moved_later:
                # `mask[i] += m[i]` then `return mask.cuda()`: it failed before the move
                self.updated_in_place.add(factory)

    def note_added_to_number(self, event: AugmentedEvent, semantic: Semantic) -> None:
        """``keep = 1 - p``, ``noise = keep`` then ``noise += torch.rand(...)`` (EfficientNet's
        drop_connect): a name that held no tensor now holds the factory's. (A tensor it held
        would be updated in place on its own device, the factory's tensor meeting it there.)"""
        target = event.node.target
        if not isinstance(target, cst.Name) or event.target.is_tensorish:
            return
        held = self.held_in(semantic)
        factory = factory_inside(event.node.value, self.calls, held)
        if factory is None:
            return
        key = (semantic.scope_id, target.value)
        self.held[key] = factory
        strict = self.host_factory(event.node.value, semantic)
        if strict is not None:
            self.host_held[key] = strict

    def note_combining_call(self, event: CallEvent, semantic: Semantic) -> None:
        """``torch.cat([torch.ones(n, 1), labels])``, ``torch.where(c, x, torch.zeros(n))``,
        ``bias.masked_fill_(torch.ones(n, n).tril() == 0, -inf)``: one operation on them all."""
        node = event.node
        operands: list[tuple[cst.BaseExpression, Value]] = []
        if event.combines:
            for arg, value in zip(node.args, event.args, strict=True):
                listed = arg.value
                if isinstance(listed, cst.Name) and LENGTHS.search(listed.value):
                    continue  # `criterion(preds, text, preds_size, length)`: lengths on the host
                if isinstance(listed, cst.Name) and value.items is not None:
                    # `res = [probs[:, 0], false_tensor]`, then `torch.stack(res)`
                    bound = assigned_value(value.binding, listed.value) if value.binding else None
                    listed = bound if isinstance(bound, cst.List | cst.Tuple) else listed
                if isinstance(listed, cst.List | cst.Tuple) and value.items is not None:
                    items = [element.value for element in listed.elements]
                    operands += zip(items, value.items, strict=False)
                elif not arg.star:
                    operands.append((arg.value, value))
        elif event.method in COMBINING_METHODS and event.receiver is not None:
            receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
            if receiver is not None and event.receiver.is_tensorish:
                operands.append((receiver, event.receiver))
                operands += (
                    (a.value, v)
                    for index, (a, v) in enumerate(zip(node.args, event.args, strict=True))
                    if not _fill_value(event.method, a, index)
                )
        if len(operands) >= 2:
            self.note_meeting(operands, semantic)

    def note_left_on_host(self, event: CallEvent, semantic: Semantic) -> None:
        """``torch.prod(torch.tensor(x.shape)).item()`` (a Python number),
        ``buf.copy_(torch.tensor(v))`` (copied across devices) and ``masked_fill``'s value:
        the host tensor is right."""
        func, node = event.node.func, event.node
        if _ctc_loss(event, semantic):
            # targets and lengths: ctc_loss takes them on the host and copies them itself
            held = self.held_in(semantic)
            for arg in node.args[1:]:
                self.left_host.update(factories_inside(arg.value, self.calls, held))
            return
        if event.method in ("item", "tolist") and isinstance(func, cst.Attribute):
            operand: cst.BaseExpression | None = func.value
        elif event.method == "copy_" and node.args:
            operand = node.args[0].value
        else:
            filled = [a for i, a in enumerate(node.args) if _fill_value(event.method, a, i)]
            if not filled:
                return
            operand = filled[0].value  # `x.masked_fill(mask, value=torch.tensor(0.0))`
        factory = factory_inside(operand, self.calls, self.held_in(semantic))
        function = semantic.function_node
        if factory is None or function is None or operand is None:
            return
        root = chain_root(operand)
        if isinstance(root, cst.Name) and (function, root.value) in self.combined:
            return  # `loss.item()` of a loss the factory's tensor met the outputs in
        if self.meets_operand(operand, factory, function, semantic):
            return
        if factory in self.meets:
            return  # `acc.item()` of a helper's `correct.sum() / torch.FloatTensor([n])`: too late
        self.left_host.add(factory)

    def note_meeting(
        self, operands: list[tuple[cst.BaseExpression, Value]], semantic: Semantic
    ) -> None:
        """A factory's tensor and a tensor on the device (or made on an input's device) in one
        operation, in a function: the operation fails on a GPU, wherever the function is."""
        if semantic.function is None or semantic.on_cpu_path:
            return
        factories: list[cst.Call] = []
        placed: list[cst.BaseExpression] = []
        # `torch.cat([ret, xx])` with `xx` still the factory's host tensor beside a tensor not
        # known to be on the host: a move of `xx` at another use (`xx.type_as(x)`) does not
        # place this one (CoordConv's boundary channels)
        unmoved: list[cst.Call] = []
        beside_unmoved = False
        for node, value in operands:
            factory = self.host_factory(node, semantic)
            if factory is not None and value.place is Place.HOST:
                unmoved.append(factory)
            elif value.kind is Kind.TENSOR and value.place is not Place.HOST:
                beside_unmoved = True
            if full_reduction(node, semantic.qualify) and value.place is not Place.DEVICE:
                # `torch.sum(t)` of a host tensor: a CPU scalar, an operand on any device. A
                # device one is no such exception: `torch.zeros(1) + x.mean()` fails on a GPU
                continue
            if factory is not None and value.place in (Place.HOST, Place.UNKNOWN):
                factories.append(factory)
            elif (value.is_tensorish and value.place is Place.DEVICE) or (
                isinstance(node, cst.Name) and (semantic.scope_id, node.value) in self.follows
            ):
                placed.append(node)
        for factory in factories if placed else ():
            self.meets.setdefault(factory, _tensor_root(placed[0], semantic))
        if beside_unmoved:
            self.used_unmoved.update(unmoved)

    def host_factory(self, operand: cst.BaseExpression, semantic: Semantic) -> cst.Call | None:
        """The factory whose tensor ``operand`` still is: through subscripts, arithmetic,
        tensor methods and torch functions, not through the file's own functions (a
        ``Variable`` lambda that calls ``.cuda()``)."""
        while True:
            if isinstance(operand, cst.Subscript):
                operand = operand.value
            elif isinstance(operand, cst.UnaryOperation) and not isinstance(
                operand.operator, cst.Not
            ):
                operand = operand.expression  # `~torch.eye(n).bool()`
            elif isinstance(operand, cst.BinaryOperation):
                left = self.host_factory(operand.left, semantic)
                return left if left is not None else self.host_factory(operand.right, semantic)
            elif isinstance(operand, cst.Call):
                if operand in self.calls:
                    return operand
                if (
                    isinstance(operand.func, cst.Attribute)
                    and semantic.qualify(operand.func) is None
                ):
                    operand = operand.func.value  # `mask.logical_not()`, `h.float()`
                elif (semantic.qualify(operand.func) or "").startswith("torch.") and operand.args:
                    operand = operand.args[0].value  # `torch.log(h)`, `autograd.Variable(h)`
                else:
                    return None
            elif isinstance(operand, cst.Name):
                return self.host_held.get((semantic.scope_id, operand.value))
            else:
                return None

    def on_call(self, event: CallEvent, semantic: Semantic) -> None:
        module = event.module
        device_inputs = any(arg.place in (Place.DEVICE, Place.MIXED) for arg in event.args)
        if module is not None and module.origin is not None and device_inputs:
            self.fed.add(module.origin)  # `net(x.cuda())`: forward meets the device
        self.note_move(event, semantic)
        self.note_filled(event, semantic)
        self.note_placing_helper(event, semantic)
        self.note_handed(event, semantic)
        self.note_gradient(event, semantic)
        self.note_typed(event, semantic)
        self.note_scalar_argument(event, semantic)
        self.note_combining_call(event, semantic)
        self.note_left_on_host(event, semantic)
        function = _torch_function(event.qualified)
        legacy = function in api.LEGACY_TENSOR_TYPES and bool(event.node.args)
        if not (function in api.SHAPE_FACTORIES or function == "tensor" or legacy):
            return
        node = event.node
        if semantic.function is None or keyword(node, "device") is not None:
            return
        if keyword(node, "out") is not None:
            return  # `torch.arange(n, out=x.new())`: written into a tensor where `x` is
        if semantic.on_cpu_path:
            return  # `else:` of `if torch.cuda.is_available():`: the CPU is the device there
        first = node.args[0].value if node.args else None
        given = event.args[0] if event.args else None
        if function == "tensor" and given is not None and given.kind is Kind.TENSOR:
            return  # `torch.tensor(y)` of a tensor: a copy, where that tensor is
        if function == "tensor" and first is not None and _own_weight(first, semantic):
            return  # `torch.tensor(self.w_eps)` of a buffer: a copy, where the module is
        if function == "tensor" and first is not None and self.is_number(first, semantic):
            self.scalars.add(node)  # a 0-dim tensor: an operand of arithmetic on any device
            return
        written = first.elements if isinstance(first, cst.List | cst.Tuple) else ()
        if legacy and written and all(self.is_number(e.value, semantic) for e in written):
            self.constants.add(node)
        elif legacy and function in FLOAT_LEGACY and self.sized(node, semantic):
            self.constants.add(node)  # `torch.Tensor(b * self.k, 1)`: `torch.empty` of old
        self.note_factory(node, function, semantic)

    def sized(self, node: cst.Call, semantic: Semantic) -> bool:
        """Given sizes (``torch.Tensor(b * k, 1)``, ``torch.Tensor(n)`` of a number), not a
        list or an array to convert: two or more positional arguments can only be sizes."""
        arguments = node.args
        if not arguments or any(arg.keyword is not None or arg.star for arg in arguments):
            return False
        return len(arguments) > 1 or self.is_number(arguments[0].value, semantic)

    def is_number(self, expr: cst.BaseExpression, semantic: Semantic) -> bool:
        """``2.0 / math.pi``, ``self.d_head`` (``__init__`` assigns it a number), ``d_k`` (a
        parameter annotated ``int``, or a size by its name), ``d = q.size(-1)``."""
        owner = semantic.module_class
        attributes = self.numbers_of(owner.node) if owner is not None else None
        function = semantic.function_node
        parameters = number_parameters(function) if function is not None else frozenset()

        def number(name: str) -> bool:
            if name.startswith("self."):
                return attributes is not None and name[5:] in attributes
            value = semantic.lookup_local(name)
            if value is not None and value.is_tensorish:
                return False
            if name in parameters or (value is not None and value.kind is Kind.SCALAR):
                return True
            # `num_tokens, weight = self.num_tokens, self.kl_weight` (DALLE-pytorch's forward)
            copied = self.copies_in(function).get(name) if function is not None else None
            return attributes is not None and copied is not None and copied in attributes

        if isinstance(expr, cst.Call) and _one_draw(expr, semantic):
            return True  # `np.random.normal(scale=0.2)`: one float, a 0-dim tensor's value
        return is_number_expression(expr, number)

    def copies_in(self, function: cst.FunctionDef) -> dict[str, str]:
        """``_attribute_copies`` of the function, read once per function."""
        if function not in self.attribute_copies:
            self.attribute_copies[function] = _attribute_copies(function)
        return self.attribute_copies[function]

    def numbers_of(self, owner: cst.ClassDef) -> frozenset[str]:
        """The attributes ``owner``'s ``__init__`` only assigns numbers, read once per class."""
        if owner not in self.number_attributes:
            self.number_attributes[owner] = number_attributes(owner)
        return self.number_attributes[owner]

    def note_scalar_argument(self, event: CallEvent, semantic: Semantic) -> None:
        """``torch.clamp(w, max=torch.log(torch.tensor(1 / 0.01)))`` (Swin-V2's logit scale): a
        0-dim host tensor handed to a function beside the first argument is no arithmetic
        operand: it must be on that tensor's device."""
        torch_function = (event.qualified or "").startswith("torch.")
        tensor_method = event.receiver is not None and event.receiver.is_tensorish
        if not (torch_function or tensor_method):
            return  # `self.register_buffer("flag", torch.tensor(False))`: no operand
        name = (event.qualified or "")[6:] if torch_function else event.method
        if name in SCALAR_OPERATORS:
            return  # `torch.add(p, torch.tensor(1.02))`: arithmetic takes a host 0-dim operand
        for index, arg in enumerate(event.node.args if self.scalars else ()):
            if index == 0 and arg.keyword is None:
                continue  # `torch.log(t)`, `torch.sqrt(t)`: the tensor itself, still 0-dim
            scalar = factory_inside(arg.value, self.scalars)
            if scalar is not None:
                self.scalars.discard(scalar)
                self.note_factory(scalar, "tensor", semantic)

    def note_factory(self, node: cst.Call, function: str, semantic: Semantic) -> None:
        method = semantic.function or ""
        definition = semantic.function_node
        tensors = tensor_parameters(definition, _walked_tensor(semantic)) if definition else []
        # `torch.zeros(layers, batch, hidden)`: a name the factory takes as a size is a number,
        # whatever its name says; `device=hidden.device` would fail
        sizes = {dotted(arg.value) for arg in node.args if arg.keyword is None}
        tensors = [name for name in tensors if name not in sizes]
        autograd = _autograd_method(definition)
        if autograd and definition is not None:
            # `ctx` holds no device; a backward's parameters after it are the gradients
            tensors = [name for name in tensors if name != "ctx"]
            if definition.name.value == "backward":
                tensors = [p.name.value for p in definition.params.params[1:2]] + tensors
        owner = semantic.module_class
        if owner is not None and definition is not None and reads_unset(definition, owner.node):
            return  # `init_hidden` reading `self.batch` the class never sets: a dead leftover
        meets_no_input = (
            definition is not None
            and owner is not None
            and not owner.weighted
            and no_tensor_parameter(definition, _walked_other(semantic))
        )
        factory = FactoryCall(
            node,
            function,
            method,
            semantic.module_class is not None,
            semantic.module_class is None and semantic.context_module_class is not None,
            semantic.result_moved(node) or semantic.result_moved_by_caller,
            tensors[0] if tensors else None,
            semantic.call_chain[:-1],
            definition,
            owner.node if owner is not None else None,
            meets_no_input,
            _walked_numbers(definition, semantic),
            autograd,
        )
        if semantic.module_class is not None and not semantic.module_class.weighted:
            self.unweighted.add(semantic.module_class.node)
        self.factories.append(factory)
        self.calls.add(node)
        home = semantic.home_module
        if home is not None:
            self.homes[node] = home.module
        self.made_at[node] = semantic.step

    def note_typed(self, event: CallEvent, semantic: Semantic) -> None:
        """``torch.tensor(d).type(q.type())`` in a function: ``q.type()`` names the tensor type
        (``torch.cuda.FloatTensor``), not q's GPU, so the result is made on the current
        device; under DDP without ``set_device`` that is cuda:0 on every rank."""
        func, node = event.node.func, event.node
        if event.method != "type" or semantic.function is None or len(node.args) != 1:
            return
        factory = func.value if isinstance(func, cst.Attribute) else None
        typed = node.args[0].value
        if not isinstance(factory, cst.Call) or not isinstance(typed, cst.Call):
            return
        if not isinstance(typed.func, cst.Attribute) or typed.func.attr.value != "type":
            return
        if typed.args or keyword(factory, "device") is not None:
            return
        function = _torch_function(semantic.qualify(factory.func))
        if function in api.SHAPE_FACTORIES or function == "tensor":
            self.typed.append((factory, typed.func.value, semantic.module_class is not None))

    def note_gradient(self, event: CallEvent, semantic: Semantic) -> None:
        """``autograd.grad(out, x, torch.ones(n, 1))`` or ``out.backward(torch.ones(n))``
        with ``out`` on the device: the gradient must be on the outputs' device, anywhere in
        the script (a module-level training loop too)."""
        if semantic.on_cpu_path:
            return  # `else:` of `if self.gpu_mode:`: the outputs are on the CPU there
        outputs, gradient = gradient_arguments(event)
        if outputs is None or gradient is None or not isinstance(gradient.value, cst.Call):
            return
        if not (outputs.is_tensorish and outputs.place is Place.DEVICE):
            return
        factory = gradient.value
        function = _torch_function(semantic.qualify(factory.func))
        if function not in api.SHAPE_FACTORIES or keyword(factory, "device") is not None:
            return
        if not semantic.result_moved(factory):
            taker = "autograd.grad" if event.qualified == "torch.autograd.grad" else "backward"
            self.gradients.append((factory, taker))

    def finish(self, context: Context) -> Iterator[Report]:
        flags = context.flags
        if cuda_by_default(context):
            return
        for gradient, taker in self.gradients:
            message = (
                f"`{context.code(gradient)}` is created on the CPU but is the gradient of outputs "
                f"on the device: `{taker}` fails with `invalid gradient at index 0 - expected "
                "device cuda:0 but got cpu`; create it on the outputs' device "
                "(`device=out.device`, or `torch.ones_like(out)`)"
            )
            yield Report(gradient, message)
        typed = {id(call) for call, _, _ in self.typed}
        several = None
        for call, tensor, _in_module in self.typed:
            # the current device is the input's except in a process group whose ranks never
            # pick their GPU, or with a second GPU named: DataParallel runs each replica with
            # its own GPU current (DrQA's padding), `set_device` makes the chosen one current,
            # and one-process DataParallel gathers on cuda:0 (ast's loss helper)
            if several is None:
                several = _several_gpus(context)
            if not several:
                continue
            shown = context.code(tensor)
            message = (
                f"`{context.code(call)}.type({shown}.type())` is made on the current CUDA "
                f"device, not `{shown}`'s: when `{shown}` is on another GPU (a DDP rank that "
                "never called `torch.cuda.set_device`, a model on cuda:1) they meet with "
                f"`Expected all tensors to be on the same device`; pass `device={shown}.device`"
            )
            yield Report(call, message)
        # a library's module classes are placed by the project's scripts: their forward
        # meets the inputs there (the other step methods' callers may move what they return)
        met = yield from self.meeting_reports(context, typed)
        library = not (flags.places or "lightning" in flags.frameworks)
        if library and not context.library:
            return
        if library and context.path and runs_on_cpu_only(context.path):
            return  # no script or notebook of the project names a device: all run on the CPU
        if self.factories and _cpu_test_module(context):
            return  # a unit test's stub network, run on the CPU
        on_host = self.host_only(context)
        stubs = _export_stubs(context.module) if any(f.autograd for f in self.factories) else set()
        for factory in self.factories:
            if factory.autograd and factory.definition in stubs:
                continue  # an ONNX/TensorRT stub's placeholder outputs (YOLOv7's TRT_NMS)
            if id(factory.call) in typed or factory.call in met:
                continue
            if factory.function in api.LEGACY_TENSOR_TYPES and factory.call not in self.constants:
                # index tables, `.type(dtype)` casts, tokens of a string: only a tensor of
                # numbers written out (`torch.FloatTensor([2 * math.pi])`), or one seen meeting
                # the device, is the arithmetic operand this rule is about
                continue
            step = _step_method(factory)
            elsewhere = self.called_from_forward_elsewhere(factory, context) if not step else None
            step = step or elsewhere
            if step is None or self.placed(factory):
                continue
            if factory.call in self.left_host:
                continue
            if library and "forward" not in step and not factory.autograd:
                continue
            if self.only_handed_over(factory.call) or self.only_an_index(factory):
                continue
            if self.overwritten_unread(factory.call):
                continue  # `t = torch.arange(n)` then `t = ...` on the next line, not reading t
            if factory.meets_no_input:
                continue  # a stub text encoder: `torch.randn(len(list_of_text), 32)`
            if (
                step.endswith("_step")
                and "lightning" in flags.frameworks
                and _copies_batch(factory)
            ):
                continue  # `torch.tensor(y)` of a Lightning batch's tensor: where Lightning put it
            if _empty_placeholder(factory.call):
                continue  # `return out, attn, torch.empty(0)`: nothing in it to misplace
            definition = factory.definition
            if definition is not None and only_filled_in(factory.call, definition):
                continue
            if definition is not None and factory.call in self.records_of(definition):
                continue  # `log = {"train/disc_factor": torch.tensor(f), ...}`: only recorded
            if not elsewhere and "forward" in step and not self.runs_in_module(factory, context):
                continue
            if factory.owner is not None and factory.owner in on_host:
                continue
            if definition is not None and not self.reaches_device(factory, definition, context):
                continue  # only indices, numbers, tests, records: the host is right for it
            home = self.homes.get(factory.call) or context.module
            if definition is not None and _moved_where_read(factory.call, definition, home):
                continue  # `init_hidden`'s state, moved by each method that reads it
            # only a parameter known to hold a tensor has a `.device` (a helper's first one
            # may be a size; a text encoder's, a list of strings)
            # a Lightning module's step: `self.device`; a plain function's: its first tensor
            lightning = step.endswith("_step") and factory.in_module_class
            source = "self" if lightning else factory.first_param
            hint = f"device={source}.device" if source else "device=..."
            where = f"`{factory.method}`"
            if elsewhere:
                where += f" (called from {elsewhere})"
            elif step != factory.method:
                where += f" (called from `{step}`)"
            message = (
                f"`torch.{factory.function}(...)` in {where} creates the tensor on the "
                f"CPU whatever the input's device: {_advice(factory.function, hint)}"
            )
            yield Report(factory.call, message, _device_fix(factory.call, source, hint))

    def meeting_reports(
        self, context: Context, typed: set[int]
    ) -> Generator[Report, None, set[cst.Call]]:
        """Factories whose tensor meets a device tensor in an operation, in any function (a
        library's loss, a test's reference implementation): the walk saw the device there."""
        met: set[cst.Call] = set()
        for factory in self.factories:
            if factory.call not in self.meets or factory.call in met or id(factory.call) in typed:
                continue
            other = self.meets[factory.call]
            if self.placed(factory) and factory.call not in self.updated_in_place:
                continue
            if factory.call in self.left_host:
                continue
            definition = factory.definition
            if definition is not None and only_filled_in(factory.call, definition):
                continue
            met.add(factory.call)
            shown = dotted(other) if other is not None else None
            source = shown or factory.first_param
            hint = f"device={source}.device" if source else "device=..."
            meets = f"`{shown}`" if shown else "a tensor"
            message = (
                f"`torch.{factory.function}(...)` in `{factory.method}` creates the tensor on "
                f"the CPU, but it meets {meets} on the device: {_advice(factory.function, hint)}"
            )
            # the fix names a tensor the factory's line can see: a parameter of its function
            # (`acc += torch.norm(err)` later in a loop names `err`, bound after the factory)
            visible = definition is not None and source in every_parameter(definition)
            fix = _device_fix(factory.call, source, hint) if visible else None
            yield Report(factory.call, message, fix)
        return met

    def host_only(self, context: Context) -> set[cst.ClassDef]:
        """The file's module classes whose instances all stay on the host (a notebook's CPU
        chapter, before a later cell redefines the class and moves that one): their forward
        never meets a device input. A helper of the module's file is not one of them (other
        classes' forwards may share its walk)."""
        owners = {f.owner for f in self.factories if f.owner is not None and f.in_module_class}
        owners -= self.unweighted
        if not owners:
            return set()
        return host_only_classes(context.module, owners, self.fed)

    def placed(self, factory: FactoryCall) -> bool:
        """Moved where it is made (``torch.arange(n).to(x)``), or by a later statement, unless
        another use reads it unmoved (``xx.type_as(x)`` in one ``torch.cat``, ``xx`` in the
        next)."""
        later = factory.call in self.moved_later and factory.call not in self.used_unmoved
        return factory.moved_after or later

    def called_from_forward_elsewhere(self, factory: FactoryCall, context: Context) -> str | None:
        """A function of this file that other project files call only from a module's
        ``forward`` (ludwig's ``sequence_mask``), named with where: it runs on their inputs."""
        definition = factory.definition
        if factory.in_module_class or definition is None or not context.path:
            return None
        if not any(s is definition for s in context.module.body):
            return None
        bound = self.bound.get(factory.call)
        if not meets_an_argument(definition, factory.call, bound[1] if bound else None):
            return None  # `return torch.zeros(0, h, w)`: the caller decides where it goes
        return forward_callers(context.module, context.path, definition.name.value, _is_step)

    def runs_in_module(self, factory: FactoryCall, context: Context) -> bool:
        """In a module's method, or a function of this file that one calls (a helper making
        the initial hidden state) and returns the tensor. A function of another project module
        is shared with that module's own callers (a dataset's mask conversion, where the CPU is
        right): where its tensor should go is the caller's choice."""
        if factory.in_module_class or factory.autograd:
            return True
        definition = factory.definition
        return (
            factory.helper_of_module
            and factory.call in self.returned  # else forward never meets it (a Python mask)
            and any(s is definition for s in context.module.body)
        )

    def reaches_device(
        self, factory: FactoryCall, definition: cst.FunctionDef, context: Context
    ) -> bool:
        owner = factory.owner
        numbers = number_parameters(definition) | factory.numbers
        methods = {s.name.value for s in context.module.body if isinstance(s, cst.FunctionDef)}
        if owner is not None:
            numbers |= {f"self.{name}" for name in self.numbers_of(owner)}
            methods |= {s.name.value for s in owner.body.body if isinstance(s, cst.FunctionDef)}
        host = self.host_operand(definition)
        return reaches_device(factory.call, definition, host, numbers, frozenset(methods))

    def records_of(self, function: cst.FunctionDef) -> frozenset[cst.BaseExpression]:
        known = self.records.get(function)
        if known is None:
            known = self.records[function] = record_values(function)
        return known

    def only_handed_over(self, call: cst.Call) -> bool:
        """The tensor's name is bound once and only ever passed to unknown objects' methods."""
        bound = self.bound.get(call)
        if bound is None:
            return False
        uses = Uses(bound[1], call)
        walk(bound[0].body, uses)
        return uses.bindings == 1 and bool(uses.loads) and all(n in self.handed for n in uses.loads)

    def overwritten_unread(self, call: cst.Call) -> bool:
        """The name the factory's tensor is bound to is bound again by the very next statement,
        which does not read it: a dead store, never on any device."""
        bound = self.bound.get(call)
        if bound is None or not isinstance(bound[0].body, cst.IndentedBlock):
            return False
        function, name = bound
        if function not in self.blocks:
            self.blocks[function] = list(_blocks(function))
        for statements in self.blocks[function]:
            for index, statement in enumerate(statements[:-1]):
                if not isinstance(statement, cst.Assign):
                    continue
                if id(call) not in code_ids(statement.value):
                    continue
                return _rebound_unread(statements[index + 1], name)
        return False

    def only_an_index(self, factory: FactoryCall) -> bool:
        """The tensor only indexes other tensors (``x[torch.arange(b)[:, None], idx]``, or a
        name bound to it and read only in indices): PyTorch copies a CPU index to the indexed
        tensor's device, so nothing fails (at most a copy: GPD901's business)."""
        bound = self.bound.get(factory.call)
        if bound is not None and bound in self.combined:
            return False  # `mask = (torch.rand(n) + g.values()).bool()`: met before indexing
        function = bound[0] if bound is not None else factory.definition
        if function is None:
            return False
        host = self.host_operand(function)
        if bound is None:
            uses = Uses(None, factory.call, host)
            walk(function.body, uses)
            return uses.call_only_indexes(function)
        return only_indexes(bound[1], factory.call, function, host=host)

    def host_operand(self, function: cst.FunctionDef) -> Callable[[cst.BaseExpression], bool]:
        """Whether an operand of arithmetic in ``function`` is on the host: a number, or a
        factory's tensor made without ``device=`` (also through a name bound to one)."""
        names = {name: call for call, (where, name) in self.bound.items() if where is function}

        def host(operand: cst.BaseExpression) -> bool:
            if is_number_expression(operand):
                return True
            return factory_inside(operand, self.calls, names.get) is not None

        return host


def _moved_where_read(call: cst.Call, definition: cst.FunctionDef, home: cst.Module) -> bool:
    """``self.hidden = torch.zeros(...)`` in a method, and every other method of the class
    that reads ``self.hidden`` moves it first (_moved_by_readers). ``home``: the module that
    defines the method (another project file's, when the walk went there for a call)."""
    attr = stored_attribute(call, definition)
    if attr is None:
        return False
    owner = next(
        (
            statement
            for statement in home.body
            if isinstance(statement, cst.ClassDef) and definition in statement.body.body
        ),
        None,
    )
    return owner is not None and moved_by_every_reader(attr, owner, definition)


def gradient_arguments(event: CallEvent) -> tuple[Value | None, cst.Arg | None]:
    """The outputs' value and the gradient argument of ``torch.autograd.grad(outputs, inputs,
    grad_outputs)`` or ``outputs.backward(gradient)``."""
    args = list(zip(event.node.args, event.args, strict=True))
    if event.qualified == "torch.autograd.grad":
        positions = {0: "outputs", 2: "grad_outputs"}
    elif event.method == "backward" and event.receiver is not None:
        gradient = _argument(args, 0, "gradient")
        return event.receiver, gradient[0] if gradient is not None else None
    else:
        return None, None
    outputs = _argument(args, 0, positions[0])
    gradient = _argument(args, 2, positions[2])
    if outputs is None or gradient is None:
        return None, None
    return outputs[1], gradient[0]


def _argument(
    args: list[tuple[cst.Arg, Value]], position: int, name: str
) -> tuple[cst.Arg, Value] | None:
    for arg, value in args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg, value
    positional = [(arg, value) for arg, value in args if arg.keyword is None and not arg.star]
    return positional[position] if position < len(positional) else None


def _tensor_root(operand: cst.BaseExpression, semantic: Semantic) -> cst.BaseExpression | None:
    """The tensor an operand's chain starts from (``labels`` of ``labels[:, :-1]``; ``err`` of
    ``torch.norm(err)``), None when that is no tensor: a message names no module."""
    root = chain_root(operand)
    name = isinstance(root, cst.Name) and semantic.lookup(root.value) is None
    if name and semantic.qualify(root) is not None:  # `torch`, `F`: an imported module
        if isinstance(operand, cst.Call) and operand.args and not operand.args[0].star:
            return _tensor_root(operand.args[0].value, semantic)
        return None
    return root


def _copies_batch(factory: FactoryCall) -> bool:
    """``torch.tensor(labels)`` in a Lightning step's chain, of data its function was handed
    (a parameter, or unpacked from one: ``feats, labels = batch``). Lightning moves a batch's
    tensors to the device, and ``torch.tensor`` of a tensor copies it where it is."""
    call, definition = factory.call, factory.definition
    if factory.function != "tensor" or definition is None or not call.args:
        return False
    data = call.args[0].value
    if call.args[0].keyword is not None or not isinstance(data, cst.Name):
        return False
    handed = {param.name.value for param in definition.params.params}
    if data.value in handed:
        return True
    for statement in iter_statements(definition.body.body):
        if isinstance(statement, cst.Assign) and isinstance(statement.value, cst.Name):
            unpacked = statement.value.value in handed
            if unpacked and data.value in bound_names_of(statement.targets[0].target):
                return True
    return False


def _may_be_cuda_type(event: CallEvent, semantic: Semantic) -> bool:
    """``t.type(FloatTensor)`` with ``FloatTensor = torch.cuda.FloatTensor if cuda else ...``:
    not a CPU type nor a dtype named outright (``torch.float32``, ``"torch.FloatTensor"``);
    ``t.type(x.type())`` (or a ``dtype`` parameter a caller gave ``x.type()``) where ``x`` may
    be on the device."""
    call = event.node
    if len(call.args) != 1:
        return False
    if event.args and event.args[0].kind is Kind.TYPENAME:
        return event.args[0].place is not Place.HOST
    target = call.args[0].value
    text = string_value(target)
    if text is not None:
        return "cuda" in text
    if "dtype" in (dotted(target) or "").rsplit(".", 1)[-1].lower():
        return False  # `.type(dtype)`, `.type(x.dtype)`: a dtype, no device
    qualified = semantic.qualify(target) or ""
    return not (qualified.startswith("torch.") and not qualified.startswith("torch.cuda."))


def _advice(function: str, hint: str) -> str:
    if function in api.LEGACY_TENSOR_TYPES:
        # `torch.FloatTensor([...], device="cuda")` raises: legacy constructors make CPU tensors
        return (
            f"build it with `torch.tensor(..., {hint})` (a legacy constructor makes CPU "
            "tensors only)"
        )
    return f"pass `{hint}`"


def _fill_value(method: str | None, arg: cst.Arg, index: int) -> bool:
    """``value`` of ``masked_fill``: a number, or a 0-dim tensor read with ``.item()`` on any
    device (``value=torch.tensor(0.0)`` beside a CUDA tensor is right)."""
    if method not in ("masked_fill", "masked_fill_"):
        return False
    return arg.keyword.value == "value" if arg.keyword is not None else index == 1


def _device_fix(call: cst.Call, source: str | None, hint: str) -> FixSpec | None:
    """Add ``device=<source>.device`` as the factory's last argument (unsafe: a random
    factory then draws from the device's generator); a legacy constructor takes none."""
    if not source or not call.args or call.args[-1].star:
        return None
    if (dotted(call.func) or "").rsplit(".", 1)[-1] in api.LEGACY_TENSOR_TYPES:
        return None
    edit = NodeEdit(call.args[-1].value, f", {hint}", "after")
    return FixSpec((edit,), safe=False, description=hint)


ONE_DRAW = {"rand": 0, "randn": 0, "random": 0, "random_sample": 0, "normal": 2, "uniform": 2}
"""numpy.random functions, and how many positional arguments they take before ``size``: with
no ``size``, they return one number."""


def _one_draw(call: cst.Call, semantic: Semantic) -> bool:
    qualified = semantic.qualify(call.func) or ""
    function = qualified.removeprefix("numpy.random.")
    if function == qualified or function not in ONE_DRAW or keyword(call, "size") is not None:
        return False
    positional = [arg for arg in call.args if arg.keyword is None]
    return not any(arg.star for arg in call.args) and len(positional) <= ONE_DRAW[function]


def _several_gpus(context: Context) -> bool:
    """The file, or a project script that may import it (linformer's attention module and
    the DDP script beside it), runs a process group or names a second GPU, and does not make
    each rank's GPU current with ``set_device``."""
    texts = [context.module.code]
    if context.path:
        texts += importer_texts(context.path)
    return any(SEVERAL_GPUS.search(text) and "set_device" not in text for text in texts)


SEVERAL_GPUS = re.compile(r"init_process_group|DistributedDataParallel|cuda:[1-9]|\.cuda\(\s*[1-9]")
"""A file that runs on more than one GPU: a process group, or a second GPU named."""


def _added_to_number(event: BindingEvent) -> cst.BaseExpression | None:
    """The tensor added to the name in ``name += tensor``, a binding the walk makes only when
    the name held a number (or nothing) before."""
    statement = event.statement
    parts = statement.body if isinstance(statement, cst.SimpleStatementLine) else [statement]
    for part in parts:
        if isinstance(part, cst.AugAssign) and dotted(part.target) == event.name:
            return part.value
    return None


def _made_on_input_device(value: cst.BaseExpression | None) -> str | None:
    """``torch.zeros(n, device=q.device)``, ``x.to(q.device)``: made where a tensor is; the
    name of that tensor (``q``), None for anything else."""
    if not isinstance(value, cst.Call):
        return None
    argument = keyword(value, "device")
    device = argument.value if argument is not None else None
    if device is None and isinstance(value.func, cst.Attribute) and value.func.attr.value == "to":
        device = value.args[0].value if value.args else None
    if not isinstance(device, cst.Attribute) or device.attr.value != "device":
        return None
    owner = device.value
    return owner.value if isinstance(owner, cst.Name) and owner.value != "self" else None


def _ctc_loss(event: CallEvent, semantic: Semantic) -> bool:
    """``F.ctc_loss(...)``, or a call of an ``nn.CTCLoss`` module (``self.ctc(lp, targets)``)."""
    if (event.qualified or "").endswith("ctc_loss"):
        return True
    origin = event.module.origin if event.module is not None else None
    return isinstance(origin, cst.Call) and (semantic.qualify(origin.func) or "").endswith(
        "CTCLoss"
    )


EMPTY_SIZES = frozenset({"0", "[0]", "(0,)"})


def _empty_placeholder(call: cst.Call) -> bool:
    """``torch.empty(0)``, ``torch.zeros([0])``: no elements, a placeholder (an unused return
    value, an argument the callee ignores), not an operand."""
    sizes = [arg for arg in call.args if arg.keyword is None]
    code = cst.Module([]).code_for_node
    return len(sizes) == 1 and code(sizes[0].value).replace(" ", "") in EMPTY_SIZES


def _torch_function(qualified: str | None) -> str:
    """``zeros`` for ``torch.zeros``; empty for anything else."""
    return qualified[6:] if qualified is not None and qualified.startswith("torch.") else ""


NOT_TENSORS = frozenset(
    {Kind.DEVICE, Kind.MODULE, Kind.LOADER, Kind.OPTIMIZER, Kind.NONE, Kind.PARAMS, Kind.NDARRAY}
)
"""Kinds of value that are known not to be a tensor."""


def _walked_tensor(semantic: Semantic) -> Callable[[str], bool]:
    """Whether the walk holds a tensor in a local name here (the caller's argument, an
    annotation, a conventional name)."""

    def holds(name: str) -> bool:
        value = semantic.lookup_local(name)
        return value is not None and value.is_tensorish

    return holds


def _walked_other(semantic: Semantic) -> Callable[[str], bool]:
    """Whether the walk holds something known not to be a tensor in a local name here."""

    def holds(name: str) -> bool:
        value = semantic.lookup_local(name)
        return value is not None and value.kind in NOT_TENSORS

    return holds


def _walked_numbers(function: cst.FunctionDef | None, semantic: Semantic) -> frozenset[str]:
    if function is None:
        return frozenset()
    names = parameter_names(function)
    found = {
        name
        for name in names
        if (held := semantic.lookup(name)) is not None and held.kind is Kind.SCALAR
    }
    return frozenset(found)


def _blocks(function: cst.FunctionDef) -> Iterator[list[cst.BaseSmallStatement | None]]:
    """Each block of the function as its small statements in order (None for a compound
    statement): siblings that run one after the other."""

    class Blocks(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found: list[list[cst.BaseSmallStatement | None]] = []

        def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
            sequence: list[cst.BaseSmallStatement | None] = []
            for line in node.body:
                if isinstance(line, cst.SimpleStatementLine):
                    sequence.extend(line.body)
                else:
                    sequence.append(None)
            self.found.append(sequence)

    blocks = Blocks()
    walk(function.body, blocks)
    return iter(blocks.found)


def _rebound_unread(following: cst.BaseSmallStatement | None, name: str) -> bool:
    """``following`` binds ``name`` again without reading it."""
    if not isinstance(following, cst.Assign) or len(following.targets) != 1:
        return False
    if dotted(following.targets[0].target) != name:
        return False
    reads = Uses(name, None)
    walk(following.value, reads)
    return not reads.loads


def _export_stubs(module: cst.Module) -> set[cst.FunctionDef]:
    """The ``forward`` of autograd functions that also define ``symbolic``: an exporter's stub,
    whose forward only makes outputs of the right shape for tracing (the real operation is the
    ONNX or TensorRT node ``symbolic`` emits)."""
    stubs: set[cst.FunctionDef] = set()

    class Classes(cst.CSTVisitor):
        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            methods = {s.name.value: s for s in node.body.body if isinstance(s, cst.FunctionDef)}
            if "symbolic" in methods and "forward" in methods:
                stubs.add(methods["forward"])

    walk(module, Classes())
    return stubs


def _attribute_copies(function: cst.FunctionDef) -> dict[str, str]:
    """The function's names bound once to one of ``self``'s attributes (``n = self.n``, also
    unpacked: ``a, b = self.a, self.b``), each with that attribute's name."""
    copies: dict[str, str | None] = {}
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return {}
    for small in iter_statements(body.body):
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            continue
        target, value = small.targets[0].target, small.value
        pairs: list[tuple[cst.BaseExpression, cst.BaseExpression]] = [(target, value)]
        if isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple):
            names, values = target.elements, value.elements
            if len(names) == len(values):
                pairs = [(t.value, v.value) for t, v in zip(names, values, strict=True)]
        for name_node, source in pairs:
            if not isinstance(name_node, cst.Name):
                continue
            attribute = dotted(source) or ""
            copied = attribute[5:] if attribute.startswith("self.") else None
            known = name_node.value in copies
            copies[name_node.value] = None if known else copied  # bound twice: not a copy
    return {name: attr for name, attr in copies.items() if attr is not None and "." not in attr}


def _cpu_test_module(context: Context) -> bool:
    """A test module (``test_*.py``, ``*_test.py``, under ``tests/``) that never names CUDA:
    its stubs and fixtures run on the CPU, where a factory without ``device=`` is right."""
    path = PurePath(context.path)
    test = path.name.startswith("test_") or path.stem.endswith("_test")
    test = test or any(part in ("test", "tests") for part in path.parts[:-1])
    return test and "cuda" not in context.code(context.module).lower()


def _own_weight(node: cst.BaseExpression, semantic: Semantic) -> bool:
    """``self.w_eps``, a parameter or buffer of the module class the walk is in."""
    name = dotted(node) or ""
    owner = semantic.module_class
    if owner is None or not name.startswith("self.") or name.count(".") != 1:
        return False
    weights = weight_attributes(owner.node)
    return weights is not None and name[5:] in weights
