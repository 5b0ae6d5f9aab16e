"""Module classes of other project files that place themselves, read from their text.

The walk learns that a class of the linted file places itself while it walks its
``__init__`` (placement.py). A class imported from another project file is not walked, so its
``__init__`` and the methods it calls are read here: ``self.cuda()``, ``self.net.to(device)``,
``self.net = self.net.cuda()``, or a device parameter handed on to another object that sets
itself up (``self.model.initialize(net, use_gpu=use_gpu)``, lpips' ``PerceptualLoss``).
"""

from __future__ import annotations

import re

import libcst as cst

from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.visit import walk

DEVICE_PARAMETER = re.compile(r"device|gpu|cuda", re.I)
MOVES = frozenset({"to", "cuda"})
MAX_DEPTH = 3
"""Helper methods followed from ``__init__`` (``__init__`` → ``setup`` → ``build``)."""


def places_itself(node: cst.ClassDef) -> bool:
    """``node``'s ``__init__``, or a method it calls on ``self``, moves the instance or its
    parts, or hands a device parameter of ``__init__`` to an attribute's method."""
    methods = {
        statement.name.value: statement
        for statement in (node.body.body if isinstance(node.body, cst.IndentedBlock) else ())
        if isinstance(statement, cst.FunctionDef)
    }
    init = methods.get("__init__")
    if init is None:
        return False
    device_parameters = {
        param.name.value
        for param in (*init.params.params, *init.params.kwonly_params)
        if DEVICE_PARAMETER.search(param.name.value)
    }
    seen: set[str] = set()
    pending = [("__init__", 0)]
    while pending:
        name, depth = pending.pop()
        if name in seen or name not in methods:
            continue
        seen.add(name)
        reader = _SelfMoves(device_parameters)
        walk(methods[name].body, reader)
        if reader.moves:
            return True
        if depth < MAX_DEPTH:
            pending.extend((called, depth + 1) for called in reader.self_calls)
    return False


class _SelfMoves(cst.CSTVisitor):
    def __init__(self, device_parameters: set[str]) -> None:
        self.device_parameters = device_parameters
        self.moves = False
        self.self_calls: list[str] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        receiver = dotted(func.value) or ""
        if receiver != "self" and not receiver.startswith("self."):
            return
        method = func.attr.value
        if method in MOVES and not _to_cpu(node):
            self.moves = True
        elif receiver == "self":
            self.self_calls.append(method)
        elif any(dotted(arg.value) in self.device_parameters for arg in node.args):
            self.moves = True  # `self.model.initialize(net, use_gpu=use_gpu)`

    def visit_Assign(self, node: cst.Assign) -> None:
        """``self.net = Net().cuda()``: an attribute assigned moved."""
        value = node.value
        on_self = any((dotted(t.target) or "").startswith("self.") for t in node.targets)
        if on_self and isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            self.moves |= value.func.attr.value in MOVES and not _to_cpu(value)


def _to_cpu(node: cst.Call) -> bool:
    first = node.args[0].value if node.args else None
    return isinstance(first, cst.SimpleString) and first.value.strip("\"'") == "cpu"
