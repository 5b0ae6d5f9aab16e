"""Where the project's other files call a module-level function of the linted file: a helper
of ``utils.py`` whose every call, in every project file that imports it, sits in a module's
``forward`` runs on the tensors ``forward`` gets, on the device.

ludwig's ``torch_utils.sequence_mask(lengths)`` builds ``torch.arange(maxlen)`` without a device
and compares it with ``lengths``; ``H3Embed.forward`` in another file calls it with a batch
column, so the comparison fails on a GPU. A helper that a Dataset also calls (a mask made on
the CPU for a sample) is left out: its callers choose where its tensors go. The importers are
found anywhere in the project (``models/`` beside ``utils/``) by a text scan of their import
lines, and their calls from their text: read, never parsed twice, never run. A project of more
than MAX_FILES scripts is not scanned.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import libcst as cst

from gpudoc.lint import project
from gpudoc.lint.analysis.names import dotted as dotted_name
from gpudoc.lint.rules._gpu_savers import MAX_BYTES
from gpudoc.lint.rules._project_scripts import project_directories
from gpudoc.lint.visit import walk

MAX_FILES = 400
"""More scripts than this in the project: too large to scan for one helper's callers."""
SKIPPED = frozenset({"node_modules", "site-packages", "__pycache__", "build", "dist"})
FACTORY_TEXT = re.compile(
    r"\btorch\.(zeros|ones|empty|full|arange|linspace|rand\w*|eye|tensor|\w+Tensor)\s*\("
)
"""A file that may hold a helper this module serves: its importers are in its cache key."""


def forward_callers(
    module: cst.Module, path: str, function: str, is_step: Callable[[str], bool]
) -> str | None:
    """``"`forward` in h3_encoders.py"`` when another project file calls ``function`` of
    ``path`` and every such call (in every importer, and in ``module``, the file itself) is
    inside a function ``is_step`` accepts; None when no importer calls it, or one calls it
    elsewhere (a dataset's mask conversion)."""
    sites = _call_sites(path, function)
    if not sites or not all(is_step(caller) for caller, _ in sites):
        return None
    own = _Calls(function)
    walk(module, own)
    if not all(is_step(caller) for caller in own.callers):
        return None
    caller, script = sites[0]
    return f"`{caller}` in {script}"


def _call_sites(path: str, function: str) -> list[tuple[str, str]]:
    """The (enclosing function, importer's file name) of each call of ``function`` in the
    project's files that import ``path``'s module: read from their text, not parsed (most of
    them are linted in the same run, and a second parse of each would double their cost); the
    enclosing function is the nearest ``def`` above the call indented less than it."""
    calling = re.compile(rf"(?<![\w.])(?:\w+\.)?{re.escape(function)}[ \t]*\(")
    found: list[tuple[str, str]] = []
    for script in project_importers(path):
        text = _text(str(script))
        for match in calling.finditer(text):
            line_start = text.rfind("\n", 0, match.start()) + 1
            line = text[line_start : match.start()]
            code = line.lstrip(" \t")
            if code.startswith(("def ", "async def ", "#")):
                continue  # its own definition, or a comment
            indent = len(line) - len(code)
            found.append((_enclosing(text, line_start, indent), script.name))
    return found


DEF_LINE = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)", re.M)


def _enclosing(text: str, start: int, indent: int) -> str:
    """The function whose body holds the line at ``start`` (indented ``indent``): the last
    ``def`` above it indented less; "" at the top level."""
    name = ""
    for match in DEF_LINE.finditer(text, 0, start):
        if len(match.group(1)) < indent:
            name = match.group(2)
    return name


def _text(script: str) -> str:
    """The script's text; "" when it is unreadable or larger than MAX_BYTES (a generated file).
    Not kept: the stems are, and the call sites are read only for a helper judged here."""
    try:
        if os.stat(script).st_size > MAX_BYTES:
            return ""
        return Path(script).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def project_importers(path: str) -> list[Path]:
    """The project's scripts whose import lines name ``path``'s module (``from ludwig.utils
    import torch_utils``, ``from .utils import sequence_mask``): where its helpers' callers
    are, and so its cache key."""
    if not path.endswith(".py"):
        return []
    here = Path(path).resolve()
    root = project_directories(str(here.parent), os.getcwd())[-1]
    scripts = _scripts_under(root)
    return [
        script
        for script, stamp in scripts
        if script != here and here.stem in _imported_stems(str(script), stamp)
    ]


