"""Evaluating expressions to values, in program order. Calls are in calls.py."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

import libcst as cst

from gpudoc.lint.analysis import api
from gpudoc.lint.analysis.events import (
    AttributeEvent,
    CompareEvent,
    MemberEvent,
    OperationEvent,
    SubscriptEvent,
)
from gpudoc.lint.analysis.flow import GPU_COUNT, join_values
from gpudoc.lint.analysis.model import SemanticModel
from gpudoc.lint.analysis.names import assignments, built_class, dotted, method_named
from gpudoc.lint.analysis.narrowing import narrowed, type_test_arms
from gpudoc.lint.analysis.semantic import ModuleClass
from gpudoc.lint.analysis.values import (
    CHECKPOINT,
    GRAPH,
    PLACED_MODULES,
    SCALAR,
    UNKNOWN,
    Kind,
    Place,
    Value,
    element_of,
    join_places,
    unpack,
)
from gpudoc.lint.visit import children

PARAM_GROUPS = "param-groups:"
"""``Value.source`` of an optimizer's parameter groups (a dict, or a list of them) that all hold
one module's parameters: ``param-groups:model``."""
TENSOR_ATTRS = frozenset(
    {
        "data", "T", "mT", "H", "real", "imag", "grad",
        # the tensors of a Hugging Face model's output, where the model is
        "logits", "loss", "last_hidden_state", "pooler_output", "encoder_last_hidden_state",
        "logits_per_image", "logits_per_text", "text_embeds", "image_embeds", "start_logits",
        "end_logits", "prediction_logits", "pred_boxes", "pred_masks", "predicted_depth",
    }
)  # fmt: skip


def string_value(node: cst.BaseExpression) -> str | None:
    if type(node) is not cst.SimpleString:  # exact type: a miss of isinstance runs Python code
        return None
    raw = node.value
    if raw[:1] in ("'", '"') and "\\" not in raw:
        # a plain literal: its text is between the quotes (libcst's evaluated_value compiles
        # each one with ast.literal_eval, a tenth of the whole walk on real code)
        quote = raw[:3] if raw[:3] in ("'''", '"""') and len(raw) >= 6 else raw[0]
        return raw[len(quote) : -len(quote)]
    text = node.evaluated_value
    return text if isinstance(text, str) else None


def device_move_target(call: cst.BaseExpression) -> cst.BaseExpression | None:
    """Where ``x.to(...)`` / ``x.cuda(...)`` sends ``x``: the device argument (``.cuda()``
    itself when it names none); None for a dtype cast (``x.to(torch.float32)``,
    ``x.to(dtype=...)``) or no move at all."""
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
        return None
    method = call.func.attr.value
    first = call.args[0] if call.args else None
    if method == "cuda":
        return first.value if first is not None and first.keyword is None else call
    if method != "to" or first is None or converts_only(call):
        return None  # `x.to(torch.float32)`, `x.to(dtype=x.dtype)`: a dtype
    if first.keyword is not None and first.keyword.value != "device":
        return None  # `x.to(non_blocking=True)`
    if (dotted(first.value) or "").startswith("torch."):
        return None  # `x.to(torch.float32)`: a dtype
    return first.value


def converts_only(call: cst.Call) -> bool:
    """``x.to(torch.bool)``, ``x.to(dtype=y.dtype)``, ``x.to(x.dtype, non_blocking=True)``: a
    ``.to()`` that names a dtype (``dtype``, ``x.dtype``, ``torch_dtype``, any of torch's) and
    no device."""
    named_dtype = False
    for arg in call.args:
        keyword = arg.keyword.value if arg.keyword is not None else None
        if keyword == "dtype":
            named_dtype = True
            continue
        if keyword in ("non_blocking", "copy", "memory_format"):
            continue
        value = arg.value
        # `x.dtype`, `next(self.parameters()).dtype`, `dtype`; not `next(self.parameters())`
        name = dotted(value) or ""
        attribute = value.attr.value if isinstance(value, cst.Attribute) else name
        if keyword is None and (attribute.endswith("dtype") or name in api.DTYPES):
            named_dtype = True
            continue
        return False
    return named_dtype


class CallResolver(Protocol):
    """What evaluating a call needs (calls.CallEvaluator): declared here, so that the
    evaluator does not depend on call resolution, which depends on it."""

    def eval_call(self, node: cst.Call) -> Value: ...


STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
GRAPH_FIELDS = frozenset(
    {"x", "y", "edge_index", "edge_attr", "edge_weight", "pos", "adj_t", "train_mask",
     "val_mask", "test_mask"}
)  # fmt: skip
"""A graph batch's tensors (PyTorch Geometric's ``Data``): they live where the batch does."""
GRAPH_TENSOR = re.compile(r"_(index|mask|attr|weight)$")
"""More tensors of a PyTorch Geometric graph, by their names (``y_index``, ``edge_label_index``,
``node_mask``)."""
ENCODING_FIELD = re.compile(r"_ids$|_mask$|^pixel_values$|^input_(features|values)$|^labels$")
"""The tensors of a tokenizer's or processor's BatchEncoding, read as attributes."""


class Evaluator:
    """The value of an expression where the walk stands, with the events it emits on the way.
    A call's value may need a function's body walked: ``calls`` (set once the walk's
    collaborators are built, walker.analyze) resolves calls."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.calls: CallResolver

    def eval(self, node: cst.BaseExpression) -> Value:
        self.model.step += 1
        method = _BY_TYPE.get(type(node))
        if method is not None:  # by exact type: libcst's classes are abstract, isinstance slow
            return method(self, node)
        self.eval_children(node)
        return UNKNOWN

    def eval_name(self, node: cst.Name) -> Value:
        return self.model.scope.lookup(node.value) or UNKNOWN

    def eval_call(self, node: cst.Call) -> Value:
        return self.calls.eval_call(node)

    def eval_binary(self, node: cst.BinaryOperation) -> Value:
        if isinstance(node.operator, cst.Multiply):
            left, right = self.eval_repeated(node)
        else:
            left, right = self.eval(node.left), self.eval(node.right)
        if self.model.bus.wants("operation"):
            self.model.emit("operation", OperationEvent(node, left, right))
        if isinstance(node.operator, cst.Modulo) and isinstance(node.left, STRINGS):
            return UNKNOWN  # `"pred %d" % pred`: a str (`%d` reads a tensor through `.item()`)
        if isinstance(node.operator, cst.Modulo) and self._gpu_count(node.right):
            # `rank % torch.cuda.device_count()`: this process's GPU, as an index
            self.model.flags.per_rank_device = True
            return Value(Kind.DEVICE)
        moved = [side for side in (left, right) if side.kind is Kind.UNKNOWN]
        if any(side.place is Place.DEVICE for side in moved) and not (
            left.is_tensorish or right.is_tensorish
        ):
            # `data["images"] / 255` of a checkpoint loaded to the GPU: only tensors are there
            return Value(Kind.TENSOR, Place.DEVICE)
        return self.combine([left, right])

    def eval_repeated(self, node: cst.BinaryOperation) -> tuple[Value, Value]:
        """``(torch.device("cuda"),) * torch.cuda.is_available()``: a sequence repeated by an
        availability test holds its items only where CUDA is, as an ``if`` arm would."""
        model = self.model
        sequences = (cst.Tuple, cst.List)
        guarded = [
            isinstance(side, sequences) and self._availability_test(other)
            for side, other in ((node.left, node.right), (node.right, node.left))
        ]
        values = []
        for side, guard in zip((node.left, node.right), guarded, strict=True):
            model.guard_depth += int(guard)
            model.gpu_path += int(guard)
            values.append(self.eval(side))
            model.guard_depth -= int(guard)
            model.gpu_path -= int(guard)
        return values[0], values[1]

    def _availability_test(self, node: cst.BaseExpression) -> bool:
        """``torch.cuda.is_available()``, also as ``int(...)`` or ``bool(...)``; not a count of
        GPUs (``x * args.n_gpu`` scales by it)."""
        if isinstance(node, cst.Call) and dotted(node.func) in ("int", "bool") and node.args:
            node = node.args[0].value
        if not isinstance(node, cst.Call):
            return False
        return self.model.imports.qualify(node.func) in api.AVAILABILITY_TESTS

    def _gpu_count(self, node: cst.BaseExpression) -> bool:
        """``torch.cuda.device_count()`` (also through a name bound to it: ``n_gpus``)."""
        if isinstance(node, cst.Call):
            return self.model.imports.qualify(node.func) == "torch.cuda.device_count"
        return GPU_COUNT.match((dotted(node) or "").rsplit(".", 1)[-1]) is not None

    def eval_comparison(self, node: cst.Comparison) -> Value:
        values = [self.eval(node.left)]
        values += [self.eval(target.comparator) for target in node.comparisons]
        if self.model.bus.wants("compare"):
            self.model.emit("compare", CompareEvent(node, tuple(values)))
        return self.combine(values)

    def eval_unary(self, node: cst.UnaryOperation) -> Value:
        return self.eval(node.expression)

    def eval_boolean(self, node: cst.BooleanOperation) -> Value:
        self.eval(node.left)
        return self.eval(node.right)

    def eval_children(self, node: cst.CSTNode) -> None:
        for child in children(node):
            if isinstance(child, cst.BaseExpression):
                self.eval(child)
            elif isinstance(child, cst.Arg | cst.Element | cst.DictElement | cst.StarredElement):
                self.eval_children(child)
            elif isinstance(child, cst.FormattedStringExpression):
                self.eval(child.expression)  # f"{torch.cuda.device_count()} GPUs" calls it

    def combine(self, values: list[Value]) -> Value:
        tensors = [value for value in values if value.is_tensorish]
        if not tensors:
            return UNKNOWN
        places = [value.place for value in tensors]
        places += [value.place for value in values if value.kind is Kind.MODULE]
        return Value(Kind.TENSOR, join_places(places))

    def submodule(self, held: Value) -> Value:
        """``self.encoder`` in a module class's method: it moves with its parent, so it is
        where the instance is (when walked for a call on a placed one), else anywhere; an
        alias (``G_encoder = self.encoder``) keeps that."""
        if self.model.scope.module_class is None or held.place is not Place.HOST:
            return held
        owner = self.model.class_scope()
        place = owner.instance_place if owner is not None else None
        return held.with_place(place or Place.UNKNOWN)

    def placed_member(self, module: Value, attr: str) -> Value | None:
        """``model.encoder`` of ``model = Net().to(device)``: a weighted submodule that the
        file's class builds in ``__init__`` moved with its parent, so it is on the device."""
        if module.kind is not Kind.MODULE or module.place is not Place.DEVICE or module.wrapper:
            return None
        name = built_class(module.origin) or ""
        scope = self.model.class_scopes.get(name) or self.model.foreign_module_scopes.get(name)
        held = scope.env.get(f"self.{attr}") if scope is not None else None
        if held is None:
            # a class of another project file, not walked: read what its `__init__` builds
            cls = self.model.local_class(name)
            if isinstance(cls, ModuleClass) and builds_weighted_layer(cls.node, attr):
                return Value(Kind.MODULE, Place.DEVICE, weighted=True)
        if held is None or held.kind is not Kind.MODULE or not held.weighted:
            return None
        return Value(Kind.MODULE, Place.DEVICE, weighted=True, origin=held.origin)

    def eval_attribute(self, node: cst.Attribute) -> Value:
        name = dotted(node)
        if name is not None:
            if self.model.bus.wants("member"):
                self.model.emit("member", MemberEvent(node, name))
            known = self.model.scope.lookup(name)
            if known is not None:
                if known.kind is Kind.MODULE and name.startswith("self."):
                    return self.submodule(known)
                return known
            qualified = self.model.imports.qualify(node)
            if qualified is not None:
                return _legacy_type(qualified)
        base = self.eval(node.value)
        if self.model.bus.wants("attribute"):
            self.model.emit("attribute", AttributeEvent(node, base))
        attr = node.attr.value
        if attr == "device":
            return Value(Kind.DEVICE, base.place, cpu_device=base.place is Place.HOST)
        if attr == "type" and base.kind is Kind.DEVICE:
            return base  # `x.to(p.device.type)` goes where `p` is, as `.to(p.device)` does
        if base.is_tensorish and attr in TENSOR_ATTRS:
            return Value(Kind.TENSOR, base.place, by_name=base.by_name)
        if base.kind is Kind.MODULE and attr == "module":
            return base
        if base.kind is Kind.MODULE and base.weighted and attr in ("weight", "bias"):
            return Value(Kind.TENSOR, base.place)  # `self.embedding.weight`: where its module is
        member = self.placed_member(base, attr)
        if member is not None:
            return member
        if base.source == PLACED_MODULES:
            return base  # `nets.diffusion`, and its own submodules: moved with it
        if base.kind is Kind.BATCH and base.inplace_to and ENCODING_FIELD.search(attr):
            return Value(Kind.TENSOR, base.place)  # `tokenizer(text, ...).input_ids`
        if base.kind is Kind.BATCH and base.place is not Place.UNKNOWN and attr in GRAPH_FIELDS:
            return Value(Kind.TENSOR, base.place)  # `batch.x` of a PyG batch: where `batch` is
        if base.source == GRAPH and base.place is not Place.UNKNOWN and GRAPH_TENSOR.search(attr):
            return Value(Kind.TENSOR, base.place)  # `data["author"].y_index`
        return UNKNOWN

    def eval_subscript(self, node: cst.Subscript) -> Value:
        base = self.eval(node.value)
        indices = tuple(
            self.eval(element.slice.value)
            for element in node.slice
            if isinstance(element.slice, cst.Index)
        )
        if self.model.bus.wants("subscript"):
            self.model.emit("subscript", SubscriptEvent(node, base, indices))
        if _legacy_scalar_read(node):
            return SCALAR
        if base.source == GRAPH:
            return base  # `data["author"]` of a HeteroData: its node type's store, moved with it
        if base.items is not None and len(node.slice) == 1:
            index = node.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
                position = int(index.value.value, 0)
                if 0 <= position < len(base.items):
                    return base.items[position]
        one = len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)
        if base.kind is Kind.SCALAR and base.items is None and one:
            return SCALAR  # `L = Z.size()[0]`: an element of a size is a number (a slice: sizes)
        if base.is_tensorish:
            # `ranks[r, 0]`: integers only pick an element (a row of a matrix), as iterating
            # does: a 0-dim tensor for the last dimension, which indexes like an int
            row = len(indices) == len(node.slice) and all(
                isinstance(element.slice, cst.Index)
                and not index.is_tensorish
                and _integer_like(element.slice.value)
                for index, element in zip(indices, node.slice, strict=True)
            )
            return Value(Kind.TENSOR, base.place, by_name=base.by_name, row=row)
        if base.source == PLACED_MODULES and one:
            return base  # `nets["generator"]` of a dict of networks each moved in place
        if base.kind is Kind.LOADER and base.place is not Place.UNKNOWN and one:
            if base.element is not None and base.element.inplace_to:
                return base.element  # `data = dataset[0]` of PyTorch Geometric's: one graph
            # `image, label = test_set[i]`: one sample, where the data set keeps them
            return Value(Kind.BATCH, base.place, source=base.source)
        if base.source == "checkpoint" and base.kind is Kind.UNKNOWN:
            # `ckpt["model"]`: loaded where the whole checkpoint was
            return base if base.place is Place.DEVICE else CHECKPOINT
        if base.kind is Kind.UNKNOWN and base.place is Place.DEVICE:
            # `test_y[:10]` of `test_y = data.test_labels.cuda()`: part of what was moved
            return Value(place=Place.DEVICE)
        return UNKNOWN

    def eval_sequence(self, node: cst.Tuple | cst.List) -> Value:
        items = []
        for element in node.elements:
            value = self.eval(element.value)
            items.append(UNKNOWN if isinstance(element, cst.StarredElement) else value)
        tensors = [item for item in items if item.is_tensorish]
        if tensors and len(tensors) == len(items):
            return Value(Kind.BATCH, join_places([t.place for t in tensors]), items=tuple(items))
        sources = {item.source for item in items}
        if len(sources) == 1 and sources.pop().startswith(PARAM_GROUPS):
            return Value(source=items[0].source, items=tuple(items))  # groups of one module
        return Value(items=tuple(items))

    def eval_dict(self, node: cst.Dict) -> Value:
        values = []
        group: Value | None = None
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.eval(element.key)
            values.append(self.eval(element.value))
            if isinstance(element, cst.DictElement) and string_value(element.key) == "params":
                group = self.param_group(element.value, values[-1])
        tensors = [value for value in values if value.is_tensorish]
        if tensors and len(tensors) == len(values):
            return Value(Kind.BATCH, join_places([t.place for t in tensors]))
        return group or UNKNOWN

    def param_group(self, params: cst.BaseExpression, value: Value) -> Value | None:
        """``{"params": model.parameters(), "lr": lr}``, an optimizer's parameter group: the
        parameters of the module that holds them (``model.head.parameters()``, a method of the
        model, ``model.get_basenet_params()``, or ``model.weight`` belong to ``model``, moved
        with it). A dict still, whose ``source`` names that module."""
        if value.kind is Kind.PARAMS:
            return Value(source=PARAM_GROUPS + value.source)
        if isinstance(params, cst.Call) and isinstance(params.func, cst.Attribute):
            if "param" not in params.func.attr.value:
                return None
            params = params.func.value
        parts = (dotted(params) or "").split(".")
        for end in range(1, len(parts) + 1):
            held = self.model.scope.lookup(".".join(parts[:end])) if parts[0] else None
            if held is not None and held.kind is Kind.MODULE:
                return Value(source=PARAM_GROUPS + ".".join(parts[:end]))
        return None

    def eval_yield(self, node: cst.Yield) -> Value:
        """``yield batch``: what the generator hands its caller's loop (bodies.walk_function
        joins them); the expression's own value is what the caller sends in, unknown."""
        if isinstance(node.value, cst.From):
            yielded = element_of(self.eval(node.value.item))
        else:
            yielded = self.eval(node.value) if node.value is not None else UNKNOWN
        if self.model.yields:
            self.model.yields[-1].append(yielded)
        return UNKNOWN

    def eval_string(self, node: cst.BaseExpression) -> Value:
        text = string_value(node)
        if text is None:
            self.eval_children(node)
            return UNKNOWN
        if api.DEVICE_LITERAL.match(text):
            return Value(Kind.DEVICE)
        if api.CPU_LITERAL.match(text):
            return Value(Kind.DEVICE, cpu_device=True)
        return UNKNOWN

    def eval_ifexp(self, node: cst.IfExp) -> Value:
        self.eval(node.test)
        polarity = self.model.polarity(node.test)
        guarded = polarity is not None
        self.model.guard_depth += guarded
        self.model.cpu_path += polarity == "cpu"
        self.model.gpu_path += polarity == "gpu"
        when_true, when_false = type_test_arms(node.test, self.model.qualify)
        env = self.model.scope.env
        with narrowed(env, when_true):
            body = self.eval(node.body)
        self.model.cpu_path += (polarity == "gpu") - (polarity == "cpu")
        self.model.gpu_path += (polarity == "cpu") - (polarity == "gpu")
        with narrowed(env, when_false):
            orelse = self.eval(node.orelse)
        self.model.cpu_path -= polarity == "gpu"
        self.model.gpu_path -= polarity == "cpu"
        self.model.guard_depth -= guarded
        if body.kind is Kind.DEVICE or orelse.kind is Kind.DEVICE:
            return Value(Kind.DEVICE, cpu_device=body.cpu_device and orelse.cpu_device)
        if polarity == "cpu":
            body, orelse = orelse, body
        return join_values(body, orelse, self.model.join_after(node.test)) or UNKNOWN

    def eval_comprehension(
        self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp
    ) -> Value:
        saved: dict[str, Value | None] = {}
        clause: cst.CompFor | None = node.for_in
        while clause is not None:
            element = element_of(self.eval(clause.iter))
            for name, value in self.target_values(clause.target, element):
                saved.setdefault(name, self.model.scope.env.get(name))
                self.model.scope.env[name] = value
            for condition in clause.ifs:
                self.eval(condition.test)
            clause = clause.inner_for_in
        if isinstance(node, cst.DictComp):
            self.eval(node.key)
            result = self.eval(node.value)
        else:
            result = self.eval(node.elt)
        for name, old in saved.items():
            if old is None:
                self.model.scope.env.pop(name, None)
            else:
                self.model.scope.env[name] = old
        if result.is_tensorish or result.place is Place.DEVICE:
            return Value(Kind.BATCH, result.place)
        return UNKNOWN

    def target_values(self, target: cst.BaseExpression, value: Value) -> list[tuple[str, Value]]:
        """The (name, value) pairs that binding ``value`` to ``target`` produces (attributes
        too: ``self.a, self.b = self.a.cuda(), self.b.cuda()``)."""
        if isinstance(target, cst.Name | cst.Attribute):
            name = dotted(target)
            return [(name, value)] if name is not None else []
        if isinstance(target, cst.Tuple | cst.List):
            pairs: list[tuple[str, Value]] = []
            parts = unpack(value, len(target.elements))
            for element, part in zip(target.elements, parts, strict=True):
                if isinstance(element, cst.StarredElement):
                    part = UNKNOWN
                pairs += self.target_values(element.value, part)
            return pairs
        return []

    def eval_args(self, node: cst.Call, receiver: Value | None = None) -> list[Value]:
        values = [self.eval(arg.value) for arg in node.args]
        if self.model.bus.wants("call"):  # for the call event, without evaluating anything twice
            self.model.call_operands.setdefault(node, []).append((tuple(values), receiver))
        return values


