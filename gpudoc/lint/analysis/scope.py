"""Scopes: what each name holds at this point of the walk, and how parameters are typed."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.names import ImportTable, dotted
from gpudoc.lint.analysis.semantic import ModuleClass
from gpudoc.lint.analysis.values import Kind, Place, Value


@dataclass
class Scope:
    parent: Scope | None = None
    function: str | None = None
    """The enclosing function's name; None at module level."""
    module_class: ModuleClass | None = None
    """The nn.Module subclass whose method this is."""
    env: dict[str, Value] = field(default_factory=dict)
    cuda_initialised: bool = False
    local_names: frozenset[str] = frozenset()
    """Names the function binds anywhere: they hide the module's names in all of it."""
    function_node: cst.FunctionDef | None = None
    global_names: frozenset[str] = frozenset()
    """Names the function declares ``global``: binding one binds the module's name."""
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    """For a class's scope: its methods by name."""
    serial: int = field(default_factory=count().__next__)
    """Tells scopes apart (for rules that keep state per scope)."""
    bases: tuple[Scope, ...] = ()
    """For a class's scope: the scopes of its bases defined in this file, first base first."""
    moved_by_bases: frozenset[str] = frozenset()
    """For a class's scope: the ``self`` attributes its bases' ``__init__`` moves after
    calling a hook the class defines (``self.declare_networks(); self.model.to(device)``)."""
    moved_globals: dict[str, Value] = field(default_factory=dict)
    """For a function's scope: the module's modules it moved in place (``model.to(device)``
    in ``train()``), as the functions it calls next see them."""
    instance_place: Place | None = None
    """For a view of a module class's scope made for a method called on one instance: where
    that instance is (its submodules are there too)."""

    def lookup(self, name: str) -> Value | None:
        value = self.env.get(name)
        if value is None and self.bases and name.startswith("self."):
            value = self.inherited(name)
        if value is None and self.parent is not None:
            return self.parent.lookup(name)
        return value

    def inherited(self, name: str) -> Value | None:
        """``self.model`` that a base class's ``__init__`` set, as Python finds it: the first
        base first, depth first."""
        for base in self.bases:
            value = base.env.get(name) or base.inherited(name)
            if value is not None:
                return value
        return None

    def method(self, name: str, depth: int = 0) -> cst.FunctionDef | None:
        """For a class's scope: the method ``name`` as Python finds it, its own, else its
        bases' of this file, first base first, depth first (as ``inherited`` finds
        attributes)."""
        own = self.methods.get(name)
        if own is not None or depth > 8:
            return own
        for base in self.bases:
            found = base.method(name, depth + 1)
            if found is not None:
                return found
        return None

    def device_name(self) -> str | None:
        """A name holding the script's (non-CPU) device here: what a fix moves things to."""
        scope: Scope | None = self
        hidden: set[str] = set()  # a local of an inner function, whatever the outer one holds
        dotted_name = None  # `config.device`, `self.device`: when no plain name holds one
        while scope is not None:
            for name, value in scope.env.items():
                device = value.kind is Kind.DEVICE and not value.cpu_device
                if device and "." not in name and name not in hidden:
                    return name
                if device and "." in name and dotted_name is None and name.count(".") == 1:
                    dotted_name = name if name.split(".")[0] not in hidden else None
            hidden |= scope.local_names
            scope = scope.parent
        return dotted_name


def _annotation_value(annotation: cst.Annotation | None, imports: ImportTable) -> Value | None:
    if annotation is None:
        return None
    text = imports.qualify(annotation.annotation) or dotted(annotation.annotation) or ""
    last = text.rsplit(".", 1)[-1]
    if last in ("Module", "DataParallel", "DistributedDataParallel"):
        return Value(Kind.MODULE, weighted=True)
    if last == "Tensor":
        return Value(Kind.TENSOR)
    if last == "DataLoader":
        return Value(Kind.LOADER, Place.HOST)
    if last == "device":
        return Value(Kind.DEVICE)
    return None


def parameter_values(params: cst.Parameters, imports: ImportTable) -> dict[str, Value]:
    """Type a function's parameters from annotations, then from conventional names.

    A module parameter counts as placed when the function also takes a device: `def test(model,
    device, loader)` is the shape whose unmoved batches the tutorials warn about.
    """
    all_params = [*params.posonly_params, *params.params, *params.kwonly_params]
    names = [param.name.value for param in all_params]
    has_device = any(api.DEVICE_NAME.search(name) and "rank" not in name.lower() for name in names)
    values: dict[str, Value] = {}
    for param, name in zip(all_params, names, strict=True):
        value = _annotation_value(param.annotation, imports)
        if value is not None and value.kind is Kind.MODULE and api.LOSS_NAME.match(name):
            value = None  # `criterion: nn.Module`: a loss, whose weights (if any) are unknown
        if value is None:
            value = _value_from_name(name, has_device)
        elif value.kind is Kind.MODULE and has_device:
            value = value.with_place(Place.DEVICE)
        if value is not None:
            values[name] = value
    return values


def _value_from_name(name: str, has_device: bool) -> Value | None:
    if api.DEVICE_NAME.search(name) and "rank" not in name.lower():
        return Value(Kind.DEVICE)
    if api.MODULE_NAME.match(name):
        place = Place.DEVICE if has_device else Place.UNKNOWN
        return Value(Kind.MODULE, place, weighted=True)
    if api.LOSS_NAME.match(name):
        return Value(Kind.MODULE, by_name=True)  # its weights, if any, are not known
    if api.LOADER_NAME.match(name):
        return Value(Kind.LOADER, Place.HOST, by_name=True)
    if api.TENSOR_NAME.match(name):
        return Value(Kind.TENSOR, by_name=True)
    return None
