"""Module-level blocks that never run as the file is written: ``if False:``, and a course's
toggled demos (``flag = 0`` then ``if flag:``, flipped by hand to run one section at a time).

The walk and the rules read the file without them, so a demo switched off neither reports its
own lines nor makes CUDA look initialised for the sections after it. Every node kept is the
parsed node itself: positions and fixes still come from the file as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from gpudoc.lint.analysis.names import bound_names_of
from gpudoc.lint.visit import walk

FALSY = frozenset({"0", "False"})
_TOGGLE = re.compile(r"^(?:\w+\s*=\s*(?:0|False)\s*(?:#.*)?|if\s+(?:False|0)\s*:.*)$", re.M)
"""The cheap test first: a module-level falsy literal bound to a name, or ``if False:``."""


def without_dead_blocks(module: cst.Module, source: str) -> cst.Module:
    """``module`` without its dead module-level ``if`` arms (the ``else`` arm stays)."""
    if not _TOGGLE.search(source):
        return module
    rebound = _Rebindings()
    walk(module, rebound)
    body = _live(module.body, rebound.globals)
    return module if body is module.body else module.with_changes(body=body)


def _live(statements: Sequence[cst.BaseStatement], shared: set[str]) -> Sequence[cst.BaseStatement]:
    off: set[str] = set()
    """Names bound to ``0`` / ``False`` by the last statement that bound them."""
    kept: list[cst.BaseStatement] = []
    changed = False
    for statement in statements:
        rest: cst.BaseStatement | None = statement
        while isinstance(rest, cst.If) and _never_true(rest.test, off):
            changed = True
            orelse = rest.orelse
            if isinstance(orelse, cst.Else):
                kept.extend(orelse.body.body)  # type: ignore[arg-type]
                rest = None
            else:
                rest = orelse  # an `elif`: an `if` of its own now
        if rest is None:
            continue
        _note(rest, off, shared)
        kept.append(rest)
    return tuple(kept) if changed else statements


def _never_true(test: cst.BaseExpression, off: set[str]) -> bool:
    if isinstance(test, cst.Name):
        return test.value == "False" or test.value in off
    return isinstance(test, cst.Integer) and test.value == "0"


def _note(statement: cst.BaseStatement, off: set[str], shared: set[str]) -> None:
    """Keep ``off`` true after ``statement``: a falsy literal bound to a name turns it off,
    any other binding of it (also nested: a loop, a ``with``) turns it back to unknown."""
    if not off and not isinstance(statement, cst.SimpleStatementLine):
        return
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
            value = small.value
            if isinstance(target, cst.Name) and target.value not in shared:
                literal = isinstance(value, cst.Name | cst.Integer) and value.value in FALSY
                if literal:
                    off.add(target.value)
                    return
    if off:
        bound = _Rebindings()
        walk(statement, bound)
        off -= bound.names


class _Rebindings(cst.CSTVisitor):
    """Names a statement may bind, and names some function declares ``global``."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.globals: set[str] = set()

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._targets(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._targets(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._targets(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._targets(node.target)

    def visit_Global(self, node: cst.Global) -> None:
        self.globals.update(item.name.value for item in node.names)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.names.add(node.name.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.names.add(node.name.value)

    def _targets(self, node: cst.BaseExpression) -> None:
        self.names |= bound_names_of(node)
