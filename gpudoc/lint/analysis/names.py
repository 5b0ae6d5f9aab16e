"""Import aliases: which local names stand for which qualified names (``th`` -> ``torch``)."""

from __future__ import annotations

import libcst as cst


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` as text, or None for anything that is not a plain dotted name."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


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
