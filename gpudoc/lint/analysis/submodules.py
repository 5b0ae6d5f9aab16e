"""The submodules a module class's ``__init__`` builds (``self.base = MLPBase(...)``,
``self.fc = nn.Linear(...)``), read from its text: for a class of another project file, whose
``__init__`` the walk does not run, what a method called on a placed instance finds on ``self``."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.names import dotted, iter_statements


def init_submodules(node: cst.ClassDef, is_module_class: Callable[[str], bool]) -> dict[str, str]:
    """``self.<name>`` attributes ``__init__`` binds to a torch layer with weights or to a module
    class (``is_module_class`` says which names are), with the class called."""
    found: dict[str, str] = {}
    for method in node.body.body:
        if not isinstance(method, cst.FunctionDef) or method.name.value != "__init__":
            continue
        for name, callee in built_attributes(method):
            last = callee.rsplit(".", 1)[-1]
            if last in api.WEIGHTED_LAYERS or is_module_class(callee):
                found[name] = callee
    return found


def built_attributes(init: cst.FunctionDef) -> Iterator[tuple[str, str]]:
    """(``self.<name>``, the callee's dotted name) of each ``self.<name> = <call>`` of
    ``init`` (statements only: nested functions are their own)."""
    for statement in iter_statements(init.body.body):
        if not isinstance(statement, cst.Assign) or not isinstance(statement.value, cst.Call):
            continue
        callee = dotted(statement.value.func) or ""
        for target in statement.targets:
            name = dotted(target.target)
            if name is not None and name.startswith("self.") and name.count(".") == 1:
                yield name, callee


def module_classes_of(classes: dict[str, cst.ClassDef]) -> Callable[[str], bool]:
    """Which of a file's class names derive, directly or through the file's own classes, from
    something named ``...Module`` (``nn.Module``, ``torch.nn.Module``, ``LightningModule``)."""

    def is_module(name: str, seen: frozenset[str] = frozenset()) -> bool:
        node = classes.get(name)
        if node is None or name in seen:
            return False
        for base in node.bases:
            text = dotted(base.value) or ""
            if text.endswith("Module") or is_module(text, seen | {name}):
                return True
        return False

    return is_module


def weighted_submodules(node: cst.ClassDef, classes: dict[str, cst.ClassDef]) -> set[str]:
    """Of ``node``'s submodules, those that hold weights: a torch layer with weights, or a class
    of the file that builds one itself (one level down)."""
    is_module = module_classes_of(classes)
    found = set()
    for name, callee in init_submodules(node, is_module).items():
        inner = classes.get(callee)
        if callee.rsplit(".", 1)[-1] in api.WEIGHTED_LAYERS or (
            inner is not None and init_submodules(inner, is_module)
        ):
            found.add(name)
    return found
