"""GPD105's second shape: a tensor a module caches on itself while it runs.

``self.mask = None`` in ``__init__``, then ``if self.mask is None: self.mask = make_mask(x.device)``
in ``forward`` (or a helper it calls): the cache is built on the input's device and reused.
``model.to()`` / ``.cpu()`` moves parameters and buffers, not it, so after a move (Lightning hands
the module back on the CPU after training, a probe on the CPU before ``.cuda()``) the next
forward mixes devices. A non-persistent buffer (``register_buffer("mask", None,
persistent=False)``) moves with the module. A cache whose test looks at the device
(``self.mask.device != x.device``) rebuilds itself and is fine. Read from the class's text; the
rule tells which assignments bind tensors.
"""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis.names import dotted, names_in
from gpudoc.lint.visit import walk


def none_in_init(node: cst.ClassDef) -> dict[str, cst.CSTNode]:
    """``self.<attr> = None`` statements of the class's ``__init__``, by attribute."""
    found: dict[str, cst.CSTNode] = {}
    for method in _methods(node):
        if method.name.value != "__init__":
            continue
        for line in method.body.body if isinstance(method.body, cst.IndentedBlock) else ():
            if not isinstance(line, cst.SimpleStatementLine):
                continue
            for small in line.body:
                if not isinstance(small, cst.Assign) or dotted(small.value) != "None":
                    continue
                for target in small.targets:
                    name = dotted(target.target) or ""
                    if name.startswith("self.") and name.count(".") == 1:
                        found.setdefault(name[5:], line)
    return found


def cached_without_device_check(node: cst.ClassDef, statements: set[cst.CSTNode]) -> bool:
    """One of ``statements`` (assignments of the attribute in the class's methods) sits under
    an ``if`` that tests the module's own state (``self.mask is None``, ``batch_size !=
    self.last_batch``) and nowhere names a device: a cache reused until that state changes."""
    finder = _CacheTests(statements)
    for method in _methods(node):
        if method.name.value != "__init__":
            walk(method.body, finder)
    return finder.cached and not finder.device_checked


class _CacheTests(cst.CSTVisitor):
    def __init__(self, statements: set[cst.CSTNode]) -> None:
        self.statements = statements
        self.tests: list[cst.BaseExpression] = []
        self.cached = False
        self.device_checked = False

    def visit_If(self, node: cst.If) -> None:
        self.tests.append(node.test)

    def leave_If(self, original_node: cst.If) -> None:
        self.tests.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if node not in self.statements or not self.tests:
            return
        words = [word for test in self.tests for word in names_in(test)]
        if any("device" in word or word in ("is_cuda", "get_device") for word in words):
            self.device_checked = True
        elif any(_state_test(test) for test in self.tests):
            self.cached = True


MODES = frozenset({"training"})
"""``if self.training:``: which mode the module runs in, not the state of a cache (a loss
recomputed on each training step and kept for a ``loss`` property)."""


def _state_test(test: cst.BaseExpression) -> bool:
    """A test about the module's own state besides its mode (``self.mask is None``)."""
    words = set(names_in(test))
    return "self" in words and bool(words - MODES - {"self", "not"})


def _methods(node: cst.ClassDef) -> list[cst.FunctionDef]:
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    return [s for s in body if isinstance(s, cst.FunctionDef)]
