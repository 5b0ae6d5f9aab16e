"""The file's own callables that DataLoader workers run for a loader: its ``collate_fn``, and the
transforms reached through its dataset (``MNIST(root, transform=Compose([ToTensor(), ToCuda()]))``).

Read from the code, not from the walk's values: a transform is handed from a ``Compose`` to a
dataset to a loader through names, and only the names' definitions in this file say which."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gpudoc.lint.analysis.names import class_method, dotted, keyword
from gpudoc.lint.visit import walk

DEPTH = 4
"""Names followed from the loader's argument to the callables' constructors."""


class Definitions(cst.CSTVisitor):
    """What names are bound to anywhere in the file (``name = value``), and its top-level
    functions and classes by name."""

    def __init__(self) -> None:
        self.values: dict[str, list[cst.BaseExpression]] = {}
        self.functions: dict[str, cst.FunctionDef] = {}
        self.classes: dict[str, cst.ClassDef] = {}
        self.depth = 0
        self.named_instances: dict[str, tuple[cst.FunctionDef, ...]] = {}
        """``transform_functions`` of a dataset given by name: the same for every loader of
        that name, and following a name rebound hundreds of times costs."""

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = dotted(target.target)
            if name is not None:
                self.values.setdefault(name, []).append(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.depth == 0:
            self.functions.setdefault(node.name.value, node)
        self.depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.depth -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self.depth == 0:
            self.classes.setdefault(node.name.value, node)
        self.depth += 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.depth -= 1


def definitions(module: cst.Module) -> Definitions:
    found = Definitions()
    walk(module, found)
    return found


def collate_functions(loader: cst.Call, found: Definitions) -> Iterator[cst.FunctionDef]:
    """The function (or the ``__call__`` of the class instance) given as ``collate_fn=``."""
    collate = keyword(loader, "collate_fn")
    if collate is not None:
        yield from _callables(collate.value, found, DEPTH)


def transform_functions(
    dataset: cst.BaseExpression, found: Definitions
) -> Iterator[cst.FunctionDef]:
    """The ``__call__`` of each of the file's classes whose instance the dataset expression is
    built from (through names, ``Compose([...])`` and keyword arguments)."""
    name = dotted(dataset) if isinstance(dataset, cst.Name | cst.Attribute) else None
    if name is None:
        yield from _instances(dataset, found, DEPTH, set())
        return
    if name not in found.named_instances:
        found.named_instances[name] = tuple(_instances(dataset, found, DEPTH, set()))
    yield from found.named_instances[name]


def _callables(
    node: cst.BaseExpression, found: Definitions, depth: int
) -> Iterator[cst.FunctionDef]:
    name = dotted(node)
    if name is not None and name in found.functions:
        yield found.functions[name]
        return
    if isinstance(node, cst.Call):
        method = _class_call(node, found)
        if method is not None:
            yield method
        return
    if name is not None and depth > 0:
        for value in found.values.get(name, ()):
            yield from _callables(value, found, depth - 1)


def _class_call(node: cst.Call, found: Definitions) -> cst.FunctionDef | None:
    name = dotted(node.func)
    definition = found.classes.get(name or "")
    return class_method(definition, "__call__") if definition is not None else None


def _instances(
    node: cst.BaseExpression, found: Definitions, depth: int, seen: set[str]
) -> Iterator[cst.FunctionDef]:
    for part in _expressions(node):
        if isinstance(part, cst.Call):
            method = _class_call(part, found)
            if method is not None:
                yield method
        name = dotted(part) if isinstance(part, cst.Name | cst.Attribute) else None
        if name is not None and depth > 0 and name not in seen:
            seen.add(name)
            for value in found.values.get(name, ()):
                yield from _instances(value, found, depth - 1, seen)


def _expressions(node: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """``node`` and the expressions inside it (calls, their arguments, list elements)."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        part = stack.pop()
        if isinstance(part, cst.BaseExpression):
            yield part
        if isinstance(part, cst.Call):
            stack.extend(arg.value for arg in part.args)
        elif isinstance(part, cst.List | cst.Tuple):
            stack.extend(element.value for element in part.elements)