def _scripts_under(root: Path) -> list[tuple[Path, tuple[int, int]]]:
    """Every script under the project's root with its stamp; none past MAX_FILES. Scanned
    once per run (``lint_paths`` call): every file of a project shares the scan."""
    key = (str(root), project.run_number())
    if key not in _scans:
        if len(_scans) > 64 or any(run != key[1] for _, run in _scans):
            _scans.clear()
        _scans[key] = _scan(root)
    return _scans[key]


_scans: dict[tuple[str, int], list[tuple[Path, tuple[int, int]]]] = {}


def _scan(root: Path) -> list[tuple[Path, tuple[int, int]]]:
    found: list[tuple[Path, tuple[int, int]]] = []
    pending = [str(root)]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith(".") and entry.name not in SKIPPED:
                        pending.append(entry.path)
                elif entry.name.endswith(".py") and entry.is_file(follow_symlinks=False):
                    stat = entry.stat()
                    found.append((Path(entry.path), (stat.st_mtime_ns, stat.st_size)))
            except OSError:
                continue
        if len(found) > MAX_FILES:
            return []
    return found


@lru_cache(maxsize=1024)
def _imported_stems(script: str, stamp: tuple[int, int]) -> frozenset[str]:
    """What the script's import lines name, read once per version of it."""
    return project.imported_stems(_text(script))


class _Calls(cst.CSTVisitor):
    """The function each call of ``name`` sits in ("" at the top level): ``name(x)``, or a read
    of it on another name (``torch_utils.sequence_mask(x)``), not a method of ``self``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.functions: list[str] = []
        self.callers: list[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name):
            called = func.value
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value != "self"
        ):
            called = func.attr.value
        else:
            return
        if called == self.name:
            self.callers.append(self.functions[-1] if self.functions else "")


SHAPE_READS = frozenset({"shape", "size", "dim", "ndim", "numel", "dtype", "device", "__len__"})


def meets_an_argument(function: cst.FunctionDef, factory: cst.Call, held: str | None) -> bool:
    """The factory's tensor (the call, or the name ``held`` bound to it) meets, in one
    operation or torch call, a value computed from the function's parameters
    (``row < torch.unsqueeze(lengths, -1)``), not only their sizes: what the callers pass
    decides the device it must be on."""
    params = {p.name.value for p in (*function.params.params, *function.params.kwonly_params)}
    flow = _ArgumentFlow(params - {"self", "cls"}, factory, held)
    walk(function.body, flow)
    return flow.met


class _ArgumentFlow(cst.CSTVisitor):
    def __init__(self, tainted: set[str], factory: cst.Call, held: str | None) -> None:
        self.tainted = tainted
        self.factory = factory
        self.held = held
        self.met = False

    def visit_Assign(self, node: cst.Assign) -> None:
        if self.holds_factory(node.value):
            return
        if self.mentions_argument(node.value):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self.tainted.add(target.target.value)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self.check([node.left, node.right])

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self.check([node.left, *(c.comparator for c in node.comparisons)])

    def visit_Call(self, node: cst.Call) -> None:
        if node is not self.factory and (dotted_name(node.func) or "").startswith("torch."):
            self.check([arg.value for arg in node.args])

    def check(self, operands: list[cst.BaseExpression]) -> None:
        factory = [o for o in operands if self.holds_factory(o)]
        others = [o for o in operands if not self.holds_factory(o) and self.mentions_argument(o)]
        self.met |= bool(factory and others)

    def holds_factory(self, expr: cst.BaseExpression) -> bool:
        finder = _Finds(self.factory, self.held)
        walk(expr, finder)
        return finder.found

    def mentions_argument(self, expr: cst.BaseExpression) -> bool:
        finder = _Mentions(self.tainted)
        walk(expr, finder)
        return finder.found


class _Finds(cst.CSTVisitor):
    def __init__(self, factory: cst.Call, held: str | None) -> None:
        self.factory = factory
        self.held = held
        self.found = False

    def visit_Call(self, node: cst.Call) -> bool:
        self.found |= node is self.factory
        return not self.found

    def visit_Name(self, node: cst.Name) -> None:
        self.found |= node.value == self.held


class _Mentions(cst.CSTVisitor):
    """A read of a tainted name, not of its size (``lengths.shape[0]``, ``x.size(1)``)."""

    def __init__(self, tainted: set[str]) -> None:
        self.tainted = tainted
        self.found = False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return node.attr.value not in SHAPE_READS

    def visit_Call(self, node: cst.Call) -> bool:
        return (dotted_name(node.func) or "") != "len"

    def visit_Name(self, node: cst.Name) -> None:
        self.found |= node.value in self.tainted
