"""Module classes that bring their own tensors to their inputs' device where they use them:
``self.w.to(x.device)``, or the project's helper ``to_device(self.w, tensor=x)`` whose body
is ``x.to(tensor.device)``. An instance whose every parameter and buffer is brought so runs
wherever its inputs are, like a loss without weights; an attribute brought so is moved where
it is used (GPD105)."""

from __future__ import annotations

from functools import lru_cache

import libcst as cst

from gpudoc.lint.analysis.functions import argument_for
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import dotted, iter_statements
from gpudoc.lint.analysis.semantic import ModuleClass
from gpudoc.lint.visit import walk

REGISTERS = frozenset({"register_buffer", "register_parameter"})


def note_method_move(model: SemanticModel, call: cst.Call) -> None:
    """``self.w.to(x.device)``, ``.to(device=x.device)``, ``w.type_as(x)`` in a method."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in ("to", "type_as", "cuda"):
        return
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "device":
            if _input_device(arg.value):
                _note(model, func.value)
            return


def note_helper(model: SemanticModel, function: cst.FunctionDef, call: cst.Call) -> None:
    """``to_device(self.w, tensor=x)``: a call of a project function that returns one of its
    parameters moved to another's device."""
    if model.scope.module_class is None:
        return
    moves = moved_parameter(function)
    if moves is None:
        return
    moved = argument_for(function, call, moves[0], is_method=False)
    target = argument_for(function, call, moves[1], is_method=False)
    given = target.value if target is not None else None
    if moved is not None and isinstance(given, cst.Name) and given.value != "self":
        _note(model, moved.value)


def _note(model: SemanticModel, moved: cst.BaseExpression) -> None:
    """In a method of a module class (not ``__init__``), ``moved`` goes to an input's
    device: note the attribute of ``self`` it was computed from."""
    cls = model.scope.module_class
    if cls is None or model.in_init:
        return
    attribute = self_attribute(moved, model.scope.function_node)
    if attribute is not None:
        cls.follows_inputs.add(attribute)


def runs_where_its_inputs_are(cls: ModuleClass) -> bool:
    """Every parameter and buffer of the class is brought to its inputs' device, and it
    builds no layer."""
    own = weight_attributes(cls.node)
    return bool(own) and own is not None and own <= cls.follows_inputs


def _input_device(target: cst.BaseExpression) -> bool:
    """``x.device`` of a name other than ``self`` (``.type_as(x)`` names the tensor)."""
    if isinstance(target, cst.Attribute) and target.attr.value == "device":
        root = dotted(target.value)
        return root is not None and root.split(".", 1)[0] != "self"
    name = target.value if isinstance(target, cst.Name) else "self"
    return name != "self" and "type" not in name  # not `.to(dtype)`


def self_attribute(expr: cst.BaseExpression, function: cst.FunctionDef | None) -> str | None:
    """``w`` for ``self.w``, ``self.w.renorm(2, 1, 1e-5)``, or a local the method assigned one
    of those (``w = self.w.t(); to_device(w, x)``)."""
    root = _chain_root(expr)
    name = dotted(root) or ""
    if name.startswith("self.") and name.count(".") == 1:
        return name[5:]
    if isinstance(root, cst.Name) and function is not None:
        for statement in iter_statements(function.body.body):
            if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
                continue
            target = statement.targets[0].target
            if isinstance(target, cst.Name) and target.value == root.value:
                found = dotted(_chain_root(statement.value)) or ""
                if found.startswith("self.") and found.count(".") == 1:
                    return found[5:]
    return None


def _chain_root(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The start of a method chain: ``self.w`` for ``self.w.renorm(2, 1, 1e-5).mul(1e5)``."""
    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Call):
            expr = expr.value
        else:
            return expr


@lru_cache(maxsize=256)
def moved_parameter(function: cst.FunctionDef) -> tuple[str, str] | None:
    """(a, b) when ``function`` returns its parameter ``a`` moved to the device of its
    parameter ``b``: ``return x.to(tensor.device)``, or ``dv = device if device is not None
    else tensor.device`` then ``x = x.to(dv)`` and ``return x``."""
    params = [p.name.value for p in [*function.params.params, *function.params.kwonly_params]]
    devices: dict[str, str] = {}  # local -> the parameter whose device it holds
    returned: set[str] = set()
    moves: list[tuple[str, cst.BaseExpression]] = []
    for statement in iter_statements(function.body.body):
        if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
            target = statement.targets[0].target
            source = _device_of(statement.value, params, devices)
            if isinstance(target, cst.Name) and source is not None:
                devices[target.value] = source
        if isinstance(statement, cst.Return) and statement.value is not None:
            returned.add(dotted(_chain_root(statement.value)) or "")
        if isinstance(statement, cst.BaseSmallStatement):
            calls = _Calls()
            walk(statement, calls)
            moves += calls.moves
    for receiver, device in moves:
        source = _device_of(device, params, devices)
        if receiver in params and receiver in returned and source not in (None, receiver):
            return receiver, source or ""
    return None


def _device_of(expr: cst.BaseExpression, params: list[str], devices: dict[str, str]) -> str | None:
    """The parameter whose ``.device`` ``expr`` is, or mentions (``a if ... else t.device``)."""
    if isinstance(expr, cst.Name):
        return devices.get(expr.value)
    finder = _DeviceAttributes()
    walk(expr, finder)
    found = [name for name in finder.names if name in params]
    return found[0] if found else None


class _DeviceAttributes(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "device" and isinstance(node.value, cst.Name):
            self.names.append(node.value.value)


class _Calls(cst.CSTVisitor):
    """``x.to(target)`` / ``x.to(device=target)`` calls: (receiver name, target)."""

    def __init__(self) -> None:
        self.moves: list[tuple[str, cst.BaseExpression]] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "to":
            return
        if not isinstance(func.value, cst.Name):
            return
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value == "device":
                self.moves.append((func.value.value, arg.value))
                return


@lru_cache(maxsize=256)
def weight_attributes(node: cst.ClassDef) -> frozenset[str] | None:
    """The attributes holding the class's parameters and buffers (``self.w =
    nn.Parameter(...)``, ``register_buffer("h", ...)``); None when it builds a layer or
    registers what the text does not name."""
    finder = _Weights()
    walk(node, finder)
    return None if finder.unsure else frozenset(finder.names)


class _Weights(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.unsure = False

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if not isinstance(value, cst.Call):
            return
        called = (dotted(value.func) or "").rsplit(".", 1)[-1]
        for target in node.targets:
            name = dotted(target.target) or ""
            if not name.startswith("self."):
                continue
            if called == "Parameter" and name.count(".") == 1:
                self.names.add(name[5:])
            elif called[:1].isupper():
                self.unsure = True  # `self.fc = nn.Linear(...)`, a class of the project

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        if func.attr.value in REGISTERS:
            first = node.args[0].value if node.args else None
            if isinstance(first, cst.SimpleString) and isinstance(first.evaluated_value, str):
                self.names.add(first.evaluated_value)
            else:
                self.unsure = True
        elif func.attr.value in ("add_module", "register_module"):
            self.unsure = True
