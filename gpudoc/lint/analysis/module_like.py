"""Classes that are nn.Modules although the linter cannot see their base: ``class
VanillaVAE(BaseVAE)`` with ``BaseVAE`` from a package it cannot resolve, whose ``__init__``
builds ``self.fc = nn.Linear(...)``. Only ``nn.Module.__setattr__`` makes such layers submodules
that move with their parent, so a class that builds them on ``self`` is taken for a module."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis.names import ImportTable, dotted
from gpudoc.lint.visit import walk

PLAIN_BASES = frozenset({"object", "ABC", "abc.ABC"})


def builds_layers(node: cst.ClassDef, imports: ImportTable) -> bool:
    """``node`` has a base other than ``object`` and its ``__init__`` assigns an ``nn`` layer
    (``nn.Linear(...)``, ``nn.Sequential(...)``) to an attribute of ``self``."""
    if not any((dotted(base.value) or "") not in PLAIN_BASES for base in node.bases):
        return False
    init = next(
        (
            s
            for s in node.body.body
            if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"
        ),
        None,
    )
    if init is None:
        return False
    visitor = _Layers(imports)
    walk(init.body, visitor)
    return visitor.found


class _Layers(cst.CSTVisitor):
    def __init__(self, imports: ImportTable) -> None:
        self.imports = imports
        self.found = False

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if not isinstance(value, cst.Call):
            return
        qualified = self.imports.qualify(value.func) or ""
        layer = qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[-1][:1].isupper()
        on_self = any(
            isinstance(t.target, cst.Attribute) and dotted(t.target.value) == "self"
            for t in node.targets
        )
        self.found |= layer and on_self
