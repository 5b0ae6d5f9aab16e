"""The project's own modules that a file imports: found, read and parsed, never run.

``from .utils import to_device`` or ``from model import Net`` in ``train.py`` names a file next
to it (or in a package above it): its functions and classes are walked where ``train.py`` calls
them, with ``train.py``'s values. The search follows Python's rules for a script run from its
own directory: relative imports from the file's package, absolute ones from the file's
directory, the directory holding its top package, and the project's root (a directory holding
``pyproject.toml``, ``setup.py``, ``setup.cfg`` or ``.git``; without one, the directory gpudoc
runs in when it holds the file). Installed packages are never read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import libcst as cst

from gpudoc.lint.parse import parse_text, too_big_to_parse

MAX_MODULE_BYTES = 200_000
"""A sibling larger than this is not read: a generated file, not a helper module."""
MAX_LEVELS_UP = 4
INSTALLED = frozenset({"site-packages", "dist-packages"})
ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
FROM_IMPORT = re.compile(
    r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[\w, \t]*)", re.M
)
COMMENT = re.compile(r"#[^\n]*")
MAX_REEXPORT_DEPTH = 3
"""How far the cache key follows what package ``__init__`` files import: the walk follows a
name through re-exports (``from .model import *``) as deep (analysis/homes.py)."""
IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w., \t]+)", re.M)
AS_NAME = re.compile(r"[ \t]+as[ \t]+\w+")


@dataclass
class ProjectModule:
    """One of the project's modules, parsed: its imports and top-level definitions."""

    path: Path
    module: cst.Module
    source: str
    imports: list[cst.Import | cst.ImportFrom] = field(default_factory=list)
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)
    classes: dict[str, cst.ClassDef] = field(default_factory=dict)


_resolved: list[dict[tuple[str, str, int], Path | None]] = []
"""While ``resolving_once`` is active: each import's answer, looked up once."""
_lints = [0]
"""How many files' lints ``resolving_once`` has begun: what a rule remembers of one file's
lint (the project files it read) is stale in the next one, even for the same text."""


@contextmanager
def resolving_once() -> Iterator[None]:
    """Within this, ``resolve`` looks each (importer, module, level) up on disk once: a big
    file names the same modules again and again (``import torch`` in every pasted script), and
    each look-up costs a ``realpath`` and a few ``stat`` calls. Held for one file's lint, so a
    module created between two runs in one process is still found."""
    if _resolved:
        yield
        return
    _resolved.append({})
    _lints[0] += 1
    try:
        yield
    finally:
        _resolved.clear()


_runs = [0]
"""How many ``lint_paths`` calls this process has begun: what a tree scan finds (the project's
scripts) holds for one run, whose files do not change under it."""


def begin_run() -> None:
    _runs[0] += 1


def run_number() -> int:
    return _runs[0]


def lint_number() -> int:
    """Which file's lint this is (see ``_lints``)."""
    return _lints[0]


def resolve(importer: str, module: str, level: int) -> Path | None:
    """The file ``from <level dots><module> import ...`` in ``importer`` reads, if it is part of
    the project."""
    if not _resolved:
        return _resolve(importer, module, level)
    known = _resolved[0]
    key = (importer, module, level)
    if key not in known:
        known[key] = _resolve(importer, module, level)
    return known[key]


def _resolve(importer: str, module: str, level: int) -> Path | None:
    if importer.startswith("<") or not importer.endswith((".py", ".ipynb")):
        return None
    here = Path(importer).resolve().parent
    parts = [part for part in module.split(".") if part]
    if level:
        base = here
        for _ in range(level - 1):
            base = base.parent
        return _module_file(base, parts)
    for directory in _search_path(here):
        found = _module_file(directory, parts)
        if found is not None:
            return found
    return _from_ancestor(here, parts)


def namespace_package(importer: str, module: str, level: int) -> bool:
    """``module`` names a directory of the project without ``__init__.py`` where
    ``importer`` would look for it (Python 3's namespace packages): its modules can be
    imported by name (``from ludwig.utils import torch_utils``)."""
    if importer.startswith("<") or not importer.endswith((".py", ".ipynb")):
        return False
    here = Path(importer).resolve().parent
    parts = [part for part in module.split(".") if part]
    if not parts:
        return False
    if level:
        base = here
        for _ in range(level - 1):
            base = base.parent
        return base.joinpath(*parts).is_dir()
    parent = _ancestor_holding(str(here), parts[0]) if len(parts) > 1 else None
    bases = [*_search_path(here), *([parent] if parent is not None else [])]
    return any(base.joinpath(*parts).is_dir() for base in bases)


def _from_ancestor(start: Path, parts: list[str]) -> Path | None:
    """``from pipeline.trainer import Trainer`` in ``pipeline/mnist/run.py`` with no root
    marker: the script is run from the directory that holds ``pipeline/`` (``python -m
    pipeline.mnist.run``), a few levels up. Only a dotted import is looked for there: a plain
    ``import utils`` in a parent directory is too likely someone else's."""
    if len(parts) < 2:
        return None
    parent = _ancestor_holding(str(start), parts[0])
    return _module_file(parent, parts) if parent is not None else None


@lru_cache(maxsize=1024)
def _ancestor_holding(start: str, package: str) -> Path | None:
    for parent in list(Path(start).parents)[:MAX_LEVELS_UP]:
        if parent.name in INSTALLED:
            return None
        if (parent / package).is_dir():
            return parent
        if any((parent / marker).exists() for marker in ROOT_MARKERS):
            return None
    return None


def _search_path(start: Path) -> list[Path]:
    return _search_path_of(str(start), os.getcwd())


