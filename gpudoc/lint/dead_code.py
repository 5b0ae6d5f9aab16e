"""Module-level sections that never run as written: ``if False:``, and a course's toggled
demos (``flag = 0`` set again before each ``if flag:``, flipped by hand to run one section at a
time). An ``if`` with another arm, or a switch the module sets only once (``train = False``),
is a mode of the program and stays.

The walk and the rules read the file without those sections, so a demo switched off neither
reports its own lines nor makes CUDA look initialised for the sections after it. Every node
kept is the parsed node itself: positions and fixes still come from the file as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from gpudoc.lint.analysis.names import bound_names_of
from gpudoc.lint.visit import walk

FALSY = frozenset({"0", "False"})
SWITCHED = FALSY | {"1", "True"}
_TOGGLE = re.compile(r"^(?:\w+\s*=\s*(?:0|False)\s*(?:#.*)?|if\s+(?:False|0)\s*:.*)$", re.M)
"""The cheap test first: a module-level falsy literal bound to a name, or ``if False:``."""


def without_dead_blocks(module: cst.Module, source: str) -> cst.Module:
    """``module`` without its dead module-level ``if`` sections (those with no other arm)."""
    if not _TOGGLE.search(source):
        return module
    toggles = _toggles(module.body)
    shared: set[str] = set()
    bound: list[set[str]] = []
    """The names each statement binds: one walk of the module for these and for ``shared``."""
    for statement in module.body if toggles else ():
        rebound = _Rebindings()
        walk(statement, rebound)
        bound.append(rebound.names)
        shared |= rebound.globals  # a toggle some function sets (`global flag`) is not known
    body = _live(module.body, shared, toggles, bound)
    return module if body is module.body else module.with_changes(body=body)


def _live(
    statements: Sequence[cst.BaseStatement],
    shared: set[str],
    toggles: set[str],
    bound: list[set[str]],
) -> Sequence[cst.BaseStatement]:
    off: set[str] = set()
    """Toggles bound to ``0`` / ``False`` by the last statement that bound them."""
    kept: list[cst.BaseStatement] = []
    changed = False
    for index, statement in enumerate(statements):
        # only a section with no other arm, switched by a name the file sets again and again
        # (`flag = 0` before each demo): `train = False` then `if train: ... save(...)` is a
        # mode, and the section switched off still tells what the notebook saves for the other
        section = statement if isinstance(statement, cst.If) and not statement.orelse else None
        if section is not None and _never_true(section.test, off & toggles):
            changed = True
            continue
        if toggles:  # `off` is read only for them
            _note(statement, off, shared, toggles, bound[index])
        kept.append(statement)
    return tuple(kept) if changed else statements


def _toggles(statements: Sequence[cst.BaseStatement]) -> set[str]:
    """Names the module binds to ``0``/``1``/``False``/``True`` more than once: switches a
    reader flips by hand, one section at a time."""
    counts: dict[str, int] = {}
    for statement in statements:
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
        bound = _literal_binding(small)
        if bound is not None and bound[1] in SWITCHED:
            counts[bound[0]] = counts.get(bound[0], 0) + 1
    return {name for name, count in counts.items() if count > 1}


def _literal_binding(small: cst.BaseSmallStatement | None) -> tuple[str, str] | None:
    """(name, literal) of ``name = 0`` / ``1`` / ``False`` / ``True`` (any name or integer)."""
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return None
    target, value = small.targets[0].target, small.value
    if isinstance(target, cst.Name) and isinstance(value, cst.Name | cst.Integer):
        return target.value, value.value
    return None


def _never_true(test: cst.BaseExpression, off: set[str]) -> bool:
    if isinstance(test, cst.Name):
        return test.value == "False" or test.value in off
    return isinstance(test, cst.Integer) and test.value == "0"


def _note(
    statement: cst.BaseStatement,
    off: set[str],
    shared: set[str],
    toggles: set[str],
    names: set[str],
) -> None:
    """Keep ``off`` true after ``statement``: a falsy literal bound to a name turns it off,
    any other binding of it (also nested: a loop, a ``with``) turns it back to unknown."""
    if not off and not isinstance(statement, cst.SimpleStatementLine):
        return
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        literal = _literal_binding(statement.body[0])
        if literal is not None and literal[1] in FALSY and literal[0] not in shared:
            if literal[0] in toggles:
                off.add(literal[0])
            return
    off -= names


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