def _scalar(evaluator: Evaluator, node: cst.BaseExpression) -> Value:
    return SCALAR


def _unknown(evaluator: Evaluator, node: cst.BaseExpression) -> Value:
    return UNKNOWN


_BY_TYPE: dict[type[cst.CSTNode], Callable[[Evaluator, Any], Value]] = {
    cst.Name: Evaluator.eval_name,
    cst.Call: Evaluator.eval_call,
    cst.Attribute: Evaluator.eval_attribute,
    cst.Subscript: Evaluator.eval_subscript,
    cst.BinaryOperation: Evaluator.eval_binary,
    cst.Comparison: Evaluator.eval_comparison,
    cst.UnaryOperation: Evaluator.eval_unary,
    cst.BooleanOperation: Evaluator.eval_boolean,
    **dict.fromkeys([cst.Tuple, cst.List], Evaluator.eval_sequence),
    cst.IfExp: Evaluator.eval_ifexp,
    **dict.fromkeys(
        [cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp], Evaluator.eval_comprehension
    ),
    **dict.fromkeys([cst.Integer, cst.Float, cst.Imaginary], _scalar),
    **dict.fromkeys(
        [cst.SimpleString, cst.ConcatenatedString, cst.FormattedString], Evaluator.eval_string
    ),
    cst.Dict: Evaluator.eval_dict,
    cst.Yield: Evaluator.eval_yield,
    cst.Lambda: _unknown,
}
"""What evaluates each kind of expression; any other is evaluated through its children."""


