"""Events the walk emits, and the read-only view of the walk that rules get with them.

A rule that subscribes to events (``Rule.EVENTS``) keeps its whole detection in its own module:
it reads each event with the semantic model at that point of the walk (what names hold, which
function and class it is in, whether a device guard holds) and keeps its own state. The walk
builds an event only when some rule listens for its kind, so an unused kind costs nothing.

A function body may be walked more than once (at each call site, with the arguments' values,
and a loop body a second time): a rule sees the same node again and should report it once; the
checker drops repeated reports of one node by one rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, Protocol

import libcst as cst

from gpudoc.lint.analysis.names import assigned_value
from gpudoc.lint.analysis.values import Value

if TYPE_CHECKING:
    from gpudoc.lint.analysis.semantic import FileFlags, ModuleClass
    from gpudoc.lint.project import ProjectModule

EventKind = Literal[
    "call",
    "binding",
    "statement",
    "subscript",
    "attribute",
    "function",
    "return",
    "compare",
    "operation",
    "augmented",
    "item",
    "cuda",
    "class",
    "member",
    "walked",
]


class Semantic(Protocol):
    """What a rule may ask the walk about the point where an event happened."""

    @property
    def flags(self) -> FileFlags: ...

    def lookup(self, name: str) -> Value | None:
        """What ``name`` (``x`` or ``self.weight``) holds here, or None when it is not bound."""

    def qualify(self, node: cst.BaseExpression) -> str | None:
        """``torch.nn.Linear`` for ``nn.Linear`` after ``import torch.nn as nn``."""

    def device_name(self) -> str | None:
        """A name that holds the script's (non-CPU) device here: what a fix moves things to."""

    @property
    def function(self) -> str | None:
        """The innermost function being walked, None at module or class level."""

    @property
    def context_function(self) -> str | None:
        """The outermost function of the call chain being walked: ``forward`` for a helper
        that ``forward`` calls, else the function itself."""

    @property
    def module_class(self) -> ModuleClass | None:
        """The nn.Module subclass whose method is being walked."""

    @property
    def context_module_class(self) -> ModuleClass | None:
        """The nn.Module subclass of the outermost function of the call chain: the module
        whose ``forward`` called a module-level helper, else ``module_class``."""

    @property
    def default_device_context(self) -> cst.BaseExpression | None:
        """The device of the innermost enclosing ``with torch.device(...):`` block, if any."""

    @property
    def under_guard(self) -> bool:
        """Inside a branch of a device-availability test (``if torch.cuda.is_available():``)."""

    def result_moved(self, node: cst.Call) -> bool:
        """What ``node`` returns is moved by the expression around it (``nn.Loss(...).to(d)``,
        ``torch.arange(n).unsqueeze(0).cuda()``)."""

    @property
    def result_moved_by_caller(self) -> bool:
        """A call being walked (of this function or one that calls it) has its result moved
        (``helper(n).to(device)``), or its function returns only moved tensors."""

    @property
    def function_node(self) -> cst.FunctionDef | None:
        """The innermost function being walked."""

    def lookup_local(self, name: str) -> Value | None:
        """What ``name`` holds in the innermost scope itself (not in the scopes around it)."""

    @property
    def home_module(self) -> ProjectModule | None:
        """The project module (another file) whose function is being walked for a call here;
        None in this file's own code."""

    @property
    def call_chain(self) -> tuple[str, ...]:
        """The functions whose bodies are being walked for a call, outermost first (the last
        is the function itself)."""

    @property
    def on_cpu_path(self) -> bool:
        """On the CPU path of a device guard (``else:`` of ``if torch.cuda.is_available():``),
        where ``device`` is the CPU too."""

    @property
    def on_gpu_path(self) -> bool:
        """On the GPU path of a device guard (``if use_cuda:``), where CUDA exists."""

    @property
    def walked_for_call(self) -> bool:
        """The body being walked is a function's, walked for one of its calls (other calls
        may pass other values)."""

    @property
    def on_placed_instance(self) -> bool:
        """In a module's own method walked for a call on an instance on the device
        (``policy.act(obs)`` after ``policy.to(device)``): its submodules are there too."""

    @property
    def scope_id(self) -> int:
        """Tells the innermost scope apart from every other one (each walk of a function body
        is a scope of its own)."""

    @property
    def step(self) -> int:
        """The walk's clock: it grows with each expression evaluated, so two events at the
        same step came from one evaluation (``a, b = f()``)."""

    def in_branch_of(self, test: cst.BaseExpression) -> bool:
        """Inside a branch of the ``if`` whose test is ``test``."""

    @property
    def in_branch(self) -> bool:
        """Inside a branch of any ``if`` of the walk (this function's or a caller's)."""

    @property
    def in_init(self) -> bool:
        """In a module's ``__init__``, or a helper method it calls."""

    def is_module_class(self, node: cst.BaseExpression) -> bool:
        """``node`` names an nn.Module subclass of this file or of the project's own modules."""

    def module_class_named(self, node: cst.BaseExpression) -> ModuleClass | None:
        """The nn.Module subclass ``node`` names, as ``is_module_class`` finds it."""

    def class_method(self, class_name: str, method: str) -> cst.FunctionDef | None:
        """The method of the file's (or a project module's) class as Python finds it for an
        instance of that class: its own, else its bases'."""

    def returns_module(self, node: cst.BaseExpression) -> bool:
        """``node`` names one of the file's functions (not a class) whose walked returns
        include a module (``make_head(dim, n)``)."""

    def is_local_function(self, node: cst.BaseExpression) -> bool:
        """``node`` is the plain name of one of the file's (or its home file's) functions."""

    def local_function(self, node: cst.BaseExpression) -> cst.FunctionDef | None:
        """The function of the file (or of a project module it imports) ``node`` names."""

    def function_beside(self, method: cst.FunctionDef, name: str) -> cst.FunctionDef | None:
        """The top-level function ``name`` of the file that defines ``method``: this file, or
        the project module a class of another file came from."""

    def calls_named(self, name: str) -> int:
        """How many calls in the file name ``name`` (``name(...)`` or ``x.name(...)``)."""

    @property
    def dataset(self) -> str | None:
        """The Dataset subclass whose body is being walked."""

    @property
    def cuda_initialised(self) -> bool:
        """Something above this point, in this function or at module level, initialised CUDA
        (a ``torch.cuda`` call, ``.cuda()``, a tensor placed on ``"cuda"``)."""


