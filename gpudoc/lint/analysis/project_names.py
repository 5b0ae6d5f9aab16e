"""Names imported from the project's own modules (``from model import Net``, ``import utils``):
noted at the import, read the first time the walk needs one (homes.py loads them, never runs
them). A plain class of another module (a trainer, a noise schedule) is walked where this file
uses it, with its home's imports."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis.classes import ClassFacts, optimizer_class
from gpudoc.lint.analysis.functions import moves_anything
from gpudoc.lint.analysis.homes import (
    Home,
    add_star_library_names,
    load_name,
    project_modules,
    project_names,
)
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.scope import Scope
from gpudoc.lint.analysis.self_placing import built_parts, places_itself

MAX_PART_DEPTH = 3
"""Levels of parts followed for a class whose parts place themselves (NCRFpp's ``SeqLabel``
-> ``WordSequence`` -> ``WordRep``)."""


class ProjectNames:
    def __init__(self, model: SemanticModel, classes: ClassFacts) -> None:
        self.model = model
        self.classes = classes

    def import_project_names(self, node: cst.Import | cst.ImportFrom) -> None:
        """``from model import Net``, ``import utils``: the project's own function, class or
        module, not a library's."""
        model = self.model
        assert model.path is not None
        if isinstance(node, cst.ImportFrom):
            for local, where in project_names(node, model.path).items():
                model.imports.aliases.pop(local, None)
                model.project_imports[local] = where
            if isinstance(node.names, cst.ImportStar):
                self.star_library_names(node)
        for local, path in project_modules(node, model.path).items():
            model.imports.aliases.pop(local, None)
            model.project_imports.pop(local, None)
            model.project_module_names[local] = path

    def star_library_names(self, node: cst.ImportFrom) -> None:
        """``from models.bert import *`` also binds what that module imports: its ``F`` of
        ``import torch.nn.functional as F`` is torch's here too (names this file bound
        before are kept)."""
        assert self.model.path is not None
        add_star_library_names(self.model.imports, node, self.model.path)

    def resolve_project_name(self, local: str) -> None:
        """Read what an imported project name stands for, the first time it matters."""
        model = self.model
        where = model.project_imports.pop(local, None)
        found = load_name(*where) if where is not None else None
        if found is None:
            return
        definition, home = found
        if isinstance(definition, cst.FunctionDef):
            model.local_functions[local] = definition
            model.homes[definition] = home
            return
        saved, model.imports = model.imports, home.imports
        try:
            kind = self.classes.class_kind(definition, home)
            if kind is None and optimizer_class(definition, model):
                model.optimizer_classes.add(local)
            module_class = None
            if kind in ("module", "lightning"):
                module_class = self.classes.module_class(
                    local, definition, kind, foreign=True, home_classes=home.parsed.classes
                )
                # `self.word_hidden = WordSequence(data)`, whose `__init__` moves its layers
                module_class.places_itself |= parts_place_themselves(definition, home)
        finally:
            model.imports = saved
        if kind is None:  # a plain class: walked where it is used
            model.plain_classes[local] = self.foreign_class_scope(definition, home)
        elif kind == "dataset":
            model.local_classes[local] = "dataset"
            if moves_anything(definition):  # its batches' place is not known then
                model.device_datasets.add(local)
        elif module_class is not None:
            model.local_classes[local] = module_class
            scope = self.foreign_class_scope(definition, home)
            scope.module_class = module_class  # its methods' `self` is that module
            model.foreign_module_scopes[local] = scope
            if module_class.lightning:
                model.flags.frameworks.add("lightning")

    def home_class(self, name: str) -> None:
        """``IResNet(block, layers)`` in a factory of another file, walked for a call here
        (``iresnet18().to(device)``): a class of that file, read like an imported one."""
        model = self.model
        home = model.homes.get(model.call_stack[-1]) if model.call_stack else None
        if home is None or name not in home.parsed.classes:
            return
        if name in model.local_classes or name in model.plain_classes:
            return
        model.project_imports.setdefault(name, (home.parsed.path, name))

    def home_member(self, func: cst.Attribute) -> cst.FunctionDef | None:
        """``utils.get_vocab(model_dir)`` in a function of another file, walked for a call
        here, where that file imports the project's ``utils``: the function it names."""
        model = self.model
        home = model.homes.get(model.call_stack[-1]) if model.call_stack else None
        base = func.value
        if home is None or not isinstance(base, cst.Name) or model.scope.lookup(base.value):
            return None
        path = home.modules.get(base.value)
        found = load_name(path, func.attr.value) if path is not None else None
        if found is None or not isinstance(found[0], cst.FunctionDef):
            return None
        model.homes[found[0]] = found[1]
        return found[0]

    def foreign_class_scope(self, node: cst.ClassDef, home: Home) -> Scope:
        """The scope of a plain class of another project module: its methods, walked with
        their home's imports where this file's instances call them."""
        scope = Scope(parent=home.scope, function="")
        for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
            if isinstance(statement, cst.FunctionDef):
                scope.methods[statement.name.value] = statement
                self.model.homes[statement] = home
        return scope


def parts_place_themselves(node: cst.ClassDef, home: Home, depth: int = 0) -> bool:
    """``node``'s ``__init__`` keeps an instance of a project class that places itself
    (``if data.HP_gpu: self.hidden2tag = self.hidden2tag.cuda()`` in its own ``__init__``), or
    whose parts do: the instance is placed where its parts are."""
    for name in built_parts(node):
        found = _class_of(home, name)
        if found is None:
            continue
        definition, its_home = found
        if places_itself(definition):
            return True
        if depth < MAX_PART_DEPTH and parts_place_themselves(definition, its_home, depth + 1):
            return True
    return False


def _class_of(home: Home, name: str) -> tuple[cst.ClassDef, Home] | None:
    """The class ``name`` as ``home``'s module sees it: its own, or one it imports from
    another project module."""
    if name in home.parsed.classes:
        return home.parsed.classes[name], home
    for statement in home.parsed.imports:
        if not isinstance(statement, cst.ImportFrom):
            continue
        where = project_names(statement, str(home.parsed.path)).get(name)
        found = load_name(*where) if where is not None else None
        if found is not None and isinstance(found[0], cst.ClassDef):
            return found[0], found[1]
    return None
