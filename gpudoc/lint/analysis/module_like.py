"""Classes that are nn.Modules although the linter cannot see their base: ``class
VanillaVAE(BaseVAE)`` with ``BaseVAE`` from a package it cannot resolve, whose ``__init__``
builds ``self.fc = nn.Linear(...)``. Only ``nn.Module.__setattr__`` makes such layers submodules
that move with their parent, so a class that builds them on ``self`` is taken for a module.
``init_builds_weights`` asks the finer question GPD109 needs: does ``__init__`` build a layer
with weights at all (``nn.Sequential(nn.Linear(...))`` included)."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.names import ImportTable, class_method, dotted
from gpudoc.lint.visit import walk

PLAIN_BASES = frozenset({"object", "ABC", "abc.ABC"})
WEIGHTLESS_LAYERS = frozenset(
    {"Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"}
    | {"LocalResponseNorm"}
)
"""Torch layers that hold no weights of their own: containers, and ``LocalResponseNorm``."""

Qualify = Callable[[cst.BaseExpression], str | None]


def builds_layers(node: cst.ClassDef, imports: ImportTable) -> bool:
    """``node`` has a base other than ``object`` and its ``__init__`` assigns an ``nn`` layer
    (``nn.Linear(...)``, ``nn.Sequential(...)``) to an attribute of ``self``."""
    if not any((dotted(base.value) or "") not in PLAIN_BASES for base in node.bases):
        return False
    return _read_init(node, imports.qualify).on_self


def init_builds_weights(node: cst.ClassDef, qualify: Qualify) -> bool:
    """``node``'s ``__init__`` constructs a torch.nn layer with weights, anywhere in it."""
    return _read_init(node, qualify).weighted


def _read_init(node: cst.ClassDef, qualify: Qualify) -> _Layers:
    layers = _Layers(qualify)
    init = class_method(node, "__init__")
    if init is not None:
        walk(init.body, layers)
    return layers


class _Layers(cst.CSTVisitor):
    def __init__(self, qualify: Qualify) -> None:
        self.qualify = qualify
        self.on_self = False
        """A torch.nn layer assigned to an attribute of ``self``."""
        self.weighted = False
        """A torch.nn layer with weights constructed anywhere."""

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.qualify(node.func) or ""
        layer = qualified.rsplit(".", 1)[-1]
        if qualified.startswith("torch.nn.") and layer in api.WEIGHTED_LAYERS:
            self.weighted |= layer not in WEIGHTLESS_LAYERS

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if not isinstance(value, cst.Call):
            return
        qualified = self.qualify(value.func) or ""
        layer = qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[-1][:1].isupper()
        on_self = any(
            isinstance(t.target, cst.Attribute) and dotted(t.target.value) == "self"
            for t in node.targets
        )
        self.on_self |= layer and on_self
