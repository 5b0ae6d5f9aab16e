"""Evaluating expressions to values, in program order. Calls are in calls.py."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import (
    AttributeEvent,
    CompareEvent,
    EventBus,
    EventKind,
    MemberEvent,
    SubscriptEvent,
)
from gpudoc.lint.analysis.flow import Polarity, guard_polarity, join_of, join_values
from gpudoc.lint.analysis.functions import FunctionSyntax
from gpudoc.lint.analysis.homes import Home
from gpudoc.lint.analysis.names import ImportTable, call_counts, dotted
from gpudoc.lint.analysis.scope import Scope
from gpudoc.lint.analysis.semantic import FileFlags, ModuleClass
from gpudoc.lint.analysis.values import (
    SCALAR,
    UNKNOWN,
    Kind,
    Place,
    Value,
    element_of,
    join_places,
    unpack,
)

TENSOR_ATTRS = frozenset(
    ["data", "T", "mT", "H", "real", "imag", "grad", "logits", "loss", "last_hidden_state"]
)


def string_value(node: cst.BaseExpression) -> str | None:
    if not isinstance(node, cst.SimpleString):
        return None
    raw = node.value
    if raw[:1] in ("'", '"') and "\\" not in raw:
        # a plain literal: its text is between the quotes (libcst's evaluated_value compiles
        # each one with ast.literal_eval, a tenth of the whole walk on real code)
        quote = raw[:3] if raw[:3] in ("'''", '"""') and len(raw) >= 6 else raw[0]
        return raw[len(quote) : -len(quote)]
    text = node.evaluated_value
    return text if isinstance(text, str) else None


