"""gpudoc's modules import one another without circles.

The graph is read with `ast` from gpudoc/**/*.py, never by importing. Two graphs:
- at import time: the imports that run when a module is imported (at module level, also inside
  a top-level `if`, `try` or class body), not those inside a function or under
  `if TYPE_CHECKING:`. A circle here is a partially initialised module waiting to happen.
- every import, deferred ones and TYPE_CHECKING ones too. A circle here is two modules that
  cannot be understood (or moved) one without the other; deferring one of the imports only
  hides it from Python. The circles issue 15 named (info/checks_* <-> info/doctor.py,
  info/nvml.py <-> info/nvml_health.py, two in emulate/) were all of this kind.
`from a.b import c` is an edge to `a.b.c` where that is a module, else to `a.b`. The package a
module lives in is not an edge: Python runs a package's `__init__` first, so an `__init__` that
lists its submodules would otherwise always close a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "gpudoc"

# Circles of deferred imports known on this branch, removed by the emulate change being made in
# parallel (issue 15); the lead empties this list once it is merged. Each entry is a circle as
# `cycles()` names it (sorted). Nothing is ever allowed in the import-time graph.
ALLOWED_DEFERRED: set[tuple[str, ...]] = set()
"""Circles through deferred imports that are tolerated for now: none."""


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _every_import(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _runs_on_import(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _runs_on_import(node.body)
            yield from _runs_on_import(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _runs_on_import(block)
            for handler in node.handlers:
                yield from _runs_on_import(handler.body)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from _runs_on_import(node.body)


def _is_type_checking(test: ast.expr) -> bool:
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", None)
    return name == "TYPE_CHECKING"


def imports_of(path: Path, modules: set[str], every: bool = False) -> set[str]:
    """The gpudoc modules `path` imports when it is imported (`every`: anywhere in it)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    statements = _every_import if every else _runs_on_import
    for node in statements(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*anchor, *([base] if base else [])])
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            found.add(submodule if submodule in modules else base)
    return {m for m in found if m in modules and m != name}


def import_graph(every: bool = False) -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules, every) for p in paths}


def cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[tuple[str, ...]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_graphs_are_read_as_documented() -> None:
    graph, every = import_graph(), import_graph(every=True)
    assert "gpudoc.info.checks" in graph["gpudoc.info.doctor"]
    assert "gpudoc.info.checks.env" in graph["gpudoc.info.checks"]
    # An import inside a function is an edge of the second graph only.
    assert "gpudoc.info.collect" not in graph["gpudoc.info.command"]
    assert "gpudoc.info.collect" in every["gpudoc.info.command"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]


def test_no_import_circles_at_import_time() -> None:
    assert cycles(import_graph()) == []


def test_no_import_circles_counting_deferred_imports() -> None:
    found = set(cycles(import_graph(every=True)))
    new, gone = found - ALLOWED_DEFERRED, ALLOWED_DEFERRED - found
    assert new == set(), f"import circles: {sorted(new)}"
    assert gone == set(), f"no longer circles, remove from ALLOWED_DEFERRED: {sorted(gone)}"
