"""Plain lists of submodules that ``__init__`` registers after all (GPD104's exceptions):
``for i, a in enumerate(self.heads): self.add_module(f"head{i}", a)`` (pyGAT, or
``self.net.add_module(...)`` into a container the module holds), a loop that
registers each item's parameters (``self.register_parameter(name, p)``), or
``self.blocks = nn.ModuleList(self.paths)`` (a list wrapped once it is filled)."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis.names import class_method, dotted
from gpudoc.lint.visit import walk

REGISTERING_METHODS = frozenset({"add_module", "register_module"})
PARAMETER_REGISTRATION = REGISTERING_METHODS | {"register_parameter"}
"""In a loop over the list: ``for p in layer.parameters(): self.register_parameter(n, p)``
registers each item's parameters, the very objects ``.to()`` then moves in place."""
WRAPPERS = frozenset({"ModuleList", "ModuleDict", "Sequential", "ParameterList"})


def registered_attributes(class_node: cst.ClassDef) -> set[str]:
    """The ``self.<attr>`` names whose items ``__init__`` registers as submodules."""
    init = class_method(class_node, "__init__")
    if init is None:
        return set()
    finder = _Registrations(_registering_helpers(class_node))
    walk(init.body, finder)
    # `setattr(self, "fc%i" % i, fc)` then `self.fcs.append(fc)`: each item is registered
    for attr, items in finder.appended.items():
        if items and items <= finder.registered_names:
            finder.found.add(attr)
    return finder.found


class _Registrations(cst.CSTVisitor):
    def __init__(self, helpers: frozenset[str] = frozenset()) -> None:
        self.helpers = helpers
        """The class's own methods that register what they are given
        (``self._add_to_parameters(module.parameters(), name)``)."""
        self.found: set[str] = set()
        self.registered_names: set[str] = set()
        """Names registered one by one (``setattr(self, name, fc)``, ``self.add_module(n, fc)``)."""
        self.appended: dict[str, set[str]] = {}
        """``self.<attr>.append(<name>)``: the names each plain list gets."""

    def visit_For(self, node: cst.For) -> None:
        """``for ... in <self.attr or enumerate(self.attr)>:`` whose body calls add_module."""
        if _calls_registering_method(node.body, self.helpers):
            self.found.update(_self_attributes(node.iter))

    def visit_Call(self, node: cst.Call) -> None:
        """``nn.ModuleList(self.paths)``, ``nn.Sequential(*self.layers)``."""
        name = dotted(node.func) or ""
        if name.rsplit(".", 1)[-1] in WRAPPERS:
            for arg in node.args:
                value = arg.value
                # `nn.Sequential(self.noisy[0], nn.ReLU(), self.noisy[1])`: the list keeps
                # references to modules the container registers
                value = value.value if isinstance(value, cst.Subscript) else value
                self.found.update(_self_attributes(value))
        args = [arg.value for arg in node.args]
        if name.startswith("self.") and name[5:] in self.helpers:
            # `self._add_to_parameters(self.kernels, "kernel")`: it registers each of them
            for given in args:
                self.found.update(_self_attributes(given))
        registering = name == "setattr" or name.rsplit(".", 1)[-1] in REGISTERING_METHODS
        if registering and len(args) >= 2 and isinstance(args[-1], cst.Name):
            self.registered_names.add(args[-1].value)
        owner = _self_attributes(node.func.value) if isinstance(node.func, cst.Attribute) else set()
        if name.endswith(".append") and owner and args and isinstance(args[0], cst.Name):
            for attr in owner:
                self.appended.setdefault(attr, set()).add(args[0].value)


def _calls_registering_method(body: cst.BaseSuite, helpers: frozenset[str] = frozenset()) -> bool:
    finder = _MethodCalls(PARAMETER_REGISTRATION | helpers)
    walk(body, finder)
    return finder.found


def _registering_helpers(class_node: cst.ClassDef) -> frozenset[str]:
    """The class's methods (besides ``__init__``) that call a registering method on ``self``."""
    body = class_node.body.body if isinstance(class_node.body, cst.IndentedBlock) else ()
    return frozenset(
        statement.name.value
        for statement in body
        if isinstance(statement, cst.FunctionDef)
        and statement.name.value != "__init__"
        and _calls_registering_method(statement.body)
    )


class _MethodCalls(cst.CSTVisitor):
    def __init__(self, methods: frozenset[str]) -> None:
        self.methods = methods
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in self.methods:
            # on the module itself, or on a container it holds (`self.net.add_module(n, layer)`
            # into an `nn.Sequential()`), which registers the item under the module as well
            owner = dotted(func.value) or ""
            self.found |= owner == "self" or (owner.startswith("self.") and owner.count(".") == 1)


def _self_attributes(node: cst.BaseExpression) -> set[str]:
    """``heads`` for ``self.heads``, ``enumerate(self.heads)``, ``self.heads.values()``."""
    if isinstance(node, cst.Call):
        inner = [arg.value for arg in node.args]
        if isinstance(node.func, cst.Attribute):
            inner.append(node.func.value)  # self.heads.values() / .items()
        return {attr for value in inner for attr in _self_attributes(value)}
    name = dotted(node) or ""
    if name.startswith("self.") and name.count(".") == 1:
        return {name[5:]}
    return set()
