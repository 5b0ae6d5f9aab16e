"""Which items of what a module's ``forward`` returns are Python numbers, read from its text.

``loss, accuracies = criterion(scores, labels)`` of a loss whose ``forward`` ends with
``return total, accs``, ``accs`` a list it filled with ``acc.item()``: the second item holds no
tensor, so NumPy may read it on any device.
"""

from __future__ import annotations

from functools import lru_cache

import libcst as cst

from gpudoc.lint.analysis.names import bound_names_of, dotted, matched_value, return_values
from gpudoc.lint.visit import walk

TO_NUMBER = frozenset({"item", "tolist"})


@lru_cache(maxsize=256)
def number_items(function: cst.FunctionDef) -> tuple[bool, ...] | None:
    """For a function whose every ``return`` is a tuple of one length: which positions hold
    only Python numbers (or lists of them). None when the shape is not that, or no position
    does."""
    returns = return_values(function)
    tuples = [value for value in returns if isinstance(value, cst.Tuple)]
    if not returns or len(tuples) != len(returns):
        return None
    lengths = {len(value.elements) for value in tuples}
    if len(lengths) != 1:
        return None
    lists = _number_lists(function)
    numbers = tuple(
        all(_number(value.elements[i].value, lists) for value in tuples)
        for i in range(lengths.pop())
    )
    return numbers if any(numbers) else None


def _number(expr: cst.BaseExpression, lists: frozenset[str]) -> bool:
    """``acc.item()``, ``float(x)``, ``0.5``, a list of those, or a list the function filled
    only with those."""
    if isinstance(expr, cst.Integer | cst.Float):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in lists
    if isinstance(expr, cst.ListComp):
        return _number(expr.elt, lists)
    if isinstance(expr, cst.List):
        return bool(expr.elements) and all(_number(e.value, lists) for e in expr.elements)
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    if isinstance(func, cst.Attribute):
        return func.attr.value in TO_NUMBER and not expr.args
    return isinstance(func, cst.Name) and func.value in ("float", "int")


def _number_lists(function: cst.FunctionDef) -> frozenset[str]:
    """Names bound to ``[]`` or ``list()`` (alone or in a tuple) and only ever appended
    numbers."""
    reader = _Lists()
    walk(function.body, reader)
    return frozenset(
        name
        for name in reader.empty
        if name not in reader.rebound
        and all(_number(item, frozenset()) for item in reader.appended.get(name, []))
    )


class _Lists(cst.CSTVisitor):
    def __init__(self) -> None:
        self.empty: set[str] = set()
        self.rebound: set[str] = set()
        self.appended: dict[str, list[cst.BaseExpression]] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            for name in bound_names_of(target.target):
                value = matched_value(target.target, node.value, name)
                if value is not None and _empty_list(value):
                    self.empty.add(name)
                else:
                    self.rebound.add(name)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "append" and node.args:
            name = dotted(func.value)
            if name is not None:
                self.appended.setdefault(name, []).append(node.args[0].value)
        elif isinstance(func, cst.Attribute) and func.attr.value in ("extend", "insert"):
            self.rebound.add(dotted(func.value) or "")


def _empty_list(value: cst.BaseExpression) -> bool:
    """``[]`` or ``list()``."""
    if isinstance(value, cst.List):
        return not value.elements
    return isinstance(value, cst.Call) and dotted(value.func) == "list" and not value.args
