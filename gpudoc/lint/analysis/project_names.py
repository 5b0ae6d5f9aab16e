"""Names imported from the project's own modules (``from model import Net``): noted at the
import, read the first time the walk needs one (homes.py loads them, never runs them)."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis.classes import ClassFacts
from gpudoc.lint.analysis.functions import moves_anything
from gpudoc.lint.analysis.homes import Home, load_name, project_names
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import ImportTable
from gpudoc.lint.analysis.parameterless import holds_nothing
from gpudoc.lint.analysis.semantic import ModuleClass


class ProjectNames:
    def __init__(self, model: SemanticModel, classes: ClassFacts) -> None:
        self.model = model
        self.classes = classes

    def import_project_names(self, node: cst.ImportFrom) -> None:
        """``from model import Net``: the project's own function or class, not a library's."""
        assert self.model.path is not None
        for local, where in project_names(node, self.model.path).items():
            self.model.imports.aliases.pop(local, None)
            self.model.project_imports[local] = where

    def resolve_project_name(self, local: str) -> None:
        """Read what an imported project name stands for, the first time it matters."""
        where = self.model.project_imports.pop(local, None)
        found = load_name(*where) if where is not None else None
        if found is None:
            return
        definition, context = found
        if isinstance(definition, cst.FunctionDef) and isinstance(context, Home):
            self.model.local_functions[local] = definition
            self.model.homes[definition] = context
            return
        if not isinstance(definition, cst.ClassDef) or not isinstance(context, ImportTable):
            return
        saved, self.model.imports = self.model.imports, context
        try:
            kind = self.classes.class_kind(definition)
        finally:
            self.model.imports = saved
        if kind == "dataset":
            self.model.local_classes[local] = "dataset"
            if moves_anything(definition):  # its batches' place is not known then
                self.model.device_datasets.add(local)
        elif kind is not None:
            module_class = ModuleClass(local, definition, kind == "lightning")
            module_class.weighted = not holds_nothing(definition, context)
            self.model.local_classes[local] = module_class
