"""Instances of the file's plain classes (a trainer, a metric, a predictor): ``Trainer(model)``
runs ``__init__`` with the call's values, ``trainer.fit(loader)`` and ``predictor(images)``
walk the method where it is called, as calls of the file's functions do."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from gpudoc.lint.analysis.bodies import Bodies
from gpudoc.lint.analysis.expressions import Evaluator
from gpudoc.lint.analysis.flow import join_values
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.scope import Scope
from gpudoc.lint.analysis.values import INSTANCE, UNKNOWN, Kind, Place, Value
from gpudoc.lint.visit import walk

ALTERNATIVE_CONSTRUCTORS = frozenset(
    {"from_pretrained", "from_local", "from_config", "from_checkpoint", "from_file", "load"}
)
"""Class methods that build an instance (``Model.from_pretrained(...)``)."""


class Instances:
    def __init__(self, model: SemanticModel, evaluator: Evaluator, bodies: Bodies) -> None:
        self.model = model
        self.evaluator = evaluator
        self.bodies = bodies

    def named_call(self, node: cst.Call, name: str) -> Value | None:
        """``Trainer(model)`` or ``predictor(images)``; None when ``name`` is neither a plain
        class nor an instance of one with a ``__call__`` (then nothing is evaluated)."""
        if name in self.model.project_imports:
            self.model.resolve_project_name(name)
        held = self.model.scope.lookup(name)
        scope = self.model.plain_classes.get(name) if held is None else None
        if scope is not None:
            if self.call_method(scope, "__init__", node) is None:
                self.evaluator.eval_args(node)
            instance = Value(source=INSTANCE + name)
            # a wrapper with its own `__iter__` (`yield self.func(*batch)`, PyTorch's nn
            # tutorial): iterating it yields what that generator yields, walked for this instance
            iterated = self.iterate(scope, node, instance)
            return iterated if iterated is not None else instance
        if held is not None and held.source.startswith(INSTANCE):
            return self.call_on_instance(held, "__call__", node)
        return None

    def method_call(self, node: cst.Call, func: cst.Attribute) -> Value | None:
        """``trainer.step(batch)`` (or ``Trainer(model).fit(loader)``); None when the receiver
        is no instance with such a method."""
        name = dotted(func.value)
        held = self.model.scope.lookup(name) if name is not None else None
        constructor = func.value
        if isinstance(constructor, cst.Call) and isinstance(constructor.func, cst.Name):
            scope = self.model.plain_classes.get(constructor.func.value)
            if scope is not None and func.attr.value in scope.methods:
                held = self.evaluator.eval(constructor)
        if held is not None and held.source.startswith(INSTANCE):
            return self.call_on_instance(held, func.attr.value, node, held)
        return None

    def alternative_constructor(self, node: cst.Call, func: cst.Attribute) -> Value | None:
        """``ChatterboxTTS.from_pretrained(device)`` of one of the project's plain classes: an
        instance of it (whose own ``generate`` is walked), not a library's model."""
        name = dotted(func.value)
        if name is None or func.attr.value not in ALTERNATIVE_CONSTRUCTORS:
            return None
        if name in self.model.project_imports:
            self.model.resolve_project_name(name)
        if name not in self.model.plain_classes or self.model.scope.lookup(name) is not None:
            return None
        self.evaluator.eval_args(node)
        return Value(source=INSTANCE + name)

    def call_on_instance(
        self, instance: Value, method: str, node: cst.Call, receiver: Value | None = None
    ) -> Value | None:
        """A method called on an instance of one of the classes ``instance`` may be
        (``instance:A|B``): each class's method walked, what they return joined; None when
        none of them has the method."""
        names = instance.source[len(INSTANCE) :].split("|")
        scopes = [self.model.plain_classes.get(name) for name in names]
        results = [self.call_method(scope, method, node, receiver) for scope in scopes]
        returned = [result for result in results if result is not None]
        if not returned:
            return None
        value: Value | None = returned[0]
        for other in returned[1:]:
            value = join_values(value, other, "unrelated")
        return value or UNKNOWN

    def call_method(
        self, scope: Scope | None, method: str, node: cst.Call, receiver: Value | None = None
    ) -> Value | None:
        """The value a method of a plain class returns for this call, None when the class has
        no such method (then nothing is evaluated)."""
        function = scope.methods.get(method) if scope is not None else None
        if scope is None or function is None:
            return None
        args = self.evaluator.eval_args(node, receiver)
        return self.bodies.call_function(function, node, args, scope)

    def iterate(self, scope: Scope, node: cst.Call, instance: Value) -> Value | None:
        """An iterator over what the class's generator ``__iter__`` yields, keeping the
        instance's name (its other methods stay callable); None without one."""
        function = scope.methods.get("__iter__")
        if function is None:
            return None
        # `iter(instance)`: a call with no arguments, made where the instance is built
        iterated = self.bodies.call_function(function, cst.Call(func=node.func), [], scope)
        if iterated.kind is not Kind.LOADER:
            return None
        element = iterated.element
        unknown = element is None or element.place is Place.UNKNOWN
        if unknown and not _transforms(function, scope):
            # `yield getattr(batch, self.x_field), ...` of a loader not known here: what it
            # hands on is typed as before, by the names that receive it
            return None
        return replace(iterated, source=instance.source)


def _transforms(function: cst.FunctionDef, scope: Scope) -> bool:
    """``yield self.func(*batch)``: a generator that yields what a callable it was given (not a
    method of its class) makes of each item."""
    found = False

    class _Yields(cst.CSTVisitor):
        def visit_Yield(self, node: cst.Yield) -> None:
            nonlocal found
            value = node.value
            func = value.func if isinstance(value, cst.Call) else None
            name = dotted(func) if func is not None else None
            if name is not None and name.startswith("self.") and name.count(".") == 1:
                found |= name[5:] not in scope.methods

    walk(function, _Yields())
    return found
