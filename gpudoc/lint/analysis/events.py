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
from typing import TYPE_CHECKING, Any, Literal, Protocol

import libcst as cst

from gpudoc.lint.analysis.values import Value

if TYPE_CHECKING:
    from gpudoc.lint.analysis.facts import FileFlags, ModuleClass

EventKind = Literal[
    "call", "binding", "statement", "subscript", "attribute", "function", "return", "compare"
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
    def default_device_context(self) -> cst.BaseExpression | None:
        """The device of the innermost enclosing ``with torch.device(...):`` block, if any."""

    @property
    def under_guard(self) -> bool:
        """Inside a branch of a device-availability test (``if torch.cuda.is_available():``)."""


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


@dataclass(frozen=True)
class BindingEvent:
    name: str
    """``x`` or ``self.weight``."""
    target: cst.BaseExpression | None
    value: Value
    previous: Value | None
    """What the name held before this binding."""
    statement: cst.CSTNode


@dataclass(frozen=True)
class StatementEvent:
    """An expression statement: a call whose result is discarded, a bare name, ..."""

    node: cst.Expr
    value: Value


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
class FunctionEvent:
    node: cst.FunctionDef
    params: dict[str, Value]
    """The parameters' values for this walk of the body (call-site values where known)."""


@dataclass(frozen=True)
class ReturnEvent:
    node: cst.Return
    value: Value


@dataclass(frozen=True)
class CompareEvent:
    node: cst.Comparison
    values: tuple[Value, ...]


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
