"""The project's scripts that import a file and offer a CPU path: a model file's evidence that
it runs on the CPU too, when it has none of its own.

``models/gmptv.py`` hard-codes ``torch.cuda.IntTensor(n)``; it chooses no device, but
``main_gmptv.py`` beside it picks ``"cuda" if torch.cuda.is_available() else "cpu"`` and builds
the model from it: on a machine without CUDA that run fails in ``gmptv.py``. The scripts are
found by a text scan of the file's directory and the two above it, parsed, never run; an
importer counts only for the code it reaches: the names it imports, and what they use in the
file (one more file deep: ``main.py`` imports ``gmptv``, which imports ``backbone``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import libcst as cst

from gpudoc.lint import project
from gpudoc.lint.analysis.homes import project_modules, project_names
from gpudoc.lint.analysis.names import DISPATCHERS, dotted, name_counts
from gpudoc.lint.rules._checkpoints import scan
from gpudoc.lint.rules._gpu_savers import small_file_stamp
from gpudoc.lint.rules._project_scripts import candidate_importers, importer_texts
from gpudoc.lint.visit import code_ids, walk

DEPTH = 2
"""Importers of importers: a script, the model file it imports, the layers that file imports."""


@dataclass(frozen=True)
class Importer:
    """A script that reaches part of the file and runs on the CPU too."""

    script: Path
    evidence: str
    reached: frozenset[str]
    """The file's top-level names it reaches ("" for the file's top-level code)."""


def importer_cpu_path(module: cst.Module, path: str, node: cst.CSTNode) -> str | None:
    """Evidence, from a script that imports this file and reaches ``node``, that ``node`` runs
    on the CPU too; None when no such script offers the CPU."""
    importers = cpu_importers(path)
    name = _definition_key(module, node) if importers else None
    if name is None:
        return None  # under `if __name__ == "__main__":`: run only as a script, not imported
    for importer in importers:
        if name in importer.reached:
            return f"{importer.evidence} in `{importer.script.name}`, which imports this file"
    return None


def cpu_importers(path: str) -> list[Importer]:
    """The scripts with a CPU path that import ``path``, directly or through one more project
    file, and the names of ``path`` they reach (looked for once per file's lint)."""
    key = (path, project.lint_number())
    if key not in _last:
        _last.clear()  # one file's lint at a time: the next one may see a changed tree
        _last[key] = _cpu_importers(path, DEPTH)
    return _last[key]


_last: dict[tuple[str, int], list[Importer]] = {}


def _cpu_importers(path: str, depth: int) -> list[Importer]:
    here = Path(path).resolve()
    found: list[Importer] = []
    for script in candidate_importers(path):
        pairs = imported_pairs(script, here)
        if not pairs:
            continue
        parsed = project.load(script)
        if parsed is None:
            continue
        choice, used = _script_choice(parsed.module, str(script))
        if choice is not None:
            # `from losses import NCELoss` that the script never uses reaches nothing there
            names = frozenset(name for local, name in pairs if local in used)
            found.append(Importer(script, choice, _reach(here, names, used)))
        elif depth > 1:
            # a project module between: what the scripts importing it reach of it, and so of us
            for upper in _cpu_importers(str(script), depth - 1):
                seeds, used = _uses_of(script, here, upper.reached)
                if seeds:
                    found.append(Importer(upper.script, upper.evidence, _reach(here, seeds, used)))
    return found


_choices: dict[int, tuple[cst.Module, str | None, frozenset[str]]] = {}


def _script_choice(module: cst.Module, path: str) -> tuple[str | None, frozenset[str]]:
    """A script's own ``"cpu"`` device (the evidence's text), and every name it uses; read once
    per parse of the script (project.load keeps one while the file does not change), not once
    per file of the project it imports. Not an availability test alone, which may only guard a
    move, nor an option, which may choose no device (SCINet's ``--use_gpu``), nor a library
    module's choice, which its callers make."""
    cached = _choices.get(id(module))
    if cached is not None and cached[0] is module:
        return cached[1], cached[2]
    theirs = scan(module, remember=False, path=path)
    evidence = theirs.all_evidence()
    chooses = 1 in evidence and theirs.cpu_path is not None and not theirs.cpu_path_is_weak
    choice = evidence[1] if chooses and is_entry(module) else None
    used = _all_names(module) if choice is not None else frozenset()
    if len(_choices) > 256:
        _choices.clear()
    _choices[id(module)] = (module, choice, used)
    return choice, used


def imported_names(script: Path, target: Path) -> frozenset[str]:
    """The names ``script`` imports from ``target`` (``from models.gmptv import GMPTV``)."""
    return frozenset(name for _local, name in imported_pairs(script, target))


def imported_pairs(script: Path, target: Path) -> frozenset[tuple[str, str]]:
    """(local name, name in ``target``) for each name ``script`` imports from ``target``."""
    stamp = small_file_stamp(script)
    return _imported_pairs_at(script, stamp, target) if stamp is not None else frozenset()


@lru_cache(maxsize=512)
def _imported_pairs_at(
    script: Path, stamp: tuple[int, int], target: Path
) -> frozenset[tuple[str, str]]:
    try:
        text = script.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    stem = re.escape(target.stem)
    if not re.search(rf"\bimport\b[^\n]*\b{stem}\b|\b{stem}\b[^\n]*\bimport\b", text):
        return frozenset()
    parsed = project.load(script)
    if parsed is None:
        return frozenset()
    return frozenset(_imports_from(parsed.module, str(script), target).items())


def _imports_from(module: cst.Module, importer: str, target: Path) -> dict[str, str]:
    """Local name -> name in ``target``, for every ``from ... import`` of ``target`` anywhere in
    the module (scripts import inside ``main()`` too), and each name read of an ``import``ed
    ``target`` (``losses.FocalLoss``)."""
    finder = _ImportsFrom()
    walk(module, finder)
    found: dict[str, str] = {}
    for node in finder.found:
        for local, (where, name) in project_names(node, importer).items():
            if _same(where, target):
                found[local] = name
    statements: list[cst.Import | cst.ImportFrom] = [*finder.modules, *finder.found]
    for statement in statements:
        # `import losses` (or `from models import net`), then `losses.FocalLoss()`: the
        # attributes read of that name
        for local, where in project_modules(statement, importer).items():
            if _same(where, target):
                found.update((name, name) for name in finder.attributes.get(local, ()))
    return found


class _ImportsFrom(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[cst.ImportFrom] = []
        self.modules: list[cst.Import] = []
        """``import losses``: a module bound whole (``from models import net`` too)."""
        self.attributes: dict[str, set[str]] = {}
        """``losses`` -> {``FocalLoss``} for each ``losses.FocalLoss`` read."""

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.found.append(node)

    def visit_Import(self, node: cst.Import) -> None:
        self.modules.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if isinstance(node.value, cst.Name):
            self.attributes.setdefault(node.value.value, set()).add(node.attr.value)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b
    except OSError:
        return False


def _uses_of(
    middle: Path, target: Path, reached: frozenset[str]
) -> tuple[frozenset[str], frozenset[str]]:
    """The names of ``target`` that the ``reached`` part of ``middle`` uses, and every name
    that part uses (the methods it calls by name)."""
    parsed = project.load(middle)
    if parsed is None:
        return frozenset(), frozenset()
    local_to_target = _imports_from(parsed.module, str(middle), target)
    graph = _definition_graph(parsed.module)
    used = frozenset(name for key in reached for name in graph.get(key, ()))
    seeds = frozenset(name for local, name in local_to_target.items() if local in used)
    return seeds, used


IMPLICIT = frozenset({"forward", "__call__"})
"""Methods a module runs without naming them (``model(x)``), beside the dunders."""


def _reach(path: Path, names: frozenset[str], used: frozenset[str]) -> frozenset[str]:
    """The definitions of ``path`` that ``names`` reach: functions and classes, and of a class
    the methods run implicitly or called by name (``used`` by the importer, or by what is
    reached here), never a method nothing names (a ``load_network`` no one calls); "" for the
    module's own top-level code, which every import runs."""
    parsed = project.load(path)
    if parsed is None:
        return frozenset({""})
    graph = _definition_graph(parsed.module)
    seen = {""} | {name for name in names if name in graph}
    while True:
        named = set(used).union(*(graph[key] for key in seen))
        new = {key for key in graph if key not in seen and _reached(key, seen, named)}
        if not new:
            return frozenset(seen)
        seen |= new


def _reached(key: str, seen: set[str], named: set[str]) -> bool:
    owner, _, method = key.partition(".")
    if not method:
        return key in named
    implicit = method in IMPLICIT or (method.startswith("__") and method.endswith("__"))
    return owner in seen and (implicit or method in named)


_graphs: dict[int, tuple[cst.Module, dict[str, frozenset[str]]]] = {}


def _definition_graph(module: cst.Module) -> dict[str, frozenset[str]]:
    """Definition -> the names it uses (attribute names included): "" for the top-level code
    outside any definition and outside ``if __name__ == "__main__":``, ``f`` for a function,
    ``C`` for a class's own statements, ``C.m`` for each of its methods."""
    cached = _graphs.get(id(module))
    if cached is not None and cached[0] is module:
        return cached[1]
    graph: dict[str, set[str]] = {"": set()}
    for statement in module.body:
        if isinstance(statement, cst.ClassDef):
            name = statement.name.value
            graph.setdefault(name, set()).update(_names_in(*statement.bases))
            for member in _class_body(statement):
                key = f"{name}.{member.name.value}" if isinstance(member, cst.FunctionDef) else name
                graph.setdefault(key, set()).update(_names_in(member))
        elif isinstance(statement, cst.FunctionDef):
            graph.setdefault(statement.name.value, set()).update(_names_in(statement))
        elif not _is_main_block(statement):
            graph[""].update(_names_in(statement))
    frozen = {key: frozenset(value) for key, value in graph.items()}
    if len(_graphs) > 64:
        _graphs.clear()
    _graphs[id(module)] = (module, frozen)
    return frozen


def _class_body(node: cst.ClassDef) -> tuple[cst.CSTNode, ...]:
    return tuple(node.body.body) if isinstance(node.body, cst.IndentedBlock) else ()


def _names_in(*nodes: cst.CSTNode) -> set[str]:
    names = _Names()
    for node in nodes:
        walk(node, names)
    return names.found


def _all_names(module: cst.Module) -> frozenset[str]:
    """Every name a script uses, its ``__main__`` block included (importing is no use)."""
    names = _UsedNames()
    walk(module, names)
    return frozenset(names.found)


def is_entry(module: cst.Module) -> bool:
    """A script, not a library module: it runs something when started (a ``__main__`` block,
    or top-level statements beyond imports, definitions and constants)."""
    for statement in module.body:
        if _is_main_block(statement):
            return True
        if isinstance(statement, cst.FunctionDef | cst.ClassDef):
            continue
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                value = small.value if isinstance(small, cst.Expr | cst.Assign) else None
                if isinstance(value, cst.Call) and not _module_setup(value):
                    return True
        elif not isinstance(statement, cst.If | cst.Try):
            return True  # a loop or a `with` at the top: a script's own work
    return False


SETUP_CALLS = re.compile(
    r"^(getLogger|get_logger|basicConfig|setLevel|filterwarnings|simplefilter|namedtuple|"
    r"TypeVar|NewType|compile|Path|dataclass|field|defaultdict|OrderedDict|CN|EasyDict|edict|"
    r"register\w*|set_printoptions|manual_seed|seed)$"
)
"""What a library module runs when imported, besides constants: a logger, a type, a pattern,
a registry, a seed. No script's work."""


def _module_setup(call: cst.Call) -> bool:
    """``logger = logging.getLogger(__name__)``, ``Point = namedtuple(...)``."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else dotted(func) or ""
    return SETUP_CALLS.match(name) is not None


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)


class _UsedNames(_Names):
    """The names a script uses, not those it only imports (a module that re-exports a name
    uses it: ``_definition_graph`` keeps reading imports)."""

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False


def _is_main_block(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.If):
        return False
    test = statement.test
    return isinstance(test, cst.Comparison) and "__main__" in cst.Module([]).code_for_node(test)


def _definition_key(module: cst.Module, node: cst.CSTNode) -> str | None:
    """The definition holding ``node``, as ``_definition_graph`` names it; None under the
    module's ``if __name__ == "__main__":`` (or not found)."""
    target = id(node)
    for statement in module.body:
        if target not in _ids_of(statement):
            continue
        if isinstance(statement, cst.FunctionDef):
            return statement.name.value
        if isinstance(statement, cst.ClassDef):
            name = statement.name.value
            for member in _class_body(statement):
                if isinstance(member, cst.FunctionDef) and target in _ids_of(member):
                    return f"{name}.{member.name.value}"
            return name
        return None if _is_main_block(statement) else ""
    return None


_ids: dict[int, tuple[cst.CSTNode, frozenset[int]]] = {}


def _ids_of(statement: cst.CSTNode) -> frozenset[int]:
    cached = _ids.get(id(statement))
    if cached is not None and cached[0] is statement:
        return cached[1]
    ids = frozenset(code_ids(statement))
    if len(_ids) > 4096:
        _ids.clear()
    _ids[id(statement)] = (statement, ids)
    return ids


def uncalled_functions(module: cst.Module, path: str) -> set[int]:
    """The ids of the nodes of a program's top-level functions that nothing calls: a file with
    a ``__main__`` block, whose functions have no name in the file but the ``def``'s own, no
    decorator that registers them, no ``test_`` name that pytest collects, and no script of the
    project that names them (which may import them). What a program never runs cannot fail on
    the CPU path (a ``compute_gradient_penalty`` left from an earlier version of the training
    loop). A module without a ``__main__`` block may be a library, whatever its top level does."""
    if not any(_is_main_block(statement) for statement in module.body):
        return set()
    candidates = {
        statement.name.value: statement
        for statement in module.body
        if isinstance(statement, cst.FunctionDef)
        and not statement.decorators
        and not statement.name.value.startswith("test")
    }
    if not candidates:
        return set()
    counts = name_counts(module, set(candidates) | DISPATCHERS)
    if any(counts[name] for name in DISPATCHERS):
        return set()  # `fire.Fire()` makes each function a command; `globals()[name]` finds any
    unused = {name for name in candidates if counts[name] == 1}
    if unused and path:
        for text in importer_texts(path):
            unused = {name for name in unused if re.search(rf"\b{name}\b", text) is None}
    return {node for name in unused for node in code_ids(candidates[name])}
