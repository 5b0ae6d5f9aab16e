"""GPD201: a load of the path that a call of the file's own function handed back after saving
there (``path = self._train()``, whose body ends ``torch.save(sd, path); return path``): the
file this run wrote, read back on the device that wrote it."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis.names import class_method, dotted, return_values
from gpudoc.lint.rules._checkpoints import CheckpointScan, LoadSite
from gpudoc.lint.visit import walk


def reads_a_returned_save(site: LoadSite, found: CheckpointScan, module: cst.Module) -> bool:
    path = site.call.args[0].value if site.call.args else None
    if not isinstance(path, cst.Name):
        return False
    earlier = [
        binding
        for binding in found.bound_in(site.function)
        if binding.name == path.value and binding.order < site.order
    ]
    call = earlier[-1].value if earlier else None
    if not isinstance(call, cst.Call):
        return False
    callee = _callee(call, site.function, module)
    return callee is not None and _returns_its_save(callee)


def _callee(
    call: cst.Call, caller: cst.FunctionDef | None, module: cst.Module
) -> cst.FunctionDef | None:
    """The file's function ``name(...)`` calls, or the method of the caller's class that
    ``self.name(...)`` calls."""
    func = call.func
    if isinstance(func, cst.Name):
        functions = (s for s in module.body if isinstance(s, cst.FunctionDef))
        return next((f for f in functions if f.name.value == func.value), None)
    if isinstance(func, cst.Attribute) and dotted(func.value) == "self" and caller is not None:
        for statement in module.body:
            if isinstance(statement, cst.ClassDef) and caller in statement.body.body:
                return class_method(statement, func.attr.value)
    return None


def _returns_its_save(function: cst.FunctionDef) -> bool:
    """Every ``return`` hands back a name the body passes to ``torch.save`` as the file."""
    saves = _SavedNames()
    walk(function.body, saves)
    returned = return_values(function)
    return bool(returned) and all(
        isinstance(value, cst.Name) and value.value in saves.names for value in returned
    )


class _SavedNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if not (dotted(node.func) or "").endswith("save"):
            return
        positional = [arg for arg in node.args if arg.keyword is None]
        target = positional[1].value if len(positional) >= 2 else None
        given = next((a.value for a in node.args if a.keyword and a.keyword.value == "f"), None)
        target = target or given
        if isinstance(target, cst.Name):
            self.names.add(target.value)
