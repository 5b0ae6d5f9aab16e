"""A tiny real libcst rule for testing the fix machinery without the rule engine.

Positions follow the engine: finding columns 1-based as printed, edit columns 0-based.
It reports an expression statement ``name.to(...)`` (a discarded tensor move) and fixes it safely
to ``name = name.to(...)``, and ``torch.load(x)`` without ``map_location`` with an unsafe fix.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from gpudoc.lint.model import Edit, Finding, Fix


class _Visitor(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def _finding(self, node: cst.CSTNode, code: str, message: str, fix: Fix) -> None:
        where = self.get_metadata(PositionProvider, node)
        self.findings.append(
            Finding(
                path="<toy>",
                line=where.start.line,
                col=where.start.column + 1,
                code=code,
                name=code.lower(),
                message=message,
                end_line=where.end.line,
                end_col=where.end.column + 1,
                fix=fix,
            )
        )

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            return
        receiver = call.func.value
        if call.func.attr.value != "to" or not isinstance(receiver, cst.Name):
            return
        start = self.get_metadata(PositionProvider, node).start
        edit = Edit(start.line, start.column, start.line, start.column, f"{receiver.value} = ")
        self._finding(node, "GPD103", "result of .to() is discarded", Fix((edit,), True, "assign"))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "load"):
            return
        if any(arg.keyword and arg.keyword.value == "map_location" for arg in node.args):
            return
        if not node.args:
            return
        end = self.get_metadata(PositionProvider, node.args[-1]).end
        edit = Edit(end.line, end.column, end.line, end.column, ", map_location=device")
        self._finding(node, "GPD201", "torch.load without map_location", Fix((edit,), False))


def toy_lint(source: str) -> list[Finding]:
    visitor = _Visitor()
    MetadataWrapper(cst.parse_module(source)).visit(visitor)
    return visitor.findings
