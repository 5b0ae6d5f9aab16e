"""Methods that read an attribute their class never sets: dead leftovers.

A module method that reads ``self.batch`` where no method of the class assigns it (nor
registers it, nor defines it at class level) raises ``AttributeError`` the first time it runs:
nothing calls it. Rules leave what such a method builds alone. Read only for classes whose
bases are ``nn.Module`` alone: a base class of the project may set anything.
"""

from __future__ import annotations

from functools import lru_cache

import libcst as cst

from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.parameterless import REGISTERS
from gpudoc.lint.visit import walk

MODULE_BASES = frozenset({"nn.Module", "torch.nn.Module", "Module"})


def reads_unset(method: cst.FunctionDef, owner: cst.ClassDef) -> bool:
    """``method`` of ``owner`` reads a plain ``self.<attr>`` no part of ``owner`` sets."""
    name = method.name.value
    if name.startswith("__") or name == "forward" or name.endswith("_step"):
        return False  # `__init__` sets them; `forward` and a step are what the module runs
    known = _set_by(owner)
    if known is None:
        return False
    reads = _Reads()
    walk(method.body, reads)
    return any(name not in known and not name.startswith("_") for name in reads.names)


@lru_cache(maxsize=256)
def _set_by(owner: cst.ClassDef) -> frozenset[str] | None:
    """What ``owner`` sets on ``self`` or defines in its body; None when that cannot be known
    (another base class, ``setattr``, ``self.__dict__``)."""
    if not owner.bases or any(dotted(base.value) not in MODULE_BASES for base in owner.bases):
        return None
    body = owner.body.body if isinstance(owner.body, cst.IndentedBlock) else ()
    known = {"training"}
    for statement in body:
        if isinstance(statement, cst.FunctionDef | cst.ClassDef):
            known.add(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                targets = small.targets if isinstance(small, cst.Assign) else ()
                known.update(dotted(t.target) or "" for t in targets)
                if isinstance(small, cst.AnnAssign):
                    known.add(dotted(small.target) or "")
    stores = _Stores()
    walk(owner, stores)
    if stores.opaque:
        return None
    return frozenset(known | stores.names)


class _Stores(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.opaque = False

    def _target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Tuple | cst.List):
            for element in target.elements:
                self._target(element.value)
        elif isinstance(target, cst.Attribute) and dotted(target.value) == "self":
            self.names.add(target.attr.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted(node.func) or ""
        last = name.rsplit(".", 1)[-1]
        if last in REGISTERS and node.args:
            value = node.args[0].value
            if isinstance(value, cst.SimpleString):
                self.names.add(value.value.strip("\"'"))
            else:
                self.opaque = True
        elif last == "setattr" or "__dict__" in name:
            self.opaque = True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "__dict__":
            self.opaque = True


class _Reads(cst.CSTVisitor):
    """``self.<attr>`` read as a value (not called: a method may come from ``nn.Module``)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and dotted(node.func.value) == "self":
            for arg in node.args:
                walk(arg, self)
            return None

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if dotted(node.value) == "self":
            self.names.add(node.attr.value)
