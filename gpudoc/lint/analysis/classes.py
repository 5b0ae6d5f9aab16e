"""Facts about the nn.Module and Dataset subclasses a file defines."""

from __future__ import annotations

import re

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.homes import Home
from gpudoc.lint.analysis.instance_weights import holds_only_settings, settings_only
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.module_like import builds_layers
from gpudoc.lint.analysis.names import ImportTable, dotted
from gpudoc.lint.analysis.parameterless import weight_sources
from gpudoc.lint.analysis.self_placing import places_itself, placing_parameters
from gpudoc.lint.analysis.semantic import ModuleClass

TRANSFORMERS_MODEL = re.compile(
    r"\.(?!TF|Flax|DataCollator)\w*(PreTrainedModel|Model|For[A-Z]\w*)$"
)
"""transformers' PyTorch model classes (``RobertaPreTrainedModel``, ``BertModel``,
``BertForSequenceClassification``), each an nn.Module; not its TensorFlow and Flax ones, nor
its data collators (``DataCollatorForSeq2Seq``)."""


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
        module_class = self.module_class(name, node, kind)
        self.model.local_classes[name] = module_class
        if module_class.lightning:
            self.model.flags.frameworks.add("lightning")
        return module_class

    def module_class(
        self,
        name: str,
        node: cst.ClassDef,
        kind: str,
        foreign: bool = False,
        home_classes: dict[str, cst.ClassDef] | None = None,
    ) -> ModuleClass:
        """The facts of a module class, read with the imports of the file that defines it
        (``self.model.imports`` at the time). One of another project file is not walked, so
        whether it places itself is read from its text (self_placing.py)."""
        module_class = ModuleClass(name, node, lightning=kind == "lightning")
        # classes that hold nothing, or only settings (`MovingAvg(kernel_size)` around an
        # `nn.AvgPool1d`): a class built of them holds nothing either
        empty = frozenset(
            known
            for known, value in self.model.local_classes.items()
            if isinstance(value, ModuleClass) and holds_only_settings(value)
        )
        if home_classes:
            # another file's class: the classes of its own file that hold nothing
            # (`self.bce = WeightedBCE()` beside it, holding only its weights tuple)
            empty |= empty_classes_of(home_classes, node, self.model.imports)
        sources = weight_sources(node, self.model.imports, empty)
        module_class.weighted = sources != frozenset()
        module_class.weights_from = sources
        module_class.places_itself = foreign and places_itself(node)
        module_class.placing_parameters = placing_parameters(node)
        return module_class

    def class_kind(
        self, node: cst.ClassDef, home: Home | None = None, depth: int = 0
    ) -> str | None:
        """``module``, ``lightning``, ``dataset`` or None, by the class's bases. For a class of
        another project file (``home``), a base defined in that same file is judged there,
        not against the linted file's classes."""
        for base in node.bases:
            qualified = self.model.imports.qualify(base.value) or ""
            local = self.base_kind(dotted(base.value) or "", home, depth)
            if qualified in api.LIGHTNING_BASES or qualified.endswith("LightningModule"):
                return "lightning"
            if qualified in api.MODULE_BASES or (
                qualified.startswith("torch.nn.") and qualified[9:10].isupper()
            ):
                return "module"
            if qualified.startswith("transformers.") and TRANSFORMERS_MODEL.search(qualified):
                return "module"  # `class Head(RobertaPreTrainedModel)`: an nn.Module
            if qualified in api.DATASET_BASES or local == "dataset":
                return "dataset"
            if local is not None:
                return "lightning" if not isinstance(local, str) and local.lightning else "module"
        return "module" if builds_layers(node, self.model.imports) else None

    def base_kind(self, name: str, home: Home | None, depth: int) -> ModuleClass | str | None:
        """What a base class named ``name`` is: one of the linted file's classes, or of
        ``home``'s when the class being judged lives there."""
        if home is None:
            return self.model.local_class(name)
        base = home.parsed.classes.get(name)
        if base is None or depth >= MAX_BASE_DEPTH:
            return None
        kind = self.class_kind(base, home, depth + 1)
        if kind in (None, "dataset"):
            return kind
        return ModuleClass(name, base, lightning=kind == "lightning")


MAX_BASE_DEPTH = 4
"""Bases followed within another project file (``Net(Base)``, ``Base(Root)``, ...)."""


def empty_classes_of(
    classes: dict[str, cst.ClassDef], upto: cst.ClassDef, imports: ImportTable
) -> frozenset[str]:
    """The classes of a file, defined before ``upto``, that hold no weights: none of their
    own, and only settings given (each judged with the ones before it)."""
    empty: set[str] = set()
    for name, node in classes.items():
        if node is upto:
            break
        sources = weight_sources(node, imports, frozenset(empty))
        if settings_only(sources):
            empty.add(name)
    return frozenset(empty)


OPTIMIZER_BASES = frozenset({"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer"})


def optimizer_class(node: cst.ClassDef, model: SemanticModel) -> bool:
    """``class AdamW(Optimizer):``: an optimizer of the project's own (transformers' AdamW),
    or a subclass of one defined above it."""
    for base in node.bases:
        if model.imports.qualify(base.value) in OPTIMIZER_BASES:
            return True
        if isinstance(base.value, cst.Name) and base.value.value in model.optimizer_classes:
            return True
    return False
