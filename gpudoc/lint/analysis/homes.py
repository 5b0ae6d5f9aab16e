"""Functions and classes imported from the project's own modules (lint/project.py).

Each imported function keeps its home: the import table and the functions of the module that
defines it, which the walk swaps in while it walks that body for a call in this file. Their
nodes belong to another file, so what rules report on them is dropped by the checker: the
values they return and the modules they move are what this file gets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from gpudoc.lint import project
from gpudoc.lint.analysis.names import ImportTable, dotted
from gpudoc.lint.analysis.scope import Scope


@dataclass
class Home:
    """The module a function was imported from, as its body sees it."""

    imports: ImportTable
    functions: dict[str, cst.FunctionDef]
    scope: Scope = field(default_factory=Scope)


@dataclass
class Imported:
    functions: dict[str, tuple[cst.FunctionDef, Home]] = field(default_factory=dict)
    """Local name -> the function and its home."""
    classes: dict[str, tuple[cst.ClassDef, ImportTable]] = field(default_factory=dict)
    """Local name -> the class and its module's import table (to read its bases)."""


_homes: dict[str, Home] = {}


def _home(parsed: project.ProjectModule) -> Home:
    key = str(parsed.path)
    home = _homes.get(key)
    if home is None or home.functions is not parsed.functions:
        imports = ImportTable()
        for statement in parsed.imports:
            imports.add(statement)
        home = _homes[key] = Home(imports, parsed.functions)
    return home


def import_from_project(node: cst.ImportFrom, importer: str) -> Imported:
    """What ``from <module> import a, b as c`` brings in from the project's own files."""
    imported = Imported()
    if isinstance(node.names, cst.ImportStar):
        return imported
    module = dotted(node.module) or "" if node.module is not None else ""
    path = project.resolve(importer, module, len(node.relative))
    parsed = project.load(path) if path is not None else None
    if parsed is None:
        return imported
    home = _home(parsed)
    for alias in node.names:
        name = dotted(alias.name) or ""
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        if name in parsed.functions:
            imported.functions[local] = (parsed.functions[name], home)
        elif name in parsed.classes:
            imported.classes[local] = (parsed.classes[name], home.imports)
    return imported
