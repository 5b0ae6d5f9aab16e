"""Facts about the nn.Module and Dataset subclasses a file defines."""

from __future__ import annotations

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.facts import ClassAttr, ModuleClass
from gpudoc.lint.analysis.names import dotted
from gpudoc.lint.analysis.qualified import QualifiedCalls
from gpudoc.lint.analysis.values import Kind, Place, Value


class ClassFacts(QualifiedCalls):
    def register_class(self, node: cst.ClassDef) -> ModuleClass | None:
        kind = self.class_kind(node)
        name = node.name.value
        if kind == "dataset":
            self.local_classes[name] = "dataset"
            self.dataset_stack.append(name)
            return None
        if kind is None:
            return None
        module_class = ModuleClass(name, node, lightning=kind == "lightning")
        self.local_classes[name] = module_class
        self.facts.classes.append(module_class)
        if module_class.lightning:
            self.facts.flags.frameworks.add("lightning")
        return module_class

    def class_kind(self, node: cst.ClassDef) -> str | None:
        for base in node.bases:
            qualified = self.imports.qualify(base.value) or ""
            local = self.local_class(dotted(base.value) or "")
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

    def record_class_attribute(
        self, name: str, target: cst.BaseExpression | None, value: Value, statement: cst.CSTNode
    ) -> None:
        cls = self.scope.module_class
        if cls is None or not self.in_init or not name.startswith("self."):
            return
        if not isinstance(target, cst.Attribute):
            return
        shape = self.attribute_shape(statement, value)
        if shape is None:
            # `self.layers = nn.ModuleList(self.layers)`: the plain list was wrapped after all
            cls.init_attrs = [a for a in cls.init_attrs if a.attr != name[5:]]
            return
        if isinstance(statement, cst.SimpleStatementLine):
            small = statement.body[0]
            if isinstance(small, cst.Assign):
                cls.init_attrs.append(ClassAttr(name[5:], statement, small.value, shape))

    def attribute_shape(self, statement: cst.CSTNode, value: Value) -> str | None:
        if not isinstance(statement, cst.SimpleStatementLine):
            return None
        small = statement.body[0]
        if not isinstance(small, cst.Assign):
            return None
        expr = small.value
        if isinstance(expr, cst.List) and not expr.elements:
            return "empty-list"
        if isinstance(expr, cst.Dict) and not expr.elements:
            return "empty-dict"
        if isinstance(expr, cst.List | cst.ListComp) and self.holds_modules(expr):
            return "module-list"
        if isinstance(expr, cst.Dict | cst.DictComp) and self.holds_modules(expr):
            return "module-dict"
        if value.kind is Kind.TENSOR and self.is_new_tensor(expr):
            return "tensor"
        if value.kind is Kind.TENSOR and value.place is Place.HOST and self.is_own_call(expr):
            return "tensor"  # `self.create_positional_encoding()`, walked: a host tensor
        return None

    def is_own_call(self, expr: cst.BaseExpression) -> bool:
        """A call of one of the file's functions or of the class's own methods."""
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        if isinstance(func, cst.Name):
            return func.value in self.local_functions
        return isinstance(func, cst.Attribute) and dotted(func.value) == "self"

    def holds_modules(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.ListComp):
            return self.eval_is_module(expr.elt)
        if isinstance(expr, cst.DictComp):
            return self.eval_is_module(expr.value)
        if isinstance(expr, cst.List):
            return bool(expr.elements) and all(
                self.eval_is_module(element.value) for element in expr.elements
            )
        if isinstance(expr, cst.Dict):
            return bool(expr.elements) and all(
                isinstance(e, cst.DictElement) and self.eval_is_module(e.value)
                for e in expr.elements
            )
        return False

    def eval_is_module(self, expr: cst.BaseExpression) -> bool:
        """Syntactically a module constructor: `nn.Linear(...)`, a local Module subclass."""
        if not isinstance(expr, cst.Call):
            return False
        qualified = self.imports.qualify(expr.func) or ""
        if qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[-1][:1].isupper():
            return True
        local = self.local_class(dotted(expr.func) or "")
        function = self.local_functions.get(dotted(expr.func) or "")
        if function is not None and local is None:  # `make_head(dim, n)`, walked by now
            return any(v.kind is Kind.MODULE for v in self.summaries.get(function, {}).values())
        return local is not None and not isinstance(local, str)

    def is_new_tensor(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.BinaryOperation):
            return self.is_new_tensor(expr.left) or self.is_new_tensor(expr.right)
        if not isinstance(expr, cst.Call):
            return False
        qualified = self.imports.qualify(expr.func) or ""
        if qualified.startswith("torch.nn.functional.") and expr.args:
            return self.is_new_tensor(expr.args[0].value)  # `F.normalize(torch.randn(n, d))`
        if qualified.startswith("torch.") and not qualified.startswith("torch.nn."):
            return qualified[6:] in api.TENSOR_FACTORIES or "." not in qualified[6:]
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in (
            api.PLACE_KEEPING_METHODS
        ):
            return self.is_new_tensor(expr.func.value)
        return False

    def record_append(self, call: cst.Call) -> None:
        """``self.layers.append(nn.Linear(...))`` in ``__init__``: a plain list of modules."""
        cls = self.scope.module_class
        func = call.func
        if cls is None or not self.in_init or not isinstance(func, cst.Attribute):
            return
        if func.attr.value not in ("append", "extend", "insert") or not call.args:
            return
        name = dotted(func.value) or ""
        if name.startswith("self.") and self.eval_is_module(call.args[-1].value):
            cls.appended_modules.setdefault(name[5:], call)

    def record_item_assignment(self, name: str, statement: cst.CSTNode) -> None:
        """``self.experts[name] = nn.Linear(...)`` in ``__init__``: a plain dict of modules."""
        cls = self.scope.module_class
        if cls is None or not self.in_init or not name.startswith("self."):
            return
        if not isinstance(statement, cst.SimpleStatementLine):
            return
        small = statement.body[0]
        value = small.value if isinstance(small, cst.Assign) else None
        if isinstance(value, cst.Call) and self.eval_is_module(value):
            cls.appended_modules.setdefault(name[5:], value)
