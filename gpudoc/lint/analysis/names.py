"""Names: import aliases (which local names stand for which qualified names, ``th`` -> ``torch``)
and the names a function binds."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` as text, or None for anything that is not a plain dotted name."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def names_in(node: cst.CSTNode) -> Iterator[str]:
    """Identifiers and attribute names in a (small) expression: for recognising guards."""
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name | cst.SimpleString):
            yield current.value
        elif isinstance(current, cst.BaseExpression | cst.Arg | cst.ComparisonTarget):
            stack.extend(current.children)


def _import_target(node: cst.BaseExpression) -> str:
    return dotted(node) or ""


class ImportTable:
    """Local name -> qualified name, filled in as import statements are met."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.roots: set[str] = set()
        """Top-level packages imported anywhere (``torch``, ``lightning``, ``accelerate``)."""

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _import_target(alias.name)
                self.roots.add(full.split(".")[0])
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.aliases[alias.asname.name.value] = full
                else:
                    head = full.split(".")[0]
                    self.aliases[head] = head
            return
        if node.relative or node.module is None:
            return
        module = _import_target(node.module)
        self.roots.add(module.split(".")[0])
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _import_target(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{module}.{name}"

    def qualify(self, node: cst.BaseExpression) -> str | None:
        """The qualified name of ``node`` when its root is an imported name."""
        text = dotted(node)
        if text is None:
            return None
        head, _, rest = text.partition(".")
        full = self.aliases.get(head)
        if full is None:
            return None
        return f"{full}.{rest}" if rest else full


class _BoundNames(cst.CSTVisitor):
    """The names a function body binds, outside nested functions, classes and comprehensions
    (their own scopes); ``global`` and ``nonlocal`` names are not local."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.declared: set[str] = set()

    def _targets(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Name):
            self.bound.add(node.value)
        elif isinstance(node, cst.Tuple | cst.List):
            for element in node.elements:
                self._targets(element.value)
        elif isinstance(node, cst.StarredElement):
            self._targets(node.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._targets(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._targets(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._targets(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._targets(node.target)

    def visit_Global(self, node: cst.Global) -> None:
        self.declared.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.declared.update(item.name.value for item in node.names)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.bound.add(node.name.value)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.bound.add(node.name.value)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_CompFor(self, node: cst.CompFor) -> bool:
        return False


def bound_names_of(target: cst.BaseExpression) -> frozenset[str]:
    """The plain names an assignment or ``for`` target binds."""
    collector = _BoundNames()
    collector._targets(target)
    return frozenset(collector.bound)


def bound_names(function: cst.FunctionDef) -> frozenset[str]:
    """Every name local to ``function``: its parameters and what its body binds."""
    collector = _BoundNames()
    function.body.visit(collector)
    params = function.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    return frozenset((collector.bound | {p.name.value for p in every}) - collector.declared)
