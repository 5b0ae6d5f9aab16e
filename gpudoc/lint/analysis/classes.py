"""Facts about the nn.Module and Dataset subclasses a file defines."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.semantic import ModuleClass


class ClassFacts:
    """What kind of class a definition is (an nn.Module, a LightningModule, a Dataset), by its
    bases: imported ones by qualified name, the file's own by what they are."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model

    def register_class(self, node: cst.ClassDef) -> ModuleClass | None:
        kind = self.class_kind(node)
        name = node.name.value
        if kind == "dataset":
            self.model.local_classes[name] = "dataset"
            self.model.dataset_stack.append(name)
            return None
        if kind is None:
            return None
        module_class = ModuleClass(name, node, lightning=kind == "lightning")
        self.model.local_classes[name] = module_class
        if module_class.lightning:
            self.model.flags.frameworks.add("lightning")
        return module_class

    def class_kind(self, node: cst.ClassDef) -> str | None:
        for base in node.bases:
            qualified = self.model.imports.qualify(base.value) or ""
            local = self.model.local_class(dotted(base.value) or "")
            if qualified in api.LIGHTNING_BASES or qualified.endswith("LightningModule"):
                return "lightning"
            if qualified in api.MODULE_BASES or (
                qualified.startswith("torch.nn.") and qualified[9:10].isupper()
            ):
                return "module"
            if qualified in api.DATASET_BASES or local == "dataset":
                return "dataset"
            if local is not None:
                return "lightning" if not isinstance(local, str) and local.lightning else "module"
        return None
