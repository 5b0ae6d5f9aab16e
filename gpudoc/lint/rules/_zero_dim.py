"""0-dim tensors and the operations that take one from the host beside CUDA operands.

PyTorch's TensorIterator treats a 0-dim CPU tensor in binary arithmetic or a comparison as a
number: ``x.mul(scale)`` runs with ``x`` on CUDA and ``scale = w.pow(2).mean() ** 0.5`` on the
host. A scale kept as a plain attribute, or made without a device, is then no device bug.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from gpudoc.lint.analysis.names import dotted, is_number_expression
from gpudoc.lint.rules._factory_reach import REDUCTIONS
from gpudoc.lint.visit import walk

SCALAR_OPERATORS = frozenset(
    {
        "add", "sub", "subtract", "rsub", "mul", "multiply", "div", "divide", "true_divide",
        "pow", "eq", "ne", "lt", "le", "gt", "ge",
    }
)  # fmt: skip
"""Binary arithmetic and comparisons, whose TensorIterator takes a 0-dim host tensor as a
number beside CUDA operands (``clamp``'s bounds and ``where``'s branches are no such)."""

ELEMENTWISE = frozenset({"sqrt", "rsqrt", "exp", "log", "abs", "neg", "reciprocal", "float"})
"""Unary functions that keep a 0-dim tensor 0-dim (``torch.sqrt(w.var())``)."""

ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Power)

Qualify = Callable[[cst.BaseExpression], str | None]


def full_reduction(expr: cst.BaseExpression, qualify: Qualify) -> bool:
    """``torch.sum(t)``, ``t.mean()``: reduced over every dimension to a 0-dim tensor."""
    if not isinstance(expr, cst.Call) or any(arg.keyword is not None for arg in expr.args):
        return False
    func = expr.func
    qualified = qualify(func) or ""
    if qualified.startswith("torch.") and qualified[6:] in REDUCTIONS:
        return len(expr.args) == 1
    return isinstance(func, cst.Attribute) and func.attr.value in REDUCTIONS and not expr.args


def zero_dim(expr: cst.BaseExpression, qualify: Qualify) -> bool:
    """A tensor of no dimensions: a full reduction, ``torch.tensor(0.5)``, and arithmetic or
    an element-wise function of those with numbers (``torch.mean(w ** 2) ** 0.5``)."""
    if full_reduction(expr, qualify):
        return True
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, ARITHMETIC):
        sides = (expr.left, expr.right)
        return any(zero_dim(side, qualify) for side in sides) and all(
            zero_dim(side, qualify) or is_number_expression(side) for side in sides
        )
    if isinstance(expr, cst.IfExp):  # `eps if eps is not None else torch.tensor(1e-5)`
        sides = (expr.body, expr.orelse)
        made = [side for side in sides if not isinstance(side, cst.Name)]
        return bool(made) and all(zero_dim(side, qualify) for side in made)
    if not isinstance(expr, cst.Call):
        return False
    qualified = qualify(expr.func) or ""
    if qualified == "torch.tensor" and len(expr.args) >= 1:
        return expr.args[0].keyword is None and is_number_expression(expr.args[0].value)
    if qualified.startswith("torch.") and qualified[6:] in ELEMENTWISE and len(expr.args) == 1:
        return zero_dim(expr.args[0].value, qualify)
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in ELEMENTWISE and not expr.args:
        return zero_dim(func.value, qualify)
    return False


def read_only_as_scalar_operand(
    attribute: str, functions: list[cst.FunctionDef], qualify: Qualify
) -> bool:
    """``self.scale`` is read in ``functions``, and only as an operand of arithmetic or a
    comparison: ``x * self.scale``, ``x.mul(self.scale)``, ``torch.div(x, self.scale)`` (not as
    the receiver of an in-place method, nor handed anywhere else)."""
    reads = _Reads(attribute, qualify)
    for function in functions:
        walk(function.body, reads)
    return bool(reads.all) and reads.all <= reads.operands


class _Reads(cst.CSTVisitor):
    def __init__(self, attribute: str, qualify: Qualify) -> None:
        self.attribute, self.qualify = attribute, qualify
        self.all: set[int] = set()
        self.operands: set[int] = set()

    def _operand(self, node: cst.BaseExpression) -> None:
        if dotted(node) == self.attribute:
            self.operands.add(id(node))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if dotted(node) == self.attribute:
            self.all.add(id(node))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, ARITHMETIC):
            self._operand(node.left)
            self._operand(node.right)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self._operand(node.left)
        for target in node.comparisons:
            self._operand(target.comparator)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qualified = self.qualify(func) or ""
        if qualified.startswith("torch.") and qualified[6:] in SCALAR_OPERATORS:
            for arg in node.args:
                self._operand(arg.value)
        elif isinstance(func, cst.Attribute) and func.attr.value in SCALAR_OPERATORS:
            for arg in node.args:  # `x.mul(self.scale)`; not `self.scale.mul_(x)`
                self._operand(arg.value)
