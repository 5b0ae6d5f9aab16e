"""``visit.walk`` calls a visitor's methods on the same nodes, in the same order, as libcst's own
``visit``, leaving out only what carries no code (whitespace, brackets, commas, operators)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import libcst as cst
import pytest

from gpudoc.lint.visit import SKIPPED_FIELDS, walk

ROOT = Path(__file__).resolve().parents[2]


def _sources() -> list[Path]:
    files = sorted((ROOT / "fixtures").rglob("*.py"))
    spec = importlib.util.find_spec("torch")  # finds the sources, imports nothing
    if spec is not None and spec.origin is not None:
        torch_files = sorted(Path(spec.origin).parent.rglob("*.py"))
        files += torch_files[:: max(1, len(torch_files) // 30)]  # 30 of torch's own files
    return files


class Recorder(cst.CSTVisitor):
    """Every node entered and left, by identity; libcst's visit also reports the fields it
    enters, so what lies under a skipped field can be left out of its record."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, int]] = []
        self.skipping = 0

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.skipping += attribute in SKIPPED_FIELDS or attribute.startswith("whitespace")

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        self.skipping -= attribute in SKIPPED_FIELDS or attribute.startswith("whitespace")

    def on_visit(self, node: cst.CSTNode) -> bool:
        if not self.skipping:
            self.seen.append(("enter", id(node)))
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if not self.skipping:
            self.seen.append(("leave", id(original_node)))


class Calls(cst.CSTVisitor):
    """A visitor with visit_/leave_ methods, one returning False (its children are skipped)."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, int]] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.log.append(("call", id(node)))

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.log.append(("lambda", id(node)))
        return False

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.log.append(("def", id(original_node)))

    def visit_Name(self, node: cst.Name) -> None:
        self.log.append(("name", id(node)))


@pytest.mark.slow
def test_walk_visits_in_libcsts_order() -> None:
    files = _sources()
    assert len(files) > 60
    for path in files:
        try:
            module = cst.parse_module(path.read_text(encoding="utf-8"))
        except Exception:
            continue
        theirs, ours = Recorder(), Recorder()
        module.visit(theirs)
        walk(module, ours)
        assert ours.seen == theirs.seen, path
        theirs_calls, ours_calls = Calls(), Calls()
        module.visit(theirs_calls)
        walk(module, ours_calls)
        assert ours_calls.log == theirs_calls.log, path


def test_walk_calls_the_visitors_methods() -> None:
    module = cst.parse_module("def f(x=g(1)):\n    return h(lambda: k(x), y=z)\n")
    theirs, ours = Calls(), Calls()
    module.visit(theirs)
    walk(module, ours)
    assert ours.log == theirs.log
    kinds = [kind for kind, _ in ours.log]
    assert kinds.count("call") == 2 and kinds.count("lambda") == 1 and kinds[-1] == "def"


def test_walk_of_a_module_walked_before_keeps_the_order() -> None:
    """A module's whole walk goes through an index of its nodes, built at the first and kept
    for the next: the same calls in the same order, ``leave_`` after the subtree, a False
    ``visit_`` skipping it."""
    for path in sorted((ROOT / "fixtures").rglob("*.py"))[:40]:
        module = cst.parse_module(path.read_text(encoding="utf-8"))
        theirs = Calls()
        module.visit(theirs)
        for _ in range(3):  # the first walk builds the index, the others reuse it
            ours = Calls()
            walk(module, ours)
            assert ours.log == theirs.log, path