@lru_cache(maxsize=256)
def _search_path_of(directory: str, cwd: str) -> list[Path]:
    """Where an absolute import is looked for, as Python does for a script or a package: the
    file's directory and, inside a package, the directory that holds the top package; then the
    project's root (a directory with a root marker) above them, else the directory gpudoc runs
    in when it holds the file (``python -m scripts.visualize`` from a checkout without
    ``.git``: an unpacked archive, a copied tree). Never an installed-packages directory: a
    library is not the project. Read once per directory and process."""
    start = Path(directory)
    directories = [start]
    top = start
    while (top / "__init__.py").is_file() and top.parent != top:
        top = top.parent
    if top != start:
        directories.append(top)
    for parent in [top, *list(top.parents)[:MAX_LEVELS_UP]]:
        if any((parent / marker).exists() for marker in ROOT_MARKERS):
            if parent not in directories:
                directories.append(parent)
            break
    else:
        here = Path(cwd)
        if here in list(top.parents)[:MAX_LEVELS_UP] and here not in directories:
            directories.append(here)
    return [d for d in directories if d.name not in INSTALLED]


def _module_file(base: Path, parts: list[str]) -> Path | None:
    if not parts:
        candidates = [base / "__init__.py"]
    else:
        stem = base.joinpath(*parts)
        candidates = [stem.with_suffix(".py"), stem / "__init__.py"]
    for candidate in candidates:
        if candidate.is_file() and candidate.stat().st_size <= MAX_MODULE_BYTES:
            return candidate
    return None


def dependencies(source: str, importer: str) -> list[Path]:
    """The project files ``source`` imports from, and what the package ``__init__`` files among
    them import (a name may be re-exported there), found by a text scan (for cache keys)."""
    with resolving_once():
        return _dependencies(source, importer)


def _dependencies(source: str, importer: str) -> list[Path]:
    found: list[Path] = []
    frontier = _direct_dependencies(source, importer)
    for depth in range(MAX_REEXPORT_DEPTH + 1):
        following: list[Path] = []
        for dependency in frontier:
            if dependency in found or str(dependency) == importer:
                continue
            found.append(dependency)
            if dependency.name == "__init__.py" and depth < MAX_REEXPORT_DEPTH:
                following += _package_dependencies(dependency)
        frontier = following
    return found


def _package_dependencies(init: Path) -> list[Path]:
    stamp = _stamp(init)
    return _package_dependencies_at(init, stamp) if stamp is not None else []


def _stamp(path: Path) -> tuple[int, int] | None:
    """(modification time, size): a file rewritten within one tick of the file system's clock
    keeps its time, but seldom its size too."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


@lru_cache(maxsize=256)
def _package_dependencies_at(init: Path, stamp: tuple[int, int]) -> list[Path]:
    """What a package ``__init__`` imports, read once while it does not change."""
    return _direct_dependencies(_read(init), str(init))


def _direct_dependencies(source: str, importer: str) -> list[Path]:
    wanted: list[Path | None] = []
    for match in FROM_IMPORT.finditer(source):
        dots, module, names = match.groups()
        package = resolve(importer, module, len(dots))
        wanted.append(package)
        if module == "" or (package is not None and package.name == "__init__.py"):
            # `from . import utils`, `from pkg import (utils, data)`: the names may be modules
            names_at = [f"{module}.{name}" for name in _names(names.strip("()"))]
            wanted += [resolve(importer, name, len(dots)) for name in names_at]
    for match in IMPORT.finditer(source):
        wanted += [resolve(importer, name, 0) for name in _names(match.group(1))]
    return [path for path in wanted if path is not None]


def imported_stems(source: str) -> frozenset[str]:
    """The last part of each module a script's import lines name, and each name they import
    (a module of a package may be imported by name: ``from ludwig.utils import torch_utils``),
    read from the text as ``dependencies`` reads them."""
    stems: set[str] = set()
    for match in FROM_IMPORT.finditer(source):
        _, module, names = match.groups()
        if module:
            stems.add(module.rsplit(".", 1)[-1])
        stems.update(name.rsplit(".", 1)[-1] for name in _names(names.strip("()")))
    for match in IMPORT.finditer(source):
        stems.update(name.rsplit(".", 1)[-1] for name in _names(match.group(1)))
    return frozenset(stems)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _names(text: str) -> list[str]:
    text = AS_NAME.sub("", COMMENT.sub("", text))
    return [name.strip() for name in text.split(",") if name.strip()]


@lru_cache(maxsize=64)
def _parsed(path: Path, stamp: tuple[int, int]) -> ProjectModule | None:
    try:
        text = path.read_text(encoding="utf-8")
        if too_big_to_parse(text) is not None:
            return None  # nesting that would overflow the parser's stack: not followed
        module = parse_text(text)
    except (OSError, UnicodeDecodeError, cst.ParserSyntaxError, RecursionError):
        return None
    except Exception:  # the parser is not ours: an unparseable helper is just not followed
        return None
    parsed = ProjectModule(path, module, text)
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            parsed.functions[statement.name.value] = statement
        elif isinstance(statement, cst.ClassDef):
            parsed.classes[statement.name.value] = statement
        elif isinstance(statement, cst.SimpleStatementLine):
            imports = [s for s in statement.body if isinstance(s, cst.Import | cst.ImportFrom)]
            parsed.imports += imports
    return parsed


def load(path: Path) -> ProjectModule | None:
    """The parsed module at ``path`` (parsed once per process while it does not change)."""
    stamp = _stamp(path)
    return _parsed(path, stamp) if stamp is not None else None