def _legacy_type(qualified: str) -> Value:
    """``torch.cuda.FloatTensor`` as a value (``dtype = torch.cuda.FloatTensor if cuda else
    torch.FloatTensor``, then ``x.type(dtype)``): a tensor type on the GPU or on the host."""
    head, _, last = qualified.rpartition(".")
    if last not in api.LEGACY_TENSOR_TYPES:
        return UNKNOWN
    if head == "torch.cuda" and last != "Tensor":
        return Value(Kind.TYPENAME, Place.DEVICE)
    if head == "torch" and last != "Tensor":
        return Value(Kind.TYPENAME, Place.HOST)
    return UNKNOWN


def _legacy_scalar_read(node: cst.Subscript) -> bool:
    """``loss.data[0]``: PyTorch 0.3's way to read a number (0.4 made it ``loss.item()``), in
    code and notebooks of that era. Treating it as a device tensor reports a device bug its
    author never had; on today's PyTorch it fails on any device (``invalid index of a 0-dim
    tensor``), which is no placement bug either."""
    value = node.value
    if not (isinstance(value, cst.Attribute) and value.attr.value == "data"):
        return False
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    return isinstance(node.slice[0].slice.value, cst.Integer)


def _integer_like(expr: cst.BaseExpression) -> bool:
    """An index that picks one position: a number or a plain name (``0``, ``-1``, ``r``), not
    ``None``, ``...``, a slice or an expression that may build a tensor."""
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    if isinstance(expr, cst.Integer):
        return True
    return isinstance(expr, cst.Name) and expr.value not in ("None", "True", "False")


CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})


def builds_weighted_layer(node: cst.ClassDef, attr: str) -> bool:
    """``__init__`` assigns ``self.<attr>`` a layer with weights (``nn.Linear(...)``) or a
    container of one (``nn.Sequential(nn.Conv2d(...), nn.ReLU())``), read from the text."""
    init = method_named(node, "__init__")
    if init is None or not isinstance(init.body, cst.IndentedBlock):
        return False
    for statement in init.body.body:
        for target, value in assignments(statement):
            if dotted(target) == f"self.{attr}" and isinstance(value, cst.Call):
                return _weighted_layer(value)
    return False


def _weighted_layer(call: cst.Call) -> bool:
    last = (dotted(call.func) or "").rpartition(".")[2]
    if last in api.WEIGHTED_LAYERS:
        return True
    return last in CONTAINERS and any(
        isinstance(arg.value, cst.Call) and _weighted_layer(arg.value) for arg in call.args
    )