class Evaluator:
    def __init__(self, imports: ImportTable, bus: EventBus | None = None) -> None:
        self.imports = imports
        self.flags = FileFlags()
        """What the walk found about the whole file (complete once it is over)."""
        self.bus = bus if bus is not None else EventBus()
        self.call_operands: dict[cst.Call, list[tuple[tuple[Value, ...], Value | None]]] = {}
        self.call_roles: dict[cst.Call, tuple[str | None, Value | None, bool]] = {}
        """For the call event: the module a call calls (its name and value), and whether the
        call combines its tensor arguments."""
        """Each call's argument values (and receiver), kept until its call event is built."""
        self.path: str | None = None
        """The file being linted, to find the project modules it imports."""
        self.project_imports: dict[str, tuple[Path, str]] = {}
        """Names imported from the project's own modules, not read yet (walker resolves them)."""
        self.homes: dict[cst.FunctionDef, Home] = {}
        """Functions imported from the project's other modules, with their home module."""
        self.local_functions: dict[str, cst.FunctionDef] = {}
        """Module-level functions of this file by name: calls walk their bodies."""
        self.pending: dict[cst.FunctionDef, Scope] = {}
        """Functions and methods not walked yet, with the scope they are defined in."""
        self.summaries: dict[cst.FunctionDef, dict[tuple[object, ...], Value]] = {}
        """What a function returned, by the shape of the arguments it was walked for."""
        self.polarities: dict[cst.BaseExpression, Polarity | None] = {}
        self.syntax: dict[cst.FunctionDef, FunctionSyntax] = {}
        """What each function's text says, read once (walker.facts_of)."""
        self.call_stack: list[cst.FunctionDef] = []
        self.moved_results: list[bool] = []
        """For each call being walked: its caller moves the result (``helper(n).to(dev)``)."""
        self.returns: list[list[Value]] = []
        """What each function being walked has returned so far, innermost last."""
        self.context_stack: list[str] = []
        """The functions whose bodies are being walked for a call, outermost first."""
        self.module_scope = Scope()
        self.scope = self.module_scope
        self.guard_depth = 0
        self.cpu_path = 0
        self.device_context = 0
        """Inside ``with torch.device(...):``: new tensors and modules are not on the host."""
        """Inside the CPU path of a device guard: there, ``device`` is the CPU too."""
        self.device_contexts: list[cst.BaseExpression] = []
        """The devices of the enclosing ``with torch.device(...):`` blocks, innermost last."""
        self.terminated = False
        """The path being walked has returned, raised, broken out or continued."""
        self.loop_depth = 0
        self.step = 0
        self.moved_receivers: set[cst.Call] = set()
        self.dataset_stack: list[str] = []
        """Dataset subclasses being walked: a device move inside one makes its batches unknown."""
        self.device_datasets: set[str] = set()
        self.branch_tests: list[cst.BaseExpression] = []
        """Tests of the enclosing ``if`` statements, innermost last."""
        self.local_classes: dict[str, ModuleClass | str] = {}
        """Class name -> its ModuleClass, or ``"dataset"``."""
        self.module: cst.Module | None = None
        self.call_counts: dict[str, int] | None = None
        """Calls in the file by the name called, counted the first time it matters."""

    # -- the semantic view rules get with events (analysis/events.py) ----------------------
    def lookup(self, name: str) -> Value | None:
        return self.scope.lookup(name)

    def qualify(self, node: cst.BaseExpression) -> str | None:
        return self.imports.qualify(node)

    def device_name(self) -> str | None:
        return self.scope.device_name()

    @property
    def function(self) -> str | None:
        return self.scope.function or None

    @property
    def context_function(self) -> str | None:
        return self.context_stack[0] if self.context_stack else self.function

    @property
    def module_class(self) -> ModuleClass | None:
        return self.scope.module_class

    @property
    def in_init(self) -> bool:
        """In a module's ``__init__``, or a helper method it calls."""
        return self.scope.module_class is not None and "__init__" in self.context_stack

    @property
    def default_device_context(self) -> cst.BaseExpression | None:
        return self.device_contexts[-1] if self.device_contexts else None

    @property
    def under_guard(self) -> bool:
        return self.guard_depth > 0

    def result_moved(self, node: cst.Call) -> bool:
        return node in self.moved_receivers

    @property
    def result_moved_by_caller(self) -> bool:
        return any(self.moved_results)

    @property
    def function_node(self) -> cst.FunctionDef | None:
        return self.scope.function_node

    def lookup_local(self, name: str) -> Value | None:
        return self.scope.env.get(name)

    @property
    def call_chain(self) -> tuple[str, ...]:
        return tuple(self.context_stack)

    @property
    def on_cpu_path(self) -> bool:
        return self.cpu_path > 0

    @property
    def walked_for_call(self) -> bool:
        return bool(self.call_stack)

    @property
    def scope_id(self) -> int:
        return self.scope.serial

    @property
    def dataset(self) -> str | None:
        return self.dataset_stack[-1] if self.dataset_stack else None

    @property
    def cuda_initialised(self) -> bool:
        return self.scope.cuda_initialised or self.module_scope.cuda_initialised

    def assign_name(self, name: str, value: Value) -> None:
        scope = self.scope
        if name.startswith("self.") and scope.parent is not None and scope.parent.function == "":
            scope = scope.parent
        scope.env[name] = value

    def resolve_project_name(self, local: str) -> None:
        """Overridden by the walker: read an imported project name the first time it matters."""

    def in_branch_of(self, test: cst.BaseExpression) -> bool:
        return test in self.branch_tests

    def is_module_class(self, node: cst.BaseExpression) -> bool:
        return isinstance(self.local_class(dotted(node) or ""), ModuleClass)

    def returns_module(self, node: cst.BaseExpression) -> bool:
        name = dotted(node) or ""
        function = self.local_functions.get(name)
        if function is None or self.local_class(name) is not None:
            return False
        # `make_head(dim, n)`: walked by the time its result is assigned
        return any(v.kind is Kind.MODULE for v in self.summaries.get(function, {}).values())

    def calls_named(self, name: str) -> int:
        if self.call_counts is None:
            self.call_counts = call_counts(self.module) if self.module is not None else {}
        return self.call_counts.get(name, 0)

    def is_local_function(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Name) and node.value in self.local_functions

    def local_class(self, name: str) -> ModuleClass | str | None:
        if name in self.project_imports:
            self.resolve_project_name(name)
        return self.local_classes.get(name)

    def polarity(self, test: cst.BaseExpression) -> Polarity | None:
        """Which path a test's truth stands for (flow.guard_polarity), read once per test."""
        if test not in self.polarities:
            self.polarities[test] = guard_polarity(test)
        return self.polarities[test]

    def emit(self, kind: EventKind, event: object) -> None:
        self.bus.emit(kind, event, self)

    # -- the dispatcher ----------------------------------------------------------------------
    def eval(self, node: cst.BaseExpression) -> Value:
        self.step += 1
        if isinstance(node, cst.Name):
            return self.scope.lookup(node.value) or UNKNOWN
        if isinstance(node, cst.Call):
            return self.eval_call(node)
        if isinstance(node, cst.Attribute):
            return self.eval_attribute(node)
        if isinstance(node, cst.Subscript):
            return self.eval_subscript(node)
        if isinstance(node, cst.BinaryOperation):
            return self.combine([self.eval(node.left), self.eval(node.right)])
        if isinstance(node, cst.Comparison):
            values = [self.eval(node.left)]
            values += [self.eval(target.comparator) for target in node.comparisons]
            if self.bus.wants("compare"):
                self.emit("compare", CompareEvent(node, tuple(values)))
            return self.combine(values)
        if isinstance(node, cst.UnaryOperation):
            return self.eval(node.expression)
        if isinstance(node, cst.BooleanOperation):
            self.eval(node.left)
            return self.eval(node.right)
        if isinstance(node, cst.Tuple | cst.List):
            return self.eval_sequence(node)
        if isinstance(node, cst.IfExp):
            return self.eval_ifexp(node)
        if isinstance(node, cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp):
            return self.eval_comprehension(node)
        if isinstance(node, cst.Integer | cst.Float | cst.Imaginary):
            return SCALAR
        if isinstance(node, cst.SimpleString | cst.ConcatenatedString | cst.FormattedString):
            return self.eval_string(node)
        if isinstance(node, cst.Dict):
            return self.eval_dict(node)
        if isinstance(node, cst.Lambda):
            return UNKNOWN
        self.eval_children(node)
        return UNKNOWN

    def eval_children(self, node: cst.CSTNode) -> None:
        for child in node.children:
            if isinstance(child, cst.BaseExpression):
                self.eval(child)
            elif isinstance(child, cst.Arg | cst.Element | cst.DictElement | cst.StarredElement):
                self.eval_children(child)
            elif isinstance(child, cst.FormattedStringExpression):
                self.eval(child.expression)  # f"{torch.cuda.device_count()} GPUs" calls it

    def eval_call(self, node: cst.Call) -> Value:
        raise NotImplementedError

    # -- the rest -------------------------------------------------------------------------
    def combine(self, values: list[Value]) -> Value:
        tensors = [value for value in values if value.is_tensorish]
        if not tensors:
            return UNKNOWN
        places = [value.place for value in tensors]
        places += [value.place for value in values if value.kind is Kind.MODULE]
        return Value(Kind.TENSOR, join_places(places))

    def eval_attribute(self, node: cst.Attribute) -> Value:
        name = dotted(node)
        if name is not None:
            if self.bus.wants("member"):
                self.emit("member", MemberEvent(node, name))
            known = self.scope.lookup(name)
            if known is not None:
                return known
            if self.imports.qualify(node) is not None:
                return UNKNOWN
        base = self.eval(node.value)
        if self.bus.wants("attribute"):
            self.emit("attribute", AttributeEvent(node, base))
        attr = node.attr.value
        if attr == "device":
            return Value(Kind.DEVICE, base.place, cpu_device=base.place is Place.HOST)
        if base.is_tensorish and attr in TENSOR_ATTRS:
            return Value(Kind.TENSOR, base.place, by_name=base.by_name)
        if base.kind is Kind.MODULE and attr == "module":
            return base
        return UNKNOWN

    def eval_subscript(self, node: cst.Subscript) -> Value:
        base = self.eval(node.value)
        indices = tuple(
            self.eval(element.slice.value)
            for element in node.slice
            if isinstance(element.slice, cst.Index)
        )
        if self.bus.wants("subscript"):
            self.emit("subscript", SubscriptEvent(node, base, indices))
        if base.items is not None and len(node.slice) == 1:
            index = node.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
                position = int(index.value.value, 0)
                if 0 <= position < len(base.items):
                    return base.items[position]
        if base.is_tensorish:
            return Value(Kind.TENSOR, base.place, by_name=base.by_name)
        return UNKNOWN

    def eval_sequence(self, node: cst.Tuple | cst.List) -> Value:
        items = []
        for element in node.elements:
            value = self.eval(element.value)
            items.append(UNKNOWN if isinstance(element, cst.StarredElement) else value)
        tensors = [item for item in items if item.is_tensorish]
        if tensors and len(tensors) == len(items):
            return Value(Kind.BATCH, join_places([t.place for t in tensors]), items=tuple(items))
        return Value(items=tuple(items))

    def eval_dict(self, node: cst.Dict) -> Value:
        values = []
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.eval(element.key)
            values.append(self.eval(element.value))
        tensors = [value for value in values if value.is_tensorish]
        if tensors and len(tensors) == len(values):
            return Value(Kind.BATCH, join_places([t.place for t in tensors]))
        return UNKNOWN

    def eval_string(self, node: cst.BaseExpression) -> Value:
        text = string_value(node)
        if text is None:
            self.eval_children(node)
            return UNKNOWN
        if api.DEVICE_LITERAL.match(text):
            return Value(Kind.DEVICE)
        if api.CPU_LITERAL.match(text):
            return Value(Kind.DEVICE, cpu_device=True)
        return UNKNOWN

    def eval_ifexp(self, node: cst.IfExp) -> Value:
        self.eval(node.test)
        polarity = self.polarity(node.test)
        guarded = polarity is not None
        self.guard_depth += guarded
        self.cpu_path += polarity == "cpu"
        body = self.eval(node.body)
        self.cpu_path += (polarity == "gpu") - (polarity == "cpu")
        orelse = self.eval(node.orelse)
        self.cpu_path -= polarity == "gpu"
        self.guard_depth -= guarded
        if body.kind is Kind.DEVICE or orelse.kind is Kind.DEVICE:
            return Value(Kind.DEVICE, cpu_device=body.cpu_device and orelse.cpu_device)
        if polarity == "cpu":
            body, orelse = orelse, body
        return join_values(body, orelse, join_of(polarity)) or UNKNOWN

    def eval_comprehension(
        self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp
    ) -> Value:
        saved: dict[str, Value | None] = {}
        clause: cst.CompFor | None = node.for_in
        while clause is not None:
            element = element_of(self.eval(clause.iter))
            for name, value in self.target_values(clause.target, element):
                saved.setdefault(name, self.scope.env.get(name))
                self.scope.env[name] = value
            for condition in clause.ifs:
                self.eval(condition.test)
            clause = clause.inner_for_in
        if isinstance(node, cst.DictComp):
            self.eval(node.key)
            result = self.eval(node.value)
        else:
            result = self.eval(node.elt)
        for name, old in saved.items():
            if old is None:
                self.scope.env.pop(name, None)
            else:
                self.scope.env[name] = old
        if result.is_tensorish or result.place is Place.DEVICE:
            return Value(Kind.BATCH, result.place)
        return UNKNOWN

    def target_values(self, target: cst.BaseExpression, value: Value) -> list[tuple[str, Value]]:
        """The (name, value) pairs that binding ``value`` to ``target`` produces."""
        if isinstance(target, cst.Name):
            return [(target.value, value)]
        if isinstance(target, cst.Tuple | cst.List):
            pairs: list[tuple[str, Value]] = []
            parts = unpack(value, len(target.elements))
            for element, part in zip(target.elements, parts, strict=True):
                if isinstance(element, cst.StarredElement):
                    part = UNKNOWN
                pairs += self.target_values(element.value, part)
            return pairs
        return []