@dataclass(frozen=True)
class CallEvent:
    node: cst.Call
    qualified: str | None
    """The imported name called (``torch.zeros``), when the callee is one."""
    method: str | None
    """``to`` for ``x.to(...)``: the attribute called, when the callee is one."""
    receiver: Value | None
    """For a method call, what the receiver holds."""
    args: tuple[Value, ...]
    """The value of each argument, in ``node.args`` order."""
    result: Value
    module_name: str | None = None
    """For a call of a module (``model(x)``, ``self.encoder(x)``, ``model.forward(x)``): the
    name it is called by (empty when it has none)."""
    module: Value | None = None
    """For a call of a module: the module, as the call sees it."""
    combines: bool = False
    """A loss (an unweighted module) or a torch function: its tensor arguments must share a
    device."""


@dataclass(frozen=True)
class BindingEvent:
    name: str
    """``x`` or ``self.weight``."""
    target: cst.BaseExpression | None
    value: Value
    previous: Value | None
    """What the name held before this binding."""
    statement: cst.CSTNode

    @cached_property
    def assigned(self) -> cst.BaseExpression | None:
        """``assigned_value(statement, name)``: the expression assigned to the name, read once
        for all the rules that listen (most of them ask)."""
        return assigned_value(self.statement, self.name)


@dataclass(frozen=True)
class StatementEvent:
    """An expression statement: a call whose result is discarded, a bare name, ..."""

    node: cst.Expr
    value: Value
    receiver: Value | None = None
    """For a conversion or move whose result is discarded (``x.to(device)``): what the
    receiver held before it."""
    line: cst.SimpleStatementLine | None = None
    """The line that holds the statement."""


@dataclass(frozen=True)
class SubscriptEvent:
    node: cst.Subscript
    base: Value
    indices: tuple[Value, ...]
    """The value of each plain index (slices are left out)."""


@dataclass(frozen=True)
class AttributeEvent:
    """An attribute read that is not itself called (``model.cuda`` without parentheses)."""

    node: cst.Attribute
    base: Value


@dataclass(frozen=True)
class MemberEvent:
    """A dotted attribute read (``self.weight``, ``args.lr``), before its value is looked up."""

    node: cst.Attribute
    name: str


@dataclass(frozen=True)
class FunctionEvent:
    node: cst.FunctionDef
    params: dict[str, Value]
    """The parameters' values for this walk of the body (call-site values where known)."""


@dataclass(frozen=True)
class ReturnEvent:
    node: cst.Return
    value: Value


@dataclass(frozen=True)
class ItemEvent:
    """An item assignment ``base[index] = value``: it binds no name."""

    target: cst.Subscript
    statement: cst.CSTNode
    value: Value | None = None
    """What is stored (None for an augmented assignment)."""


@dataclass(frozen=True)
class CudaEvent:
    """CUDA named where a device is expected: ``"cuda:0"`` as a device or assigned to a name,
    ``torch.device("cuda")``, ``.cuda()``, ``torch.cuda.FloatTensor(...)``."""

    node: cst.CSTNode
    text: str
    """The device text (``cuda:0``), or ``.cuda()``."""


@dataclass(frozen=True)
class ClassEvent:
    """A class definition, before its body is walked."""

    node: cst.ClassDef
    module_class: ModuleClass | None
    """What the walk knows of it when it is an nn.Module subclass."""


@dataclass(frozen=True)
class WalkedCallEvent:
    """A function's body walked for one of its calls, once the walk is over: the events whose
    ``Semantic.step`` is above ``start`` came from that walk (or the calls it walked)."""

    function: cst.FunctionDef
    call: cst.Call
    is_method: bool
    foreign: bool
    """The function lives in another file of the project."""
    start: int
    """``Semantic.step`` when the walk began."""


@dataclass(frozen=True)
class CompareEvent:
    node: cst.Comparison
    values: tuple[Value, ...]


@dataclass(frozen=True)
class OperationEvent:
    """Arithmetic on two operands (``a + b``, ``mask * x``): tensors must share a device."""

    node: cst.BinaryOperation
    left: Value
    right: Value


@dataclass(frozen=True)
class AugmentedEvent:
    """``total += err``: the target is updated in place, on its own device, with the value."""

    node: cst.AugAssign
    target: Value
    added: Value


Listener = Callable[[Any, Semantic], None]


class EventBus:
    """The walk's subscribers, by event kind."""

    def __init__(self) -> None:
        self.listeners: dict[str, list[Listener]] = {}

    def subscribe(self, kind: EventKind, listener: Listener) -> None:
        self.listeners.setdefault(kind, []).append(listener)

    def wants(self, kind: EventKind) -> bool:
        return kind in self.listeners

    def emit(self, kind: EventKind, event: object, semantic: Semantic) -> None:
        for listener in self.listeners.get(kind, ()):
            listener(event, semantic)
