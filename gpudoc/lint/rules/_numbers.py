"""Names that hold Python numbers, read from a function's or a class's text: ``torch.tensor`` of
one makes a 0-dim tensor, which PyTorch combines with tensors on any device."""

from __future__ import annotations

import re
from collections.abc import Callable

import libcst as cst

from gpudoc.lint.analysis.names import dotted, is_number_expression, method_named
from gpudoc.lint.visit import walk

NUMBER_ANNOTATIONS = frozenset({"int", "float"})
SIZE_NAME = re.compile(
    r"^((n|num)_\w+|\w+_dim|dim|d_(model|head|k|v|ff|hidden|inner|embed)|(n_)?heads"
    r"|(hidden|embed|head)_size|temperature)$",
    re.I,
)
"""Parameter names that hold one number in nearly all code (``d_head``, ``num_heads``); not
``kernel_size`` or ``x_len``, often a tuple or a list."""


def number_parameters(function: cst.FunctionDef) -> frozenset[str]:
    """The parameters annotated ``int`` / ``float``, defaulting to a number, or named as a size
    (``d_head``, ``n_layers``); never one annotated or defaulting to anything else."""
    params = function.params
    found = set()
    for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
        annotation = dotted(param.annotation.annotation) if param.annotation else None
        default = param.default
        if annotation is not None:
            number = annotation in NUMBER_ANNOTATIONS
        elif default is not None and dotted(default) != "None":
            number = is_number_expression(default)
        else:
            number = bool(SIZE_NAME.match(param.name.value))
        if number:
            found.add(param.name.value)
        elif _number_sequence(param):
            found.add(f"{param.name.value}[]")  # `side_range=(1.0, 4.0)`: each item a number
    return frozenset(found)


SEQUENCES = frozenset({"Tuple", "tuple", "List", "list", "Sequence", "typing.Tuple", "typing.List"})


def _number_sequence(param: cst.Param) -> bool:
    """A parameter annotated as a sequence of numbers (``Tuple[int, int]``, ``list[float]``)
    or, without an annotation, defaulting to a tuple or list of number literals."""
    annotation = param.annotation.annotation if param.annotation else None
    if isinstance(annotation, cst.Subscript) and dotted(annotation.value) in SEQUENCES:
        items = [element.slice for element in annotation.slice]
        return all(
            isinstance(item, cst.Index)
            and (dotted(item.value) in NUMBER_ANNOTATIONS or isinstance(item.value, cst.Ellipsis))
            for item in items
        )
    if annotation is not None or param.default is None:
        return False
    return _numbers_listed(param.default, lambda name: False)


def number_attributes(node: cst.ClassDef) -> frozenset[str]:
    """``self.X`` (as ``X``) that ``__init__`` only ever assigns numbers: literals, or
    arithmetic of its number parameters (``self.scale = d_head ** -0.5``)."""
    init = method_named(node, "__init__")
    if init is None:
        return frozenset()
    parameters = number_parameters(init)
    assigned = _SelfAssignments()
    walk(init.body, assigned)
    found = {
        name
        for name, values in assigned.values.items()
        if all(is_number_expression(value, parameters.__contains__) for value in values)
    }
    # `self.out_channels = [8, 7]`, or a parameter defaulting to such a tuple: each item is a
    # number (`out_channels[]`), not the list
    found |= {
        f"{name}[]"
        for name, values in assigned.values.items()
        if all(
            _numbers_listed(value, parameters.__contains__)
            or (isinstance(value, cst.Name) and f"{value.value}[]" in parameters)
            for value in values
        )
    }
    return frozenset(found)


def _numbers_listed(value: cst.BaseExpression, numbers: Callable[[str], bool]) -> bool:
    return (
        isinstance(value, cst.List | cst.Tuple)
        and bool(value.elements)
        and all(is_number_expression(element.value, numbers) for element in value.elements)
    )


class _SelfAssignments(cst.CSTVisitor):
    def __init__(self) -> None:
        self.values: dict[str, list[cst.BaseExpression]] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self.note(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.note(node.target, node.value)

    def note(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        name = dotted(target) or ""
        if name.startswith("self.") and name.count(".") == 1:
            self.values.setdefault(name[5:], []).append(value)
        elif isinstance(target, cst.Tuple | cst.List):
            for element in target.elements:  # `self.a, self.b = ...`: not read element-wise
                self.note(element.value, cst.Name("None"))
