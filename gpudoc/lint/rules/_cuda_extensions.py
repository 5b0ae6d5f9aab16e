"""Scripts that cannot start on a machine without CUDA because an import compiles a CUDA-only
extension: rosinality's StyleGAN2 ``op`` package (vendored by GPEN, KAIR, pSp and many more)
runs ``torch.utils.cpp_extension.load(..., sources=[..., "fused_bias_act_kernel.cu"])`` when
it is imported. Such a script's ``torch.cuda.is_available()`` fallback is no CPU path.

Read, never run: the script's own top-level statements and those of the project modules it
imports at its top level, a few files deep.
"""

from __future__ import annotations

import re
from pathlib import Path

import libcst as cst

from gpudoc.lint import project
from gpudoc.lint.analysis.homes import project_modules, project_names
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.visit import descendants

DEPTH = 4
"""A script, the model file it imports, the ``op`` package that file imports (its
``__init__``), the module of the package that builds the extension."""

CUDA_SOURCE = re.compile(r"""\.cu['"]""")
BUILDERS = frozenset({"load", "load_inline"})


def compiles_cuda_at_import(module: cst.Module, path: str | None) -> bool:
    """``module`` (at ``path``), or a project module it imports unconditionally, builds a
    CUDA extension at its top level."""
    if path is None:
        return False
    return _compiles(module, path, DEPTH, {})


def _compiles(module: cst.Module, path: str, depth: int, seen: dict[str, int]) -> bool:
    seen[path] = depth  # a file met again with as much depth left or less adds nothing
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue  # an `if`, a `try`, a definition: not run unconditionally at import
        for small in statement.body:
            if _builds_cuda_extension(small, module):
                return True
            if depth > 1 and isinstance(small, cst.Import | cst.ImportFrom):
                for target in _imported_files(small, path):
                    if seen.get(str(target), 0) >= depth - 1:
                        continue
                    parsed = project.load(target)
                    if parsed is not None and _compiles(
                        parsed.module, str(target), depth - 1, seen
                    ):
                        return True
    return False


def _builds_cuda_extension(small: cst.BaseSmallStatement, module: cst.Module) -> bool:
    """``fused = load("fused", sources=[..., "fused_bias_act_kernel.cu"])``."""
    value = small.value if isinstance(small, cst.Assign | cst.Expr) else None
    if not isinstance(value, cst.Call):
        return False
    name = (dotted(value.func) or "").rsplit(".", 1)[-1]
    if name not in BUILDERS:
        return False
    if not CUDA_SOURCE.search(module.code_for_node(value)):
        return False  # `json.load(f)`: no CUDA source named (checked before the whole file)
    if any(isinstance(node, cst.IfExp) for node in descendants(value)):
        return False  # `sources + ([...".cu"] if torch.cuda.is_available() else [])`
    return "cpp_extension" in module.code


def _imported_files(node: cst.Import | cst.ImportFrom, importer: str) -> set[Path]:
    files = set(project_modules(node, importer).values())
    if isinstance(node, cst.ImportFrom):
        files |= {where for where, _ in project_names(node, importer).values()}
    return files
