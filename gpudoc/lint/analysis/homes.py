"""Functions and classes imported from the project's own modules (lint/project.py).

Each imported function keeps its home: the import table and the functions of the module that
defines it, which the walk swaps in while it walks that body for a call in this file. Their
nodes belong to another file, so what rules report on them is dropped by the checker: the
values they return and the modules they move are what this file gets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from gpudoc.lint import project
from gpudoc.lint.analysis.names import ImportTable, dotted
from gpudoc.lint.analysis.scope import Scope


@dataclass
class Home:
    """The module a function was imported from, as its body sees it."""

    imports: ImportTable
    functions: dict[str, cst.FunctionDef]
    parsed: project.ProjectModule
    scope: Scope = field(default_factory=Scope)


def _home(parsed: project.ProjectModule) -> Home:
    key = str(parsed.path)
    home = _homes.get(key)
    if home is None or home.functions is not parsed.functions:
        imports = ImportTable()
        for statement in parsed.imports:
            imports.add(statement)
        home = _homes[key] = Home(imports, parsed.functions, parsed)
    return home


_homes: dict[str, Home] = {}


def project_names(node: cst.ImportFrom, importer: str) -> dict[str, tuple[Path, str]]:
    """What ``from <module> import a, b as c`` names in the project's own files: local name ->
    (the module's file, the name there). Nothing is read yet: only what is called is parsed."""
    if isinstance(node.names, cst.ImportStar):
        return {}
    module = (dotted(node.module) or "") if node.module is not None else ""
    path = project.resolve(importer, module, len(node.relative))
    if path is None:
        return {}
    names: dict[str, tuple[Path, str]] = {}
    for alias in node.names:
        name = dotted(alias.name) or ""
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        names[local] = (path, name)
    return names


def project_modules(node: cst.Import | cst.ImportFrom, importer: str) -> dict[str, Path]:
    """The project's own modules an import binds as names: ``import utils`` (``utils``),
    ``import utils as U`` (``U``), ``from . import utils`` (``utils``): local name -> file.
    ``import a.b`` binds ``a``, a package: its submodules are not followed."""
    found: dict[str, Path] = {}
    if isinstance(node, cst.Import):
        for alias in node.names:
            name = dotted(alias.name) or ""
            asname = alias.asname.name if alias.asname is not None else None
            if "." in name and not isinstance(asname, cst.Name):
                continue
            path = project.resolve(importer, name, 0)
            if path is not None:
                found[asname.value if isinstance(asname, cst.Name) else name] = path
        return found
    if isinstance(node.names, cst.ImportStar):
        return found
    package = (dotted(node.module) or "") if node.module is not None else ""
    where = project.resolve(importer, package, len(node.relative)) if package else None
    if package and (where is None or where.name != "__init__.py"):
        return found  # `from torch.nn import functional`, `from utils import f`: no submodules
    for alias in node.names:
        name = dotted(alias.name) or ""
        path = project.resolve(importer, f"{package}.{name}", len(node.relative))
        if path is not None:
            asname = alias.asname.name if alias.asname is not None else None
            found[asname.value if isinstance(asname, cst.Name) else name] = path
    return found


def load_name(path: Path, name: str) -> tuple[cst.FunctionDef | cst.ClassDef, Home] | None:
    """The function or class ``name`` in ``path``, with its home module."""
    parsed = project.load(path)
    if parsed is None:
        return None
    if name in parsed.functions:
        return parsed.functions[name], _home(parsed)
    if name in parsed.classes:
        return parsed.classes[name], _home(parsed)
    return None
