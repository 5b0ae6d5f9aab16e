"""Functions and classes imported from the project's own modules (lint/project.py).

Each imported function keeps its home: the import table and the functions of the module that
defines it, which the walk swaps in while it walks that body for a call in this file. Their
nodes belong to another file, so what rules report on them is dropped by the checker: the
values they return and the modules they move are what this file gets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
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
    modules: dict[str, Path] = field(default_factory=dict)
    """The project modules its own imports bind (``import utils``): ``utils.<name>`` in its
    bodies is the project's function."""


def home_of(parsed: project.ProjectModule) -> Home:
    """The project module as the bodies walked from it see it: its library imports and its
    functions (read once per parse)."""
    key = str(parsed.path)
    home = _homes.get(key)
    if home is None or home.functions is not parsed.functions:
        imports = ImportTable()
        modules: dict[str, Path] = {}
        for statement in parsed.imports:
            imports.add(statement)
            modules.update(project_modules(statement, str(parsed.path)))
        for local in modules:  # `import utils` of the project: not a library
            imports.aliases.pop(local, None)
        home = _homes[key] = Home(imports, parsed.functions, parsed, modules=modules)
    return home


_homes: dict[str, Home] = {}


def add_star_library_names(imports: ImportTable, node: cst.ImportFrom, importer: str) -> None:
    """``from config import *`` of a project module also binds what that module imports (its
    ``torch``, its ``F`` of ``import torch.nn.functional as F``); names bound before are kept."""
    module = (dotted(node.module) or "") if node.module is not None else ""
    path = project.resolve(importer, module, len(node.relative))
    parsed = project.load(path) if path is not None else None
    if parsed is None:
        return
    for local, qualified in home_of(parsed).imports.aliases.items():
        if not local.startswith("_") and local not in imports.aliases:
            imports.aliases[local] = qualified
            imports.roots.add(qualified.split(".")[0])


def project_names(node: cst.ImportFrom, importer: str) -> dict[str, tuple[Path, str]]:
    """What ``from <module> import a, b as c`` names in the project's own files: local name ->
    (the module's file, the name there). Nothing is read yet: only what is called is parsed,
    except for ``from utils import *``, whose names are what the module defines."""
    module = (dotted(node.module) or "") if node.module is not None else ""
    path = project.resolve(importer, module, len(node.relative))
    if path is None:
        return {}
    if isinstance(node.names, cst.ImportStar):
        return _public_names(path)
    names: dict[str, tuple[Path, str]] = {}
    for alias in node.names:
        name = dotted(alias.name) or ""
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        names[local] = (path, name)
    return names


def _public_names(path: Path) -> dict[str, tuple[Path, str]]:
    """The functions and classes ``from <path's module> import *`` binds (those without a
    leading underscore; ``__all__`` is not read)."""
    parsed = project.load(path)
    if parsed is None:
        return {}
    defined = [*parsed.functions, *parsed.classes]
    return {name: (path, name) for name in defined if not name.startswith("_")}


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
    if package and where is not None and where.name != "__init__.py":
        return found  # `from utils import f`: a module's names, no submodules
    # `from torch.nn import functional`: no project module; a directory of the project
    # without `__init__.py` (a namespace package) holds modules all the same
    if (
        package
        and where is None
        and not project.namespace_package(importer, package, len(node.relative))
    ):
        return found
    for alias in node.names:
        name = dotted(alias.name) or ""
        path = project.resolve(importer, f"{package}.{name}", len(node.relative))
        if path is not None and where is not None and load_name(where, name) is not None:
            # `from .trainer import trainer` in the package's __init__: the import binds the
            # function, which replaced the submodule of the same name on the package
            continue
        if path is not None:
            asname = alias.asname.name if alias.asname is not None else None
            found[asname.value if isinstance(asname, cst.Name) else name] = path
    return found


MAX_REEXPORTS = 3
"""How many ``from .base import *`` steps a name is followed through (a package's __init__)."""


def load_name(
    path: Path, name: str, hops: int = 0
) -> tuple[cst.FunctionDef | cst.ClassDef, Home] | None:
    """The function or class ``name`` in ``path``, with its home module;
    a class also when ``path`` only re-exports it (``from .base import *`` in a package's
    ``__init__.py``). ``utils/__init__.py`` holding ``from .storage import *`` is how many
    research repositories expose their helpers (``utils.get_status(model_dir)``)."""
    parsed = project.load(path)
    if parsed is None:
        return None
    if name in parsed.functions:
        return parsed.functions[name], home_of(parsed)
    if name in parsed.classes:
        return parsed.classes[name], home_of(parsed)
    if hops >= MAX_REEXPORTS:
        return None
    key = (path, name, hops)  # a package __init__ is asked for the same names again and again
    cached = _reexports.get(key)
    if cached is None or not _still_current(parsed, *cached):
        cached = _reexports[key] = (parsed, _find_reexport(parsed, path, name, hops))
    return cached[1]


_Found = tuple[cst.FunctionDef | cst.ClassDef, Home] | None
_reexports: dict[tuple[Path, str, int], tuple[project.ProjectModule, _Found]] = {}


def _still_current(
    parsed: project.ProjectModule, read: project.ProjectModule, found: _Found
) -> bool:
    """The re-exporting module did not change since (a long-lived process lints edited files
    again); project.load re-parses a changed module, so a stale entry is not the same object.
    The defining module is not stat'ed again here: that is a cost on every lookup."""
    return read is parsed


def _find_reexport(
    parsed: project.ProjectModule, path: Path, name: str, hops: int
) -> tuple[cst.FunctionDef | cst.ClassDef, Home] | None:
    for statement in parsed.imports:
        found = _reexported(statement, str(path), name)
        if found is not None and _may_define(found[0], found[1]):
            loaded = load_name(found[0], found[1], hops + 1)
            if loaded is not None:
                return loaded
    return None


def _may_define(path: Path, name: str) -> bool:
    """A cheap look at the text before parsing: ``path`` defines ``name`` at top level or
    imports something that may be it (a package ``__init__`` re-exports dozens of modules with
    ``from .x import *``; only the one holding the name is parsed)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    pattern = _definition_pattern(name)
    return pattern.search(text) is not None


@lru_cache(maxsize=512)
def _definition_pattern(name: str) -> re.Pattern[str]:
    word = re.escape(name)
    return re.compile(
        rf"^(?:class|def)[ \t]+{word}\b|^from[ \t].*\bimport\b.*(?:\*|\b{word}\b)", re.M
    )


def _reexported(
    statement: cst.Import | cst.ImportFrom, importer: str, name: str
) -> tuple[Path, str] | None:
    """Where ``from <module> import name`` (or ``*``) in ``importer`` takes ``name`` from."""
    if not isinstance(statement, cst.ImportFrom):
        return None
    if isinstance(statement.names, cst.ImportStar):
        source = name
    else:
        source = ""
        for alias in statement.names:
            local = alias.asname.name if alias.asname is not None else alias.name
            if isinstance(local, cst.Name) and local.value == name:
                source = dotted(alias.name) or ""
        if not source:
            return None
    module = (dotted(statement.module) or "") if statement.module is not None else ""
    found = project.resolve(importer, module, len(statement.relative))
    return (found, source) if found is not None and str(found) != importer else None
