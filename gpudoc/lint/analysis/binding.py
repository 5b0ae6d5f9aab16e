"""Binding values to names: plain names, ``self.*`` attributes, tuples, items."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis.events import BindingEvent, ItemEvent
from gpudoc.lint.analysis.expressions import Evaluator
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.semantic import ModuleClass
from gpudoc.lint.analysis.values import APPENDED, UNKNOWN, Kind, Place, Value, replace


class Binder:
    """Binds the value of an assignment, a ``for`` or a ``with`` to its target, with the
    binding events rules listen to."""

    def __init__(self, model: SemanticModel, evaluator: Evaluator) -> None:
        self.model = model
        self.evaluator = evaluator

    def bind(self, target: cst.BaseExpression, value: Value, statement: cst.CSTNode) -> None:
        if isinstance(target, cst.Name | cst.Attribute):
            name = dotted(target)
            if name is not None:
                self.bind_name(name, target, value, statement)
                if name.endswith(".data"):
                    self.bind_data(name.removesuffix(".data"), value)
            return
        if isinstance(target, cst.Tuple | cst.List):
            for name, part in self.evaluator.target_values(target, value):
                self.bind_name(name, None, part, statement)
            return
        if isinstance(target, cst.Subscript):
            # `x[mask] = 0`: a store at the indices, seen as a subscript. Evaluated whoever
            # listens: what it evaluates (a call walked, say) must not depend on the rules run
            self.evaluator.eval(target)
            self.bind_subscript(target, statement, value)

    def used_as_module(self, name: str, statement: cst.CSTNode) -> bool:
        """A name bound to what a call returned, that the file uses as a module."""
        if isinstance(statement, cst.SimpleStatementLine) and statement.body:
            statement = statement.body[0]
        assigned = statement.value if isinstance(statement, cst.Assign | cst.AnnAssign) else None
        if isinstance(assigned, cst.Await):
            assigned = assigned.expression
        if not isinstance(assigned, cst.Call):
            return False
        return name in self.model.census.used_as_modules

    def bind_data(self, name: str, value: Value) -> None:
        """``x.data = x.data.cuda()`` (PyTorch 0.3 era): x itself now lives where the new data
        does."""
        held = self.model.scope.lookup(name)
        if held is not None and held.is_tensorish and value.is_tensorish:
            self.model.assign_name(name, held.with_place(value.place))
            return
        owner, _, _ = name.rpartition(".")
        module = self.model.scope.lookup(owner) if owner else None
        if module is not None and module.kind is Kind.MODULE and value.place is not Place.HOST:
            # `cell.weight_hh.data = gru.weight_hh_l0.data`: the module's weights now live
            # where another module's do
            self.model.assign_name(owner, module.with_place(Place.UNKNOWN))

    def bind_subscript(self, target: cst.Subscript, statement: cst.CSTNode, value: Value) -> None:
        if self.model.bus.wants("item"):
            self.model.emit("item", ItemEvent(target, statement, value))
        base = dotted(target.value)
        if base is not None:
            held = self.model.scope.lookup(base)
            # a store into part of a tensor (`scores[a:b] = err`, `x[mask] = 0`) leaves it
            # where it is: PyTorch copies a value from another device, or fails. A batch (a
            # dict or list of tensors) gets an element that may live elsewhere
            if held is not None and held.source == APPENDED:
                self.model.assign_name(base, UNKNOWN)  # `outs[i] = outs[i].cpu()`: not known
            elif held is not None and held.kind is Kind.BATCH:
                self.model.assign_name(base, held.with_place(Place.UNKNOWN))

    def builds_self_placing(self, value: Value) -> bool:
        """``value`` is a new instance of a project module class that places itself."""
        origin = value.origin
        if value.kind is not Kind.MODULE or not isinstance(origin, cst.Call):
            return False
        called = self.model.local_class(dotted(origin.func) or "")
        return isinstance(called, ModuleClass) and called.places_itself

    def bind_name(
        self, name: str, target: cst.BaseExpression | None, value: Value, statement: cst.CSTNode
    ) -> None:
        scope = self.model.scope
        if name.startswith("self.") and value.is_tensorish and value.place is Place.DEVICE:
            # `self.x = torch.tensor(x, device="cuda")` in a Dataset: its batches too
            self.model.note_device_data()
        if scope is self.model.module_scope and name in self.model.imports.aliases:
            # `crnn = crnn.CRNN(...)` after `import models.crnn as crnn`: the name holds the
            # model from here on, and `crnn.cuda()` moves it
            del self.model.imports.aliases[name]
        local = scope.function is not None and name in scope.local_names
        if local and "." not in name and name not in scope.global_names:
            # a name the function binds is its own from the first line on: the module's
            # `model`, moved in `__main__`, is not what `model = Clf(...)` here re-creates
            previous = scope.env.get(name)
        else:
            previous = scope.lookup(name)
        if previous is not None and name.startswith("self.") and previous.binding is statement:
            # the same line, walked for another instance of the class (or call of the method):
            # that instance's attribute, not one this line re-creates
            previous = None
        if value.kind is Kind.UNKNOWN and self.used_as_module(name, statement):
            # `model = network_io.create_model(args)`, then `model.to(device)`: a module
            value = replace(value, kind=Kind.MODULE, weighted=True)
        if (
            value.kind is Kind.MODULE
            and value.place is Place.HOST
            and previous is not None
            and previous.is_device_module
        ):
            value = replace(value, stale=True)
        if self.model.bus.wants("binding"):
            self.model.emit("binding", BindingEvent(name, target, value, previous, statement))
        cls = self.model.scope.module_class
        if cls is not None and self.model.in_init and name.startswith("self."):
            # `self.net1 = nn.Linear(...).to("cuda:0")`: the module places its own parts
            cls.places_itself |= value.kind is Kind.MODULE and value.place is Place.DEVICE
            # `self.word_hidden = WordSequence(data)`, whose `__init__` moves its own layers
            cls.places_itself |= self.builds_self_placing(value)
        if value.kind is Kind.MODULE and value.instance is None:
            value = replace(value, instance=statement)  # a new module (sharing.py)
        self.model.assign_name(name, value.bound_at(statement))
