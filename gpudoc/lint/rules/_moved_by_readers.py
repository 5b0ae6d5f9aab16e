"""An attribute that each method reading it moves first: a recurrent agent's hidden state,
made on the host by ``init_hidden`` and taken to the GPU where it is used
(``if self.args.cuda: self.eval_hidden = self.eval_hidden.cuda()``, MARL-Algorithms)."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis.api import MOVE_METHODS
from gpudoc.lint.analysis.expressions import converts_only
from gpudoc.lint.analysis.flow import guard_polarity
from gpudoc.lint.analysis.names import dotted


def stored_attribute(call: cst.Call, function: cst.FunctionDef) -> str | None:
    """``x`` when ``function`` stores ``call`` straight into ``self.x`` (``self.x = call``)."""
    finder = _Store(call)
    function.body.visit(finder)
    return finder.attr


def moved_by_every_reader(attr: str, owner: cst.ClassDef, storing: cst.FunctionDef) -> bool:
    """Every method of ``owner`` but ``storing`` and ``__init__`` that reads ``self.<attr>``
    first moves it: its first read is the receiver of a move (``self.h.cuda()``,
    ``self.h.to(dev)``); after a move stored back (``self.h = self.h.cuda()``) the method's
    later reads are of the moved tensor. At least one method reads it."""
    readers = 0
    for statement in owner.body.body:
        if not isinstance(statement, cst.FunctionDef) or statement.name.value == "__init__":
            continue
        # the storing method's own reads count from its store on (`forward` that makes the
        # state and feeds it to the cell right away)
        reads = _Reads(f"self.{attr}", armed=statement is not storing)
        statement.body.visit(reads)
        if reads.unmoved:
            return False
        readers += reads.count > 0 and statement is not storing
    return readers > 0


class _Store(cst.CSTVisitor):
    def __init__(self, call: cst.Call) -> None:
        self.call = call
        self.attr: str | None = None

    def visit_Assign(self, node: cst.Assign) -> None:
        if node.value is not self.call or len(node.targets) != 1:
            return
        target = dotted(node.targets[0].target) or ""
        if target.startswith("self.") and target.count(".") == 1:
            self.attr = target[5:]


class _Reads(cst.CSTVisitor):
    """The reads of one attribute in a method, in source order (an assignment's value before
    its target, as Python runs it)."""

    def __init__(self, name: str, armed: bool = True) -> None:
        self.name = name
        self.armed = armed
        """Reads count (in the storing method: only after the store)."""
        self.count = 0
        self.moved = False
        self.unmoved = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested function runs later, or never

    def visit_Assign(self, node: cst.Assign) -> bool:
        node.value.visit(self)
        if not self.moved and _moves_back(node, self.name):
            self.moved = True
        elif any(dotted(target.target) == self.name for target in node.targets):
            self.armed = True  # the store: what follows reads what it stored
        return False  # the targets are stores, not reads

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        self.arms(node.test, node.body, node.orelse)
        return False

    def visit_If(self, node: cst.If) -> bool:
        self.arms(node.test, node.body, node.orelse)
        return False

    def arms(self, test: cst.BaseExpression, body: cst.CSTNode, orelse: cst.CSTNode | None) -> None:
        """Each arm from the state before the test; moved after it only if every arm moved.
        An arm that runs without CUDA needs no move (`self.h.cuda() if self.cuda else
        self.h`): the host is right there."""
        polarity = guard_polarity(test)
        test.visit(self)
        before, moved = self.moved, True
        for arm, on_cpu in ((body, polarity == "cpu"), (orelse, polarity == "gpu")):
            self.moved = before
            if arm is not None and not on_cpu:
                arm.visit(self)
            moved &= self.moved or on_cpu
        self.moved = before or moved

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if dotted(node) != self.name:
            return True
        if self.armed:
            self.count += 1
            self.unmoved |= not self.moved
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        if _move_of(node, self.name):
            self.count += 1  # `self.h.cuda()`: this read is moved where it is
            return False
        return True


def _move_of(call: cst.Call, name: str) -> bool:
    """``<name>.cuda()`` / ``<name>.to(device)`` (a dtype-only ``.to()`` moves nothing)."""
    func = call.func
    if not isinstance(func, cst.Attribute) or dotted(func.value) != name:
        return False
    method = func.attr.value
    return method in MOVE_METHODS and method != "cpu" and not converts_only(call)


def _moves_back(node: cst.Assign, name: str) -> bool:
    """``self.h = self.h.cuda()``: the attribute now holds the moved tensor."""
    stores = any(dotted(target.target) == name for target in node.targets)
    return stores and isinstance(node.value, cst.Call) and _move_of(node.value, name)
