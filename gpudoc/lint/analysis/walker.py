"""The one walk over a module: statements in program order, scopes, classes, bindings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.classes import ClassFacts
from gpudoc.lint.analysis.events import (
    BindingEvent,
    EventBus,
    FunctionEvent,
    ReturnEvent,
    StatementEvent,
)
from gpudoc.lint.analysis.expressions import is_guard, string_value
from gpudoc.lint.analysis.facts import DiscardedMove, EnvAssign, Rebinding
from gpudoc.lint.analysis.names import bound_names, dotted
from gpudoc.lint.analysis.scope import Scope, parameter_values
from gpudoc.lint.analysis.values import UNKNOWN, Kind, Place, Value, element_of

BODY_STATEMENTS = (cst.While, cst.With, cst.Try, cst.TryStar)


class Analyzer(ClassFacts):
    def walk_block(self, statements: Sequence[cst.BaseStatement | cst.BaseSmallStatement]) -> None:
        for statement in statements:
            self.walk_statement(statement)

    def walk_body(self, body: cst.BaseSuite) -> None:
        self.walk_block(body.body)

    def walk_statement(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.walk_small(small, node)
        elif isinstance(node, cst.If):
            self.walk_if(node)
        elif isinstance(node, cst.For):
            element = element_of(self.eval(node.iter))
            self.bind(node.target, element, node)
            self.walk_body(node.body)
            if node.orelse is not None:
                self.walk_body(node.orelse.body)
        elif isinstance(node, cst.FunctionDef):
            self.walk_function(node)
        elif isinstance(node, cst.ClassDef):
            self.walk_class(node)
        elif isinstance(node, cst.With):
            for item in node.items:
                value = self.eval(item.item)
                if item.asname is not None:
                    self.bind(item.asname.name, value, node)
            self.walk_body(node.body)
        elif isinstance(node, cst.While):
            self.eval(node.test)
            self.walk_body(node.body)
        elif isinstance(node, cst.Try | cst.TryStar):
            self.walk_body(node.body)
            for handler in node.handlers:
                self.walk_body(handler.body)
            for part in (node.orelse, node.finalbody):
                if part is not None:
                    self.walk_body(part.body)
        elif isinstance(node, cst.SimpleStatementSuite | cst.IndentedBlock):
            self.walk_block(node.body)

    def walk_if(self, node: cst.If) -> None:
        self.eval(node.test)
        guarded = is_guard(node.test)
        self.guard_depth += guarded
        self.branch_tests.append(node.test)
        self.walk_body(node.body)
        self.guard_depth -= guarded
        orelse = node.orelse
        if isinstance(orelse, cst.If):
            self.walk_if(orelse)
        elif orelse is not None:
            self.walk_body(orelse.body)
        self.branch_tests.pop()

    def walk_small(self, node: cst.BaseSmallStatement, line: cst.SimpleStatementLine) -> None:
        if isinstance(node, cst.Assign):
            value = self.eval(node.value)
            self.note_cuda_assignment(node.value)
            for target in node.targets:
                self.bind(target.target, value, line)
        elif isinstance(node, cst.Expr):
            self.walk_expression_statement(node, line)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self.bind(node.target, self.eval(node.value), line)
        elif isinstance(node, cst.AugAssign):
            self.eval(node.value)
        elif isinstance(node, cst.Import | cst.ImportFrom):
            self.imports.add(node)
        elif isinstance(node, cst.Return) and node.value is not None:
            value = self.eval(node.value)
            if self.bus.wants("return"):
                self.emit("return", ReturnEvent(node, value))

    def note_cuda_assignment(self, value: cst.BaseExpression) -> None:
        """``device = "cuda"``: a hard-coded device (an IfExp around it is the fallback)."""
        text = string_value(value)
        if text is not None and api.CUDA_LITERAL.match(text):
            self.note_cuda(value, text)
        if isinstance(value, cst.FormattedString) and any(
            isinstance(part, cst.FormattedStringText) and "cuda" in part.value
            for part in value.parts
        ):
            self.facts.flags.per_rank_device = True  # f"cuda:{local_rank}"
            self.facts.flags.device_notion = True

    def walk_expression_statement(self, node: cst.Expr, line: cst.SimpleStatementLine) -> None:
        value = self.expression_statement_value(node, line)
        if self.bus.wants("statement"):
            self.emit("statement", StatementEvent(node, value))

    def expression_statement_value(self, node: cst.Expr, line: cst.SimpleStatementLine) -> Value:
        call = node.value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            return self.eval(call)
        method = call.func.attr.value
        if method not in api.DISCARDABLE_MOVES:
            self.record_append(call)
            return self.eval(call)
        receiver_node = call.func.value
        receiver = self.eval(receiver_node)
        result = self.eval(call)
        name = dotted(receiver_node)
        if (receiver.is_tensorish and not receiver.inplace_to) or _tensor_subscript(receiver_node):
            self.facts.discarded_moves.append(
                DiscardedMove(node, call, receiver_node, receiver, method, receiver.by_name)
            )
        elif name is not None and method in ("to", "cuda", "cpu"):
            moved = replace(result, kind=receiver.kind, binding=receiver.binding)
            test = self.branch_tests[-1] if self.branch_tests else None
            unrelated = test is not None and self.guard_depth == 0 and not _is_main_test(test)
            if unrelated and receiver.kind is Kind.MODULE and result.place is Place.DEVICE:
                moved = replace(moved, moved_if=test, moved_at=line)
            self.assign_name(name, moved)
            if result.place is Place.DEVICE:
                self.facts.moved_names.add(name)
                if receiver.kind is Kind.MODULE:
                    self.note_module_placed(name, line)
        return result

    # -- binding ----------------------------------------------------------------------------
    def bind(self, target: cst.BaseExpression, value: Value, statement: cst.CSTNode) -> None:
        if isinstance(target, cst.Name | cst.Attribute):
            name = dotted(target)
            if name is not None:
                self.bind_name(name, target, value, statement)
            return
        if isinstance(target, cst.Tuple | cst.List):
            for name, part in self.target_values(target, value):
                self.bind_name(name, None, part, statement)
            return
        if isinstance(target, cst.Subscript):
            self.bind_subscript(target, statement)

    def bind_subscript(self, target: cst.Subscript, statement: cst.CSTNode) -> None:
        base = dotted(target.value)
        if base == "os.environ" and len(target.slice) == 1:
            index = target.slice[0].slice
            if isinstance(index, cst.Index) and string_value(index.value) == "CUDA_VISIBLE_DEVICES":
                after = self.cuda_initialised_here()
                self.facts.env_assigns.append(EnvAssign(statement, after))
        elif base is not None:
            self.record_item_assignment(base, statement)
            held = self.scope.lookup(base)
            if held is not None and held.is_tensorish:
                self.assign_name(base, held.with_place(Place.UNKNOWN))

    def bind_name(
        self, name: str, target: cst.BaseExpression | None, value: Value, statement: cst.CSTNode
    ) -> None:
        previous = self.scope.lookup(name)
        if (
            value.kind is Kind.MODULE
            and value.place is Place.HOST
            and previous is not None
            and previous.is_device_module
        ):
            value = replace(value, stale=True)
            device = self.scope.device_name()
            self.facts.rebindings.append(Rebinding(statement, name, device))
        if previous is not None and previous.kind is Kind.MODULE:
            self.scope.rebound_at[name] = (self.step, statement)
            if value.is_device_module and not previous.is_device_module:
                self.note_module_placed(name, statement)
        if value.kind is Kind.OPTIMIZER and value.source:
            self.scope.optimizers[name] = (value.source, self.step)
        if self.bus.wants("binding"):
            self.emit("binding", BindingEvent(name, target, value, previous, statement))
        for weight in self.facts.loss_weights:
            if weight.call is value.origin:
                weight.target = name
        self.record_class_attribute(name, target, value, statement)
        self.assign_name(name, value.bound_at(statement))

    def assign_name(self, name: str, value: Value) -> None:
        scope = self.scope
        if name.startswith("self.") and scope.parent is not None and scope.parent.function == "":
            scope = scope.parent
        scope.env[name] = value

    # -- functions --------------------------------------------------------------------------
    def walk_function(self, node: cst.FunctionDef) -> None:
        # Methods see their class's ``self.*``; everything else sees the module's names.
        parent = self.scope if self.scope.function == "" else self.module_scope
        scope = Scope(parent=parent, function=node.name.value, module_class=parent.module_class)
        scope.local_names = bound_names(node)
        scope.env.update(parameter_values(node.params, self.imports))
        if any(v.kind is Kind.MODULE and v.place is Place.DEVICE for v in scope.env.values()):
            self.facts.flags.places = (
                True  # `def test(model, device, loader)`: written for a device
            )
        tensor_params = [
            p.name.value for p in node.params.params if p.name.value not in ("self", "cls")
        ]
        scope.first_tensor_param = tensor_params[0] if tensor_params else None
        if node.name.value in ("_apply", "to", "cuda") and parent.module_class is not None:
            parent.module_class.custom_apply = True
        if self.bus.wants("function"):
            self.emit("function", FunctionEvent(node, dict(scope.env)))
        saved, saved_guard = self.scope, self.guard_depth
        self.scope, self.guard_depth = scope, 0
        try:
            self.walk_body(node.body)
        finally:
            self.scope, self.guard_depth = saved, saved_guard

    def walk_class(self, node: cst.ClassDef) -> None:
        module_class = self.register_class(node)
        scope = Scope(parent=self.module_scope, function="", module_class=module_class)
        saved = self.scope
        self.scope = scope
        is_dataset = self.local_classes.get(node.name.value) == "dataset"
        try:
            self.walk_body(node.body)
        finally:
            self.scope = saved
            if is_dataset:
                self.dataset_stack.pop()


def _tensor_subscript(node: cst.BaseExpression) -> bool:
    """``batch["x"].to(device)`` as a statement: an element of a batch, never a module."""
    if not isinstance(node, cst.Subscript):
        return False
    base = (dotted(node.value) or "").rsplit(".", 1)[-1]
    return base.lower() in ("batch", "data", "inputs", "sample", "samples", "tensors", "x")


def _is_main_test(test: cst.BaseExpression) -> bool:
    return isinstance(test, cst.Comparison) and dotted(test.left) == "__name__"


def analyze(module: cst.Module, bus: EventBus | None = None) -> Analyzer:
    from gpudoc.lint.analysis.facts import Facts
    from gpudoc.lint.analysis.names import ImportTable

    analyzer = Analyzer(ImportTable(), Facts(), bus)
    analyzer.walk_block(module.body)
    return analyzer


__all__ = ["UNKNOWN", "Analyzer", "analyze"]
